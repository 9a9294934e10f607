/*
 * The built-in model constructors of the C ABI (bmrm_problem_new_multiclass,
 * _multiclass_csr, _chain_dense, _chain_sparse) and their prediction
 * helpers: each solves to the optimum the callback or dense twin reaches,
 * and every bad input gets its status, a message and an untouched `out`.
 * Run by tests/ffi.rs and, under valgrind, by scripts/test.sh. Exits 0 when
 * every check passed.
 */
#include "common.h"

static double sentinel_storage[4];
#define SENTINEL ((bmrm_problem *)(void *)sentinel_storage)

/* Solves p with algorithm a to tol_rel 1e-7 into w (zero start). */
static bmrm_info solve(const bmrm_problem *p, bmrm_algorithm a, size_t parts, double lambda,
                       double *w, size_t dim) {
    bmrm_settings s = bmrm_settings_default(a);
    s.lambda = lambda;
    s.tol_rel = 1e-7;
    s.num_parts = parts;
    bmrm_info info;
    memset(&info, 0, sizeof info);
    bmrm_solver *solver = NULL;
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_OK);
    if (solver == NULL) return info;
    memset(w, 0, dim * sizeof(double));
    CHECK_STATUS(bmrm_solver_run(solver, w, dim), BMRM_OK);
    CHECK_STATUS(bmrm_solver_info(solver, &info), BMRM_OK);
    CHECK(info.exit == BMRM_EXIT_CONVERGED_REL, "exit %d", (int)info.exit);
    bmrm_solver_free(solver);
    return info;
}

/* Two runs on the same problem: each lower bound below the other's primal,
 * the primals within the gaps, w within the strong-convexity radius. */
static void check_same_optimum(const char *what, bmrm_info a, const double *wa, bmrm_info b,
                               const double *wb, size_t dim, double lambda) {
    double tol = (a.gap > b.gap ? a.gap : b.gap) + 1e-12;
    CHECK(a.lower_bound <= b.primal + 1e-12 && b.lower_bound <= a.primal + 1e-12,
          "%s: bounds %.12g %.12g vs primals %.12g %.12g", what, a.lower_bound, b.lower_bound,
          a.primal, b.primal);
    CHECK(fabs(a.primal - b.primal) <= tol, "%s: F %.12g vs %.12g", what, a.primal, b.primal);
    double d2 = 0.0;
    for (size_t j = 0; j < dim; j++) d2 += (wa[j] - wb[j]) * (wa[j] - wb[j]);
    double r = sqrt(2.0 * a.gap / lambda) + sqrt(2.0 * b.gap / lambda) + 1e-9;
    CHECK(sqrt(d2) <= r, "%s: ||w_a - w_b|| = %g > %g", what, sqrt(d2), r);
    printf("MODEL %s F = %.10f / %.10f\n", what, a.primal, b.primal);
}

/* Dense float rows (no bias column) and CSR arrays built from them. */
typedef struct {
    size_t rows, cols, nnz;
    size_t *indptr;
    uint32_t *indices;
    float *values;
} csr_t;

static csr_t csr_from_dense(const float *x, size_t rows, size_t cols) {
    csr_t c = {rows, cols, 0, malloc((rows + 1) * sizeof(size_t)),
               malloc(rows * cols * sizeof(uint32_t) + 1), malloc(rows * cols * sizeof(float) + 1)};
    c.indptr[0] = 0;
    for (size_t i = 0; i < rows; i++) {
        for (size_t j = 0; j < cols; j++) {
            float v = x[i * cols + j];
            if (v != 0.0f) {
                c.indices[c.nnz] = (uint32_t)j;
                c.values[c.nnz] = v;
                c.nnz++;
            }
        }
        c.indptr[i + 1] = c.nnz;
    }
    return c;
}

static void csr_free(csr_t *c) {
    free(c->indptr);
    free(c->indices);
    free(c->values);
}

/* ---------------------------------------------------------------------- */

