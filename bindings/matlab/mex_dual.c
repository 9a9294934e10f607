/* mex_dual.c: BCFW's dual state between the library and MATLAB (gapBCFW's cache). */
#include "bmrm_mex.h"

void free_dual(dual_state *d) {
    free(d->counts);
    free(d->gaps);
    free(d->labels);
    free(d->losses);
    free(d->alphas);
    free(d->start);
    free(d->index);
    free(d->value);
    memset(d, 0, sizeof *d);
}

static bool alloc_dual(dual_state *d, size_t n, size_t total, size_t nnz) {
    d->n = n;
    d->total = total;
    d->nnz = nnz;
    d->counts = calloc(n > 0 ? n : 1, sizeof(size_t));
    d->gaps = calloc(n > 0 ? n : 1, sizeof(double));
    d->labels = calloc(total > 0 ? total : 1, sizeof(uint64_t));
    d->losses = calloc(total > 0 ? total : 1, sizeof(double));
    d->alphas = calloc(total > 0 ? total : 1, sizeof(double));
    d->start = calloc(total + 1, sizeof(size_t));
    d->index = calloc(nnz > 0 ? nnz : 1, sizeof(size_t));
    d->value = calloc(nnz > 0 ? nnz : 1, sizeof(double));
    return d->counts && d->gaps && d->labels && d->losses && d->alphas && d->start && d->index &&
           d->value;
}

/* Reads the solver's state; false (and nothing allocated) when corners are
 * not kept, or on a failure recorded in g. */
bool export_dual(gate *g, bmrm_solver *solver, size_t n, dual_state *d) {
    memset(d, 0, sizeof *d);
    size_t total = 0, nnz = 0;
    bmrm_bcfw_block b;
    for (size_t i = 0; i < n; i++) {
        if (bmrm_solver_bcfw_block(solver, i, &b, NULL, NULL, NULL, NULL, NULL, NULL) != BMRM_OK)
            return false; /* corners not kept: no state to save */
        total += b.num_corners;
        nnz += b.psi_nnz;
    }
    if (!alloc_dual(d, n, total, nnz)) {
        free_dual(d);
        fail(g, "bmrm:outOfMemory", "cannot save the dual state (%llu corners)",
             (unsigned long long)total);
        return false;
    }
    size_t c = 0, at = 0;
    size_t *start = malloc((total + 1) * sizeof(size_t));
    for (size_t i = 0; start != NULL && i < n; i++) {
        bmrm_solver_bcfw_block(solver, i, &b, NULL, NULL, NULL, NULL, NULL, NULL);
        if (bmrm_solver_bcfw_block(solver, i, &b, d->labels + c, d->losses + c, d->alphas + c,
                                   start, d->index + at, d->value + at) != BMRM_OK) {
            fail(g, "bmrm:internal", "%s", bmrm_last_error());
            break;
        }
        d->counts[i] = b.num_corners;
        d->gaps[i] = b.gap_estimate;
        for (size_t k = 0; k <= b.num_corners; k++) d->start[c + k] = at + start[k];
        c += b.num_corners;
        at += b.psi_nnz;
    }
    free(start);
    if (start == NULL && !g->failed) fail(g, "bmrm:outOfMemory", "cannot save the dual state");
    if (g->failed) {
        free_dual(d);
        return false;
    }
    return true;
}

