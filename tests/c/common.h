/*
 * Shared by the C test programs: a check macro, a seeded generator that the
 * Rust tests reproduce bit for bit, and the test problems with their
 * callbacks (an L1 risk as a full and as a partitioned risk, a multiclass
 * SVM as a max-oracle).
 */
#ifndef BMRM_TEST_COMMON_H
#define BMRM_TEST_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bmrm.h"

static int checks_passed = 0;
static int checks_failed = 0;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (cond) {                                                        \
            checks_passed++;                                               \
        } else {                                                           \
            checks_failed++;                                               \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);         \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
        }                                                                  \
    } while (0)

/* The status `st` equals `want`, printing the last error when it does not. */
#define CHECK_STATUS(st, want)                                             \
    do {                                                                   \
        bmrm_status got_ = (st);                                           \
        CHECK(got_ == (want), "got %d (%s), want %d; last error: %s",      \
              (int)got_, bmrm_status_string(got_), (int)(want),            \
              bmrm_last_error());                                          \
    } while (0)

/* Whether this thread's last error contains `part`. */
static int last_error_has(const char *part) {
    return strstr(bmrm_last_error(), part) != NULL;
}

/* The generator the Rust tests reproduce: a 64-bit LCG, 53-bit doubles. */
typedef struct { uint64_t state; } lcg;

static double lcg_next(lcg *g) {
    g->state = g->state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(g->state >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- L1: R(w) = sum_j |w_j - c_j|; the optimum is clip(c, +-1/lambda). ---- */

#define L1_DIM 7
static const double L1_C[L1_DIM] = {0.3, -2.5, 1.7, 0.0, -0.4, 4.0, -0.9};

static int32_t l1_risk(void *user, const double *w, size_t dim, double *risk, double *g) {
    (void)user;
    double r = 0.0;
    for (size_t j = 0; j < dim; j++) {
        double d = w[j] - L1_C[j];
        r += fabs(d);
        g[j] = d > 0.0 ? 1.0 : -1.0;
    }
    *risk = r;
    return 0;
}

/* Part p is |w_p - c_p|. */
static int32_t l1_part(void *user, size_t p, const double *w, size_t dim, double *risk,
                       double *g) {
    (void)user;
    (void)dim;
    double d = w[p] - L1_C[p];
    g[p] = d > 0.0 ? 1.0 : -1.0;
    *risk = fabs(d);
    return 0;
}

/* ---- Multiclass SVM with 0/1 loss (Crammer-Singer) as a max-oracle. ---- */

typedef struct {
    size_t m, d, k; /* examples, features (with the bias), classes */
    double *x;      /* m x d, row-major, last feature 1 */
    size_t *y;      /* labels in 0..k */
} mc_data;

/* m examples of d - 1 features plus a bias, k classes; example i has class
 * i % k and its features are uniform in [-1, 1) with +1.5 on feature
 * (class % (d - 1)). */
static mc_data mc_make(size_t m, size_t d, size_t k, uint64_t seed) {
    mc_data data = {m, d, k, malloc(m * d * sizeof(double)), malloc(m * sizeof(size_t))};
    lcg g = {seed};
    for (size_t i = 0; i < m; i++) {
        data.y[i] = i % k;
        for (size_t j = 0; j + 1 < d; j++) {
            double v = 2.0 * lcg_next(&g) - 1.0;
            if (j == data.y[i] % (d - 1)) v += 1.5;
            data.x[i * d + j] = v;
        }
        data.x[i * d + d - 1] = 1.0;
    }
    return data;
}

static void mc_free(mc_data *data) {
    free(data->x);
    free(data->y);
}

static double mc_score(const mc_data *data, const double *w, size_t c, const double *x) {
    double s = 0.0;
    for (size_t j = 0; j < data->d; j++) s += w[c * data->d + j] * x[j];
    return s;
}

/* y^ = argmax_c [c != y_i] + <w_c, x_i>; the truth wins ties, then the
 * lowest class. */
static size_t mc_argmax(const mc_data *data, size_t i, const double *w) {
    const double *x = data->x + i * data->d;
    size_t yi = data->y[i], best = yi;
    double best_score = mc_score(data, w, yi, x);
    for (size_t c = 0; c < data->k; c++) {
        if (c == yi) continue;
        double s = 1.0 + mc_score(data, w, c, x);
        if (s > best_score) {
            best = c;
            best_score = s;
        }
    }
    return best;
}

/* Example i's loss-augmented argmax y^ at w, set as the corner's label with
 * its loss [y^ != y_i]. */
static inline size_t mc_answer(const mc_data *data, size_t i, const double *w,
                               bmrm_corner *out) {
    size_t best = mc_argmax(data, i, w);
    bmrm_corner_set_label(out, best);
    bmrm_corner_set_loss(out, best == data->y[i] ? 0.0 : 1.0);
    return best;
}

/* The max-oracle: psi = +x in block y_i, -x in block y^, by bmrm_corner_add. */
static int32_t mc_oracle(void *user, size_t i, const double *w, size_t dim, bmrm_corner *out) {
    const mc_data *data = user;
    (void)dim;
    const double *x = data->x + i * data->d;
    size_t yi = data->y[i], best = mc_answer(data, i, w, out);
    if (best == yi) return 0;
    for (size_t j = 0; j < data->d; j++) {
        if (bmrm_corner_add(out, yi * data->d + j, x[j]) != BMRM_OK) return 1;
    }
    for (size_t j = 0; j < data->d; j++) {
        if (bmrm_corner_add(out, best * data->d + j, -x[j]) != BMRM_OK) return 1;
    }
    return 0;
}

/* The same oracle writing psi into the dense buffer. */
static int32_t mc_oracle_dense(void *user, size_t i, const double *w, size_t dim,
                               bmrm_corner *out) {
    const mc_data *data = user;
    const double *x = data->x + i * data->d;
    size_t yi = data->y[i], best = mc_argmax(data, i, w);
    bmrm_corner_set_label(out, best);
    if (best == yi) return 0; /* loss 0, psi 0: the corner starts that way */
    bmrm_corner_set_loss(out, 1.0);
    double *psi = bmrm_corner_dense(out);
    if (psi == NULL) return 1;
    for (size_t j = 0; j < dim; j++) {
        if (psi[j] != 0.0) return 2; /* must start zeroed */
    }
    for (size_t j = 0; j < data->d; j++) {
        psi[yi * data->d + j] += x[j];
        psi[best * data->d + j] -= x[j];
    }
    return 0;
}

#endif
