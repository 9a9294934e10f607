/*
 * mex_callbacks.c: The library's callbacks: the toolbox's risk, the BCFW code's oracle and
 * feature functions, progress and Ctrl-C.
 */
#include "bmrm_mex.h"

/* ------------------------------------------------------------------------ */
/* bmrm: the toolbox's risk(data, W).                                       */

static int32_t risk_part(gate *g, size_t p, const double *w, size_t dim, double *risk,
                         double *subgrad) {
    char what[64];
    if (g->parts > 0)
        snprintf(what, sizeof what, "risk(data{%llu}, W)", (unsigned long long)p + 1);
    else
        snprintf(what, sizeof what, "risk(data, W)");
    mxArray *W = column(w, dim);
    mxArray *in[3] = {(mxArray *)g->risk, g->current[p], W};
    mxArray *out[3];
    bool ok = call(g, what, g->nout, out, 3, in);
    mxDestroyArray(W);
    if (!ok) return 1;
    char name[192];
    snprintf(name, sizeof name, "the risk R returned by %s", what);
    ok = scalar_out(g, out[0], name, risk);
    if (ok) {
        snprintf(name, sizeof name, "the subgradient returned by %s: subgrad", what);
        ok = vector_out(g, out[1], name, dim, 1.0, subgrad, NULL);
    }
    mxDestroyArray(out[0]);
    mxDestroyArray(out[1]);
    if (g->nout == 3) {
        /* The risk's updated data is the data of the next call. */
        const mxArray *given = g->parts > 0 ? mxGetCell(g->data, p) : g->data;
        if (g->current[p] != given) mxDestroyArray(g->current[p]);
        g->current[p] = out[2];
    }
    return ok ? 0 : 1;
}

int32_t risk_cb(void *user, const double *w, size_t dim, double *risk, double *subgrad) {
    return risk_part((gate *)user, 0, w, dim, risk, subgrad);
}

int32_t partial_risk_cb(void *user, size_t p, const double *w, size_t dim, double *risk,
                        double *subgrad) {
    return risk_part((gate *)user, p, w, dim, risk, subgrad);
}

/* ------------------------------------------------------------------------ */
/* bcfw: oracleFn, featureFn, lossFn, hashFn of the BCFW code.              */

/* FNV-1a, 64 bits. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t len) {
    const unsigned char *p = data;
    for (size_t k = 0; k < len; k++) {
        h ^= p[k];
        h *= 1099511628211ULL;
    }
    return h;
}
#define FNV_OFFSET 14695981039346656037ULL

/* The label id of y: FNV-1a over its class, size and bytes (numeric, char
 * and logical arrays; a hashFn is needed for other labels), or over the
 * string hashFn(param, y) returns. */
static bool label_id(gate *g, const mxArray *y, uint64_t *id) {
    uint64_t h = FNV_OFFSET;
    mxArray *hashed = NULL;
    if (g->hash_fn != NULL && g->hash_args == 1) {
        mxArray *in[2] = {(mxArray *)g->hash_fn, (mxArray *)y};
        if (!call(g, "param.hashFn(y)", 1, &hashed, 2, in)) return false;
        y = hashed;
    } else if (g->hash_fn != NULL) {
        mxArray *in[3] = {(mxArray *)g->hash_fn, (mxArray *)g->param, (mxArray *)y};
        if (!call(g, "param.hashFn(param, y)", 1, &hashed, 3, in)) return false;
        y = hashed;
    }
    if (mxIsSparse(y) || !(mxIsNumeric(y) || mxIsChar(y) || mxIsLogical(y))) {
        fail(g, "bmrm:badLabel",
             "%s is a %s%s: labels other than full numeric, char or logical arrays need "
             "param.hashFn(param, y) returning a string or a numeric array",
             hashed != NULL ? "param.hashFn's output" : "the label from param.oracleFn",
             mxIsSparse(y) ? "sparse " : "", mxGetClassName(y));
        if (hashed != NULL) mxDestroyArray(hashed);
        return false;
    }
    const char *cls = mxGetClassName(y);
    h = fnv1a(h, cls, strlen(cls));
    size_t nd = mxGetNumberOfDimensions(y);
    const mwSize *dims = mxGetDimensions(y);
    for (size_t k = 0; k < nd; k++) {
        uint64_t d = (uint64_t)dims[k];
        h = fnv1a(h, &d, sizeof d);
    }
    size_t bytes = mxGetNumberOfElements(y) * mxGetElementSize(y);
    if (bytes > 0) {
        h = fnv1a(h, mxGetData(y), bytes);
        if (mxIsComplex(y)) h = fnv1a(h, mxGetImagData(y), bytes);
    }
    *id = h;
    if (hashed != NULL) mxDestroyArray(hashed);
    return true;
}