static void test_multiclass(void) {
    const double lambda = 0.01;
    mc_data data = mc_make(120, 6, 3, 7);
    size_t m = data.m, d = data.d - 1, k = data.k, dim = data.k * data.d;
    /* Round the callback's data to float and zero some features, so that the
     * built-in (float) model is the same problem and CSR has zeros to skip. */
    float *x = malloc(m * d * sizeof(float));
    uint32_t *y = malloc(m * sizeof(uint32_t));
    for (size_t i = 0; i < m; i++) {
        y[i] = (uint32_t)data.y[i];
        for (size_t j = 0; j < d; j++) {
            float v = (i + j) % 4 == 0 ? 0.0f : (float)data.x[i * data.d + j];
            x[i * d + j] = v;
            data.x[i * data.d + j] = v;
        }
    }
    double *w_cb = malloc(dim * sizeof(double));
    double *w_dense = malloc(dim * sizeof(double));
    double *w_csr = malloc(dim * sizeof(double));

    bmrm_problem *cb = NULL, *dense = SENTINEL, *sparse = SENTINEL, *ind = SENTINEL;
    CHECK_STATUS(bmrm_problem_new(dim, &cb), BMRM_OK);
    CHECK_STATUS(bmrm_problem_set_max_oracle(cb, m, mc_oracle, &data, true), BMRM_OK);
    CHECK_STATUS(bmrm_problem_new_multiclass(x, m, d, y, k, true, &dense), BMRM_OK);
    size_t got_dim = 0;
    CHECK_STATUS(bmrm_problem_dim(dense, &got_dim), BMRM_OK);
    CHECK(got_dim == dim, "dim %zu", got_dim);
    csr_t c = csr_from_dense(x, m, d);
    CHECK_STATUS(bmrm_problem_new_multiclass_csr(c.indptr, c.indices, c.values, m, d, y, k, true,
                                                 &sparse),
                 BMRM_OK);
    CHECK_STATUS(bmrm_problem_new_multiclass_csr(c.indptr, c.indices, NULL, m, d, y, k, false, &ind),
                 BMRM_OK);
    CHECK_STATUS(bmrm_problem_dim(ind, &got_dim), BMRM_OK);
    CHECK(got_dim == k * d, "indicator dim %zu", got_dim);

    bmrm_info i_cb = solve(cb, BMRM_ALGORITHM_BMRM, 1, lambda, w_cb, dim);
    bmrm_info i_dense = solve(dense, BMRM_ALGORITHM_BMRM, 1, lambda, w_dense, dim);
    bmrm_info i_csr = solve(sparse, BMRM_ALGORITHM_PROX_P_BMRM, 4, lambda, w_csr, dim);
    check_same_optimum("multiclass callback/dense", i_cb, w_cb, i_dense, w_dense, dim, lambda);
    check_same_optimum("multiclass dense/csr", i_dense, w_dense, i_csr, w_csr, dim, lambda);

    /* Predictions: the plain argmax, as the callback computes it. */
    uint32_t *pred = malloc(m * sizeof(uint32_t));
    CHECK_STATUS(bmrm_multiclass_predict(dense, w_dense, dim, pred, m), BMRM_OK);
    size_t same = 0, wrong = 0;
    for (size_t i = 0; i < m; i++) {
        const double *xi = data.x + i * data.d;
        size_t best = 0;
        for (size_t cl = 1; cl < k; cl++)
            if (mc_score(&data, w_dense, cl, xi) > mc_score(&data, w_dense, best, xi)) best = cl;
        same += pred[i] == best;
        wrong += pred[i] != y[i];
    }
    CHECK(same == m, "%zu of %zu predictions agree", same, m);
    printf("MODEL multiclass training error %.4f\n", (double)wrong / (double)m);
    uint32_t *pred2 = malloc(m * sizeof(uint32_t));
    CHECK_STATUS(bmrm_multiclass_predict(sparse, w_dense, dim, pred2, m), BMRM_OK);
    CHECK(memcmp(pred, pred2, m * sizeof(uint32_t)) == 0, "csr predictions");

    /* Prediction errors; the labels are left alone on failure. */
    pred[0] = 77;
    CHECK_STATUS(bmrm_multiclass_predict(NULL, w_dense, dim, pred, m), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_multiclass_predict(dense, NULL, dim, pred, m), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_multiclass_predict(dense, w_dense, dim, NULL, m), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_multiclass_predict(dense, w_dense, dim - 1, pred, m),
                 BMRM_ERROR_DIMENSION_MISMATCH);
    CHECK_STATUS(bmrm_multiclass_predict(dense, w_dense, dim, pred, m - 1),
                 BMRM_ERROR_DIMENSION_MISMATCH);
    CHECK(last_error_has("bmrm_multiclass_predict") && last_error_has("m = 119"), "'%s'",
          bmrm_last_error());
    CHECK_STATUS(bmrm_multiclass_predict(cb, w_dense, dim, pred, m), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(bmrm_chain_predict(dense, w_dense, dim, pred, m), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("not a built-in chain"), "'%s'", bmrm_last_error());
    CHECK(pred[0] == 77, "labels written on failure");
    /* A callback replacing the oracle makes it a plain problem again. */
    CHECK_STATUS(bmrm_problem_set_max_oracle(ind, m, mc_oracle, &data, true), BMRM_OK);
    CHECK_STATUS(bmrm_multiclass_predict(ind, w_dense, k * d, pred, m),
                 BMRM_ERROR_INVALID_ARGUMENT);

    /* Constructor errors: status, message, `out` untouched. */
    bmrm_problem *p = SENTINEL;
    CHECK_STATUS(bmrm_problem_new_multiclass(NULL, m, d, y, k, true, &p), BMRM_ERROR_NULL_ARGUMENT);
    CHECK(last_error_has("x is NULL"), "'%s'", bmrm_last_error());
    CHECK_STATUS(bmrm_problem_new_multiclass(x, m, d, NULL, k, true, &p), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_problem_new_multiclass(x, m, d, y, k, true, NULL), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_problem_new_multiclass(x, 0, d, y, k, true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(bmrm_problem_new_multiclass(x, m, 0, y, k, true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(bmrm_problem_new_multiclass(x, m, d, y, 1, true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("num_classes"), "'%s'", bmrm_last_error());
    CHECK_STATUS(bmrm_problem_new_multiclass(x, SIZE_MAX / 2, 4, y, k, true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    y[5] = 3;
    CHECK_STATUS(bmrm_problem_new_multiclass(x, m, d, y, k, true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("label 3 of example 5"), "'%s'", bmrm_last_error());
    CHECK_STATUS(bmrm_problem_new_multiclass_csr(c.indptr, c.indices, c.values, m, d, y, k, true,
                                                 &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    y[5] = (uint32_t)data.y[5];
    float saved = x[7];
    x[7] = NAN;
    CHECK_STATUS(bmrm_problem_new_multiclass(x, m, d, y, k, true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("NaN"), "'%s'", bmrm_last_error());
    x[7] = saved;
    CHECK_STATUS(bmrm_problem_new_multiclass_csr(NULL, c.indices, c.values, m, d, y, k, true, &p),
                 BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_problem_new_multiclass_csr(c.indptr, NULL, c.values, m, d, y, k, true, &p),
                 BMRM_ERROR_NULL_ARGUMENT);
    CHECK(last_error_has("indices is NULL"), "'%s'", bmrm_last_error());
    c.indices[3] = (uint32_t)d;
    CHECK_STATUS(bmrm_problem_new_multiclass_csr(c.indptr, c.indices, c.values, m, d, y, k, true,
                                                 &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("out of range"), "'%s'", bmrm_last_error());
    c.indices[3] = 0;
    c.values[2] = INFINITY;
    CHECK_STATUS(bmrm_problem_new_multiclass_csr(c.indptr, c.indices, c.values, m, d, y, k, true,
                                                 &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("not finite"), "'%s'", bmrm_last_error());
    size_t saved_ptr = c.indptr[4];
    c.indptr[4] = c.indptr[3] - 1;
    CHECK_STATUS(bmrm_problem_new_multiclass_csr(c.indptr, c.indices, c.values, m, d, y, k, true,
                                                 &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("indptr decreases"), "'%s'", bmrm_last_error());
    c.indptr[4] = saved_ptr;
    CHECK(p == SENTINEL, "out written on failure");
    CHECK_STATUS(bmrm_problem_dim(NULL, &got_dim), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_problem_dim(dense, NULL), BMRM_ERROR_NULL_ARGUMENT);

    bmrm_problem_free(cb);
    bmrm_problem_free(dense);
    bmrm_problem_free(sparse);
    bmrm_problem_free(ind);
    csr_free(&c);
    free(x);
    free(y);
    free(w_cb);
    free(w_dense);
    free(w_csr);
    free(pred);
    free(pred2);
    mc_free(&data);
}

/* ---------------------------------------------------------------------- */

#define CK 3 /* labels */
#define CD 4 /* features per token */
#define CM 40 /* sequences */

static void test_chain(void) {
    const double lambda = 0.01;
    lcg g = {2024};
    double means[CK][CD];
    for (int c = 0; c < CK; c++)
        for (int j = 0; j < CD; j++) means[c][j] = 2.0 * lcg_next(&g) - 1.0;
    size_t lengths[CM], tokens = 0;
    for (int i = 0; i < CM; i++) {
        lengths[i] = 2 + (size_t)(lcg_next(&g) * 5.0);
        tokens += lengths[i];
    }
    float *x = malloc(tokens * CD * sizeof(float));
    uint32_t *y = malloc(tokens * sizeof(uint32_t));
    size_t t = 0;
    for (int i = 0; i < CM; i++) {
        uint32_t label = (uint32_t)(lcg_next(&g) * CK);
        for (size_t p = 0; p < lengths[i]; p++, t++) {
            y[t] = label;
            for (int j = 0; j < CD; j++) {
                double v = means[label][j] + (2.0 * lcg_next(&g) - 1.0);
                x[t * CD + j] = (t + (size_t)j) % 5 == 0 ? 0.0f : (float)v;
            }
            label = lcg_next(&g) < 0.7 ? (label + 1) % CK : (uint32_t)(lcg_next(&g) * CK);
        }
    }
    const size_t dim = CK * (CD + 1) + CK * CK + 2 * CK;
    bmrm_problem *dense = SENTINEL, *sparse = SENTINEL;
    CHECK_STATUS(bmrm_problem_new_chain_dense(x, CD, lengths, CM, y, CK, true, &dense), BMRM_OK);
    size_t got_dim = 0;
    CHECK_STATUS(bmrm_problem_dim(dense, &got_dim), BMRM_OK);
    CHECK(got_dim == dim, "chain dim %zu, want %zu", got_dim, dim);
    csr_t c = csr_from_dense(x, tokens, CD);
    CHECK_STATUS(bmrm_problem_new_chain_sparse(c.indptr, c.indices, c.values, CD, lengths, CM, y,
                                               CK, true, &sparse),
                 BMRM_OK);
    double *w1 = malloc(dim * sizeof(double)), *w2 = malloc(dim * sizeof(double));
    double *w3 = malloc(dim * sizeof(double));
    bmrm_info a = solve(dense, BMRM_ALGORITHM_BMRM, 1, lambda, w1, dim);
    bmrm_info b = solve(dense, BMRM_ALGORITHM_P_BMRM, 4, lambda, w2, dim);
    check_same_optimum("chain BMRM/P-BMRM", a, w1, b, w2, dim, lambda);
    /* The sparse model places emission weights feature-major: compare F only. */
    bmrm_info s = solve(sparse, BMRM_ALGORITHM_PROX_BMRM, 1, lambda, w3, dim);
    CHECK(fabs(s.primal - a.primal) <= (s.gap > a.gap ? s.gap : a.gap) + 1e-12,
          "chain dense/sparse F %.12g vs %.12g", a.primal, s.primal);
    CHECK(s.lower_bound <= a.primal + 1e-12 && a.lower_bound <= s.primal + 1e-12, "bounds");

    uint32_t *pred = malloc(tokens * sizeof(uint32_t));
    CHECK_STATUS(bmrm_chain_predict(dense, w1, dim, pred, tokens), BMRM_OK);
    size_t wrong = 0;
    for (size_t i = 0; i < tokens; i++) wrong += pred[i] != y[i];
    printf("MODEL chain training token error %.4f\n", (double)wrong / (double)tokens);
    CHECK((double)wrong / (double)tokens < 0.3, "token error %zu / %zu", wrong, tokens);
    uint32_t *pred2 = malloc(tokens * sizeof(uint32_t));
    CHECK_STATUS(bmrm_chain_predict(sparse, w3, dim, pred2, tokens), BMRM_OK);
    size_t differ = 0;
    for (size_t i = 0; i < tokens; i++) differ += pred[i] != pred2[i];
    CHECK(differ <= tokens / 20, "dense and sparse predictions differ at %zu tokens", differ);
    pred[0] = 99;
    CHECK_STATUS(bmrm_chain_predict(dense, w1, dim, pred, tokens + 1),
                 BMRM_ERROR_DIMENSION_MISMATCH);
    CHECK_STATUS(bmrm_chain_predict(dense, w1, dim + 1, pred, tokens),
                 BMRM_ERROR_DIMENSION_MISMATCH);
    CHECK_STATUS(bmrm_chain_predict(NULL, w1, dim, pred, tokens), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_chain_predict(dense, NULL, dim, pred, tokens), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_multiclass_predict(dense, w1, dim, pred, CM), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(pred[0] == 99, "labels written on failure");

    /* Constructor errors. */
    bmrm_problem *p = SENTINEL;
    CHECK_STATUS(bmrm_problem_new_chain_dense(NULL, CD, lengths, CM, y, CK, true, &p),
                 BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_problem_new_chain_dense(x, CD, NULL, CM, y, CK, true, &p),
                 BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_problem_new_chain_dense(x, CD, lengths, CM, NULL, CK, true, &p),
                 BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_problem_new_chain_dense(x, CD, lengths, CM, y, CK, true, NULL),
                 BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_problem_new_chain_dense(x, CD, lengths, 0, y, CK, true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("m (the number of sequences)"), "'%s'", bmrm_last_error());
    CHECK_STATUS(bmrm_problem_new_chain_dense(x, 0, lengths, CM, y, CK, true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(bmrm_problem_new_chain_dense(x, CD, lengths, CM, y, 1, true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    size_t saved_len = lengths[3];
    lengths[3] = 0;
    CHECK_STATUS(bmrm_problem_new_chain_dense(x, CD, lengths, CM, y, CK, true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("sequence 3 has length 0"), "'%s'", bmrm_last_error());
    lengths[3] = saved_len;
    y[10] = CK;
    CHECK_STATUS(bmrm_problem_new_chain_dense(x, CD, lengths, CM, y, CK, true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("label 3 of token 10"), "'%s'", bmrm_last_error());
    CHECK_STATUS(bmrm_problem_new_chain_sparse(c.indptr, c.indices, c.values, CD, lengths, CM, y,
                                               CK, true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    y[10] = 0;
    float saved = x[9];
    x[9] = NAN;
    CHECK_STATUS(bmrm_problem_new_chain_dense(x, CD, lengths, CM, y, CK, true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("feature 1 of token 2 is NaN"), "'%s'", bmrm_last_error());
    x[9] = saved;
    CHECK_STATUS(bmrm_problem_new_chain_sparse(NULL, c.indices, c.values, CD, lengths, CM, y, CK,
                                               true, &p),
                 BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_problem_new_chain_sparse(c.indptr, c.indices, c.values, CD, NULL, CM, y, CK,
                                               true, &p),
                 BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_problem_new_chain_sparse(c.indptr, c.indices, c.values, CD, lengths, 0, y,
                                               CK, true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(bmrm_problem_new_chain_sparse(c.indptr, c.indices, c.values, CD - 1, lengths, CM,
                                               y, CK, true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("out of range 0..3"), "'%s'", bmrm_last_error());
    c.values[0] = NAN;
    CHECK_STATUS(bmrm_problem_new_chain_sparse(c.indptr, c.indices, c.values, CD, lengths, CM, y,
                                               CK, true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(p == SENTINEL, "out written on failure");

    bmrm_problem_free(dense);
    bmrm_problem_free(sparse);
    csr_free(&c);
    free(x);
    free(y);
    free(w1);
    free(w2);
    free(w3);
    free(pred);
    free(pred2);
}

int main(void) {
    /* common.h helpers this program does not need. */
    (void)l1_risk;
    (void)l1_part;
    (void)mc_oracle_dense;
    test_multiclass();
    test_chain();
    printf("%d passed, %d failed\n", checks_passed, checks_failed);
    return checks_failed == 0 ? 0 : 1;
}