/* The state as MATLAB data: a struct of flat arrays (gapBCFW's `cache`). */
mxArray *dual_to_mx(const dual_state *d, size_t dim, double lambda) {
    const char *fields[] = {"num_corners", "gap_estimate", "labels", "loss", "alpha", "psi",
                            "lambda"};
    mxArray *m = mxCreateStructMatrix(1, 1, 7, fields);
    mxArray *counts = mxCreateDoubleMatrix((mwSize)d->n, 1, mxREAL);
    mxArray *gaps = mxCreateDoubleMatrix((mwSize)d->n, 1, mxREAL);
    for (size_t i = 0; i < d->n; i++) {
        mxGetPr(counts)[i] = (double)d->counts[i];
        mxGetPr(gaps)[i] = d->gaps[i];
    }
    mxArray *labels = mxCreateNumericMatrix((mwSize)d->total, 1, mxUINT64_CLASS, mxREAL);
    if (d->total > 0) memcpy(mxGetData(labels), d->labels, d->total * sizeof(uint64_t));
    mxArray *loss = mxCreateDoubleMatrix((mwSize)d->total, 1, mxREAL);
    mxArray *alpha = mxCreateDoubleMatrix((mwSize)d->total, 1, mxREAL);
    if (d->total > 0) {
        memcpy(mxGetPr(loss), d->losses, d->total * sizeof(double));
        memcpy(mxGetPr(alpha), d->alphas, d->total * sizeof(double));
    }
    mxArray *psi = mxCreateSparse((mwSize)dim, (mwSize)d->total, (mwSize)(d->nnz > 0 ? d->nnz : 1),
                                  mxREAL);
    mwIndex *jc = mxGetJc(psi), *ir = mxGetIr(psi);
    double *pr = mxGetPr(psi);
    for (size_t c = 0; c <= d->total; c++) jc[c] = (mwIndex)d->start[c];
    for (size_t k = 0; k < d->nnz; k++) {
        ir[k] = (mwIndex)d->index[k];
        pr[k] = d->value[k];
    }
    mxSetField(m, 0, "num_corners", counts);
    mxSetField(m, 0, "gap_estimate", gaps);
    mxSetField(m, 0, "labels", labels);
    mxSetField(m, 0, "loss", loss);
    mxSetField(m, 0, "alpha", alpha);
    mxSetField(m, 0, "psi", psi);
    mxSetField(m, 0, "lambda", mxCreateDoubleScalar(lambda));
    return m;
}

/* opts.dual (a state dual_to_mx made) back into flat arrays. */
void dual_from_mx(arg_error *e, const mxArray *m, size_t n, size_t dim, dual_state *d) {
    memset(d, 0, sizeof *d);
    const mxArray *counts = mxGetField(m, 0, "num_corners"), *gaps = mxGetField(m, 0, "gap_estimate"),
                  *labels = mxGetField(m, 0, "labels"), *loss = mxGetField(m, 0, "loss"),
                  *alpha = mxGetField(m, 0, "alpha"), *psi = mxGetField(m, 0, "psi");
    if (!mxIsStruct(m) || mxGetNumberOfElements(m) != 1 || !counts || !gaps || !labels || !loss ||
        !alpha || !psi) {
        arg_fail(e, "the warm-start state must be the cache a previous run returned");
        return;
    }
    if (!mxIsDouble(counts) || mxGetNumberOfElements(counts) != n || !mxIsDouble(gaps) ||
        mxGetNumberOfElements(gaps) != n) {
        arg_fail(e, "the warm-start state is for %llu examples, not %llu",
                 (unsigned long long)mxGetNumberOfElements(counts), (unsigned long long)n);
        return;
    }
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        double c = mxGetPr(counts)[i];
        if (!(c >= 0 && c == floor(c) && c < 1e15)) {
            arg_fail(e, "the warm-start state's num_corners(%llu) = %g is not a count",
                     (unsigned long long)i + 1, c);
            return;
        }
        total += (size_t)c;
    }
    if (mxGetClassID(labels) != mxUINT64_CLASS || mxGetNumberOfElements(labels) != total ||
        !mxIsDouble(loss) || mxGetNumberOfElements(loss) != total || !mxIsDouble(alpha) ||
        mxGetNumberOfElements(alpha) != total || !mxIsSparse(psi) || !mxIsDouble(psi) ||
        mxGetM(psi) != dim || mxGetN(psi) != total) {
        arg_fail(e, "the warm-start state's labels, loss, alpha and psi must have %llu corners "
                    "(psi %llu x %llu sparse)",
                 (unsigned long long)total, (unsigned long long)dim, (unsigned long long)total);
        return;
    }
    const mwIndex *jc = mxGetJc(psi), *ir = mxGetIr(psi);
    size_t nnz = (size_t)jc[total];
    if (!alloc_dual(d, n, total, nnz)) {
        free_dual(d);
        arg_fail(e, "cannot allocate the warm-start state");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        d->counts[i] = (size_t)mxGetPr(counts)[i];
        d->gaps[i] = mxGetPr(gaps)[i];
    }
    if (total > 0) {
        memcpy(d->labels, mxGetData(labels), total * sizeof(uint64_t));
        memcpy(d->losses, mxGetPr(loss), total * sizeof(double));
        memcpy(d->alphas, mxGetPr(alpha), total * sizeof(double));
    }
    for (size_t c = 0; c <= total; c++) d->start[c] = (size_t)jc[c];
    for (size_t k = 0; k < nnz; k++) {
        d->index[k] = (size_t)ir[k];
        d->value[k] = mxGetPr(psi)[k];
    }
}