/* featureFn(param, x, y) as a sparse vector (for the cached truth). */
static bool features_sparse(gate *g, const mxArray *x, const mxArray *y, size_t dim,
                            sparse_vec *out) {
    mxArray *in[4] = {(mxArray *)g->feature_fn, (mxArray *)g->param, (mxArray *)x,
                      (mxArray *)y};
    mxArray *phi;
    if (!call(g, "param.featureFn(param, x, y)", 1, &phi, 4, in)) return false;
    double *dense = calloc(dim, sizeof(double));
    if (dense == NULL) {
        mxDestroyArray(phi);
        fail(g, "bmrm:outOfMemory", "cannot allocate %llu doubles", (unsigned long long)dim);
        return false;
    }
    bool ok = vector_out(g, phi, "the features from param.featureFn(param, x, y)", dim, 1.0,
                         dense, NULL);
    mxDestroyArray(phi);
    if (ok) {
        size_t nnz = 0;
        for (size_t j = 0; j < dim; j++) nnz += dense[j] != 0.0;
        out->index = malloc((nnz > 0 ? nnz : 1) * sizeof(size_t));
        out->value = malloc((nnz > 0 ? nnz : 1) * sizeof(double));
        if (out->index == NULL || out->value == NULL) {
            fail(g, "bmrm:outOfMemory", "cannot cache the features of the ground truth");
            ok = false;
        } else {
            out->nnz = 0;
            for (size_t j = 0; j < dim; j++) {
                if (dense[j] != 0.0) {
                    out->index[out->nnz] = j;
                    out->value[out->nnz++] = dense[j];
                }
            }
            out->done = true;
        }
    }
    free(dense);
    return ok;
}

int32_t bcfw_oracle_cb(void *user, size_t i, const double *w, size_t dim,
                       bmrm_corner *out) {
    gate *g = user;
    const mxArray *x = mxGetCell(g->patterns, i), *y = mxGetCell(g->labels, i);
    if (x == NULL || y == NULL) {
        fail(g, "bmrm:badArgument", "param.patterns{%llu} or param.labels{%llu} is empty",
             (unsigned long long)i + 1, (unsigned long long)i + 1);
        return 1;
    }
    /* model.w, as the BCFW code passes it. */
    const char *fields[] = {"w"};
    mxArray *model = mxCreateStructMatrix(1, 1, 1, fields);
    mxSetField(model, 0, "w", column(w, dim));
    mxArray *in[5] = {(mxArray *)g->oracle_fn, (mxArray *)g->param, model, (mxArray *)x,
                      (mxArray *)y};
    mxArray *ypred;
    char what[96];
    snprintf(what, sizeof what, "param.oracleFn(param, model, x, y) on example %llu",
             (unsigned long long)i + 1);
    bool ok = call(g, what, 1, &ypred, 5, in);
    mxDestroyArray(model);
    if (!ok) return 1;

    uint64_t id_pred = 0, id_truth = 0;
    ok = label_id(g, ypred, &id_pred) && label_id(g, y, &id_truth);
    if (ok) bmrm_corner_set_label(out, id_pred);
    if (ok && id_pred != id_truth) {
        /* The loss. */
        mxArray *lin[4] = {(mxArray *)g->loss_fn, (mxArray *)g->param, (mxArray *)y, ypred};
        mxArray *loss_out;
        snprintf(what, sizeof what, "param.lossFn(param, ytruth, ypred) on example %llu",
                 (unsigned long long)i + 1);
        ok = call(g, what, 1, &loss_out, 4, lin);
        double loss = 0.0;
        if (ok) {
            ok = scalar_out(g, loss_out, what, &loss);
            mxDestroyArray(loss_out);
        }
        if (ok) bmrm_corner_set_loss(out, loss);
        /* psi = phi(x, y_i) - phi(x, y^). */
        if (ok && !g->truth[i].done) ok = features_sparse(g, x, y, dim, &g->truth[i]);
        if (ok) {
            const sparse_vec *t = &g->truth[i];
            if (bmrm_corner_add_many(out, t->index, t->value, t->nnz) != BMRM_OK) {
                fail(g, "bmrm:internal", "%s", bmrm_last_error());
                ok = false;
            }
        }
        if (ok) {
            mxArray *fin[4] = {(mxArray *)g->feature_fn, (mxArray *)g->param, (mxArray *)x,
                               ypred};
            mxArray *phi;
            ok = call(g, "param.featureFn(param, x, ypred)", 1, &phi, 4, fin);
            if (ok) {
                ok = vector_out(g, phi, "the features from param.featureFn(param, x, ypred)",
                                dim, -1.0, NULL, out);
                mxDestroyArray(phi);
            }
        }
    }
    mxDestroyArray(ypred);
    return ok ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* Progress: Ctrl-C and the toolbox's verbose lines.                         */

int32_t progress_cb(void *user, const bmrm_info *info) {
    gate *g = user;
    g->iteration = info->iterations + 1;
    if (interrupt_pending(g)) return 1;
    if (g->verb > 0 && fmod((double)info->iterations, g->verb) == 0.0) {
        if (g->bcfw)
            mexPrintf("pass %4llu: primal=%f, dual=%f, gap=%g, oracle calls=%llu, time=%.3f\n",
                      (unsigned long long)info->iterations, info->primal, info->lower_bound,
                      info->gap, (unsigned long long)info->oracle_calls, info->elapsed_seconds);
        else
            mexPrintf("%4llu: tim=%.3f, Fp=%f, Fd=%f, (Fp-Fd)=%f, (Fp-Fd)/Fp=%f, R=%f, nCP=%llu, "
                      "nzA=%llu\n",
                      (unsigned long long)info->iterations, info->elapsed_seconds, info->primal,
                      info->lower_bound, info->gap,
                      info->primal != 0.0 ? info->gap / fabs(info->primal) : 0.0, info->risk,
                      (unsigned long long)info->num_planes,
                      (unsigned long long)info->active_planes);
    }
    return 0;
}
