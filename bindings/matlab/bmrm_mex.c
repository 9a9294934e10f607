/*
 * bmrm_mex.c: the MEX gateway of bmrm for MATLAB and GNU Octave, over the
 * static library (include/bmrm.h). Built by build_mex.m. Not meant to be
 * called directly: bmrm.m and bcfw.m parse and check the options and call
 *
 *   [W, stat]        = bmrm_mex('bmrm', data, risk, lambda, opts)
 *   [model, prog]    = bmrm_mex('bcfw', param, opts)
 *   version          = bmrm_mex('version')
 *
 * opts is a struct of plain fields (see bmrm.m and bcfw.m for the mapping
 * from the toolboxes' option names).
 *
 * Rules this file follows:
 * - The user's function handles are called only from callbacks registered as
 *   NOT thread-safe, which the library runs on the thread that called
 *   bmrm_solver_run: MATLAB's thread.
 * - A callback never raises a MATLAB error: MATLAB calls go through
 *   mexCallMATLABWithTrap (in Octave through bmrm_octave_feval.cc, which
 *   catches what Octave throws, interrupts included); a failure, a NaN or a
 *   malformed output is recorded with its message and the callback returns
 *   non-zero, which ends the solve.
 * - mexErrMsgIdAndTxt is called only at the top level of mexFunction, after
 *   every library handle and every malloc'd buffer is freed.
 * - Ctrl-C: polled before every call into MATLAB and after every iteration
 *   (utIsInterruptPending in MATLAB, Octave's interrupt state in Octave); in
 *   Octave a Ctrl-C landing inside the user's function is caught too. The
 *   solve then stops, everything is freed, and the error 'bmrm:interrupted'
 *   is raised.
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mex.h"

#include "bmrm.h"

#if defined(BMRM_MEX_OCTAVE)
int bmrm_octave_feval(int nout, mxArray **out, int nin, mxArray **in, char *msg, size_t msg_len,
                      char *id, size_t id_len);
int bmrm_octave_interrupt_pending(void);
#else
/* MATLAB's (undocumented, long-standing) Ctrl-C query, in libut. */
extern bool utIsInterruptPending(void);
#endif

#define MSG_LEN 4096
#define ID_LEN 256

/* ------------------------------------------------------------------------ */
/* State shared by the callbacks of one call of the gateway.                */

typedef struct {
    size_t nnz;
    size_t *index;
    double *value;
    bool done;
} sparse_vec;

typedef struct {
    size_t dim;
    /* bmrm: risk(data, W) or risk(data{p}, W) */
    const mxArray *risk;
    size_t parts;           /* 0: data is one block */
    const mxArray *data;    /* the data as given */
    mxArray **current;      /* the data of each block as the risk returned it */
    int nout;               /* 2 or 3 outputs of the risk */
    /* bcfw: the param struct's fields */
    const mxArray *param, *patterns, *labels, *loss_fn, *oracle_fn, *feature_fn, *hash_fn;
    sparse_vec *truth;      /* phi(x_i, y_i), computed once per example */
    int hash_args;          /* hashFn(param, y) (2) or hashFn(y) (1, gapBCFW) */
    struct lambda_result *current_result; /* where the iterate hook writes */
    double log_every;       /* keep the model of every log_every-th pass (0: none) */
    /* reporting */
    double verb;            /* print every verb iterations (0: never) */
    int bcfw;
    uint64_t iteration;     /* the iteration in progress */
    bool failed, interrupted;
    char message[MSG_LEN];
    char identifier[ID_LEN];
} gate;

static void fail(gate *g, const char *id, const char *fmt, ...) {
    if (g->failed) return;
    g->failed = true;
    snprintf(g->identifier, ID_LEN, "%s", id);
    va_list args;
    va_start(args, fmt);
    vsnprintf(g->message, MSG_LEN, fmt, args);
    va_end(args);
}

static bool interrupt_pending(gate *g) {
#if defined(BMRM_MEX_OCTAVE)
    if (bmrm_octave_interrupt_pending()) g->interrupted = true;
#else
    if (utIsInterruptPending()) g->interrupted = true;
#endif
    return g->interrupted;
}

/* feval(in[0], in[1..]) with nout outputs. On failure records "<what>: <the
 * user's message>" and returns false. */
static bool call(gate *g, const char *what, int nout, mxArray **out, int nin, mxArray **in) {
    for (int k = 0; k < nout; k++) out[k] = NULL;
    if (g->failed || interrupt_pending(g)) return false;
    char msg[MSG_LEN] = "", id[ID_LEN] = "";
#if defined(BMRM_MEX_OCTAVE)
    int rc = bmrm_octave_feval(nout, out, nin, in, msg, MSG_LEN, id, ID_LEN);
    if (rc == 2) {
        g->interrupted = true;
        return false;
    }
#else
    int rc = 0;
    mxArray *ex = mexCallMATLABWithTrap(nout, out, nin, in, "feval");
    if (ex != NULL) {
        rc = 1;
        mxArray *m = mxGetProperty(ex, 0, "message");
        mxArray *i = mxGetProperty(ex, 0, "identifier");
        if (m != NULL && mxIsChar(m)) mxGetString(m, msg, MSG_LEN);
        if (i != NULL && mxIsChar(i)) mxGetString(i, id, ID_LEN);
        if (m != NULL) mxDestroyArray(m);
        if (i != NULL) mxDestroyArray(i);
        mxDestroyArray(ex);
        if (utIsInterruptPending()) {
            g->interrupted = true;
            return false;
        }
    }
#endif
    if (rc != 0) {
        for (int k = 0; k < nout; k++) {
            if (out[k] != NULL) mxDestroyArray(out[k]);
            out[k] = NULL;
        }
        if (msg[0] == '\0') snprintf(msg, MSG_LEN, "an error without a message");
        if (id[0] != '\0')
            fail(g, "bmrm:callbackError", "%s failed at iteration %llu: %s (%s)", what,
                 (unsigned long long)g->iteration, msg, id);
        else
            fail(g, "bmrm:callbackError", "%s failed at iteration %llu: %s", what,
                 (unsigned long long)g->iteration, msg);
        return false;
    }
    for (int k = 0; k < nout; k++) {
        if (out[k] == NULL) {
            fail(g, "bmrm:badOutput", "%s returned %d output(s), %d expected", what, k, nout);
            for (int j = 0; j < nout; j++)
                if (out[j] != NULL) mxDestroyArray(out[j]);
            return false;
        }
    }
    return true;
}

static mxArray *column(const double *w, size_t dim) {
    mxArray *a = mxCreateDoubleMatrix((mwSize)dim, 1, mxREAL);
    memcpy(mxGetPr(a), w, dim * sizeof(double));
    return a;
}

/* A real numeric finite scalar, or a failure naming `what`. */
static bool scalar_out(gate *g, const mxArray *a, const char *what, double *v) {
    if (!mxIsNumeric(a) && !mxIsLogical(a)) {
        fail(g, "bmrm:badOutput", "%s must be a real scalar, not a %s", what, mxGetClassName(a));
        return false;
    }
    if (mxIsComplex(a) || mxGetNumberOfElements(a) != 1) {
        fail(g, "bmrm:badOutput", "%s must be a real scalar (it has %llu elements%s)", what,
             (unsigned long long)mxGetNumberOfElements(a), mxIsComplex(a) ? ", complex" : "");
        return false;
    }
    *v = mxGetScalar(a);
    if (!isfinite(*v)) {
        fail(g, "bmrm:nonFinite", "%s is %s at iteration %llu", what,
             isnan(*v) ? "NaN" : "Inf", (unsigned long long)g->iteration);
        return false;
    }
    return true;
}

/* Adds sign * v (a real double vector of dim elements, full or sparse) into
 * dense[] (when dense is not NULL) or through the corner (sparse). */
static bool vector_out(gate *g, const mxArray *v, const char *what, size_t dim, double sign,
                       double *dense, bmrm_corner *corner) {
    if (!mxIsDouble(v) || mxIsComplex(v)) {
        fail(g, "bmrm:badOutput", "%s must be a real double vector, not %s%s", what,
             mxIsComplex(v) ? "complex " : "", mxGetClassName(v));
        return false;
    }
    if (mxGetNumberOfDimensions(v) != 2) {
        fail(g, "bmrm:badOutput", "%s must be a vector of %llu elements, not a %llu-D array", what,
             (unsigned long long)dim, (unsigned long long)mxGetNumberOfDimensions(v));
        return false;
    }
    size_t rows = mxGetM(v), cols = mxGetN(v);
    if (rows * cols != dim || (rows != 1 && cols != 1)) {
        fail(g, "bmrm:badOutput", "%s must be a vector of %llu elements, not %llux%llu", what,
             (unsigned long long)dim, (unsigned long long)rows, (unsigned long long)cols);
        return false;
    }
    const double *pr = mxGetPr(v);
    if (mxIsSparse(v)) {
        const mwIndex *ir = mxGetIr(v), *jc = mxGetJc(v);
        for (size_t c = 0; c < cols; c++) {
            for (mwIndex k = jc[c]; k < jc[c + 1]; k++) {
                size_t j = rows == 1 ? c : (size_t)ir[k];
                double x = pr[k];
                if (!isfinite(x)) {
                    fail(g, "bmrm:nonFinite", "%s(%llu) is %s at iteration %llu", what,
                         (unsigned long long)j + 1, isnan(x) ? "NaN" : "Inf",
                         (unsigned long long)g->iteration);
                    return false;
                }
                if (dense != NULL) {
                    dense[j] += sign * x;
                } else if (x != 0.0 && bmrm_corner_add(corner, j, sign * x) != BMRM_OK) {
                    fail(g, "bmrm:internal", "%s: %s", what, bmrm_last_error());
                    return false;
                }
            }
        }
        return true;
    }
    for (size_t j = 0; j < dim; j++) {
        if (!isfinite(pr[j])) {
            fail(g, "bmrm:nonFinite", "%s(%llu) is %s at iteration %llu", what,
                 (unsigned long long)j + 1, isnan(pr[j]) ? "NaN" : "Inf",
                 (unsigned long long)g->iteration);
            return false;
        }
    }
    if (dense == NULL) {
        dense = bmrm_corner_dense(corner);
        if (dense == NULL) {
            fail(g, "bmrm:internal", "%s: %s", what, bmrm_last_error());
            return false;
        }
    }
    for (size_t j = 0; j < dim; j++) dense[j] += sign * pr[j];
    return true;
}

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

static int32_t risk_cb(void *user, const double *w, size_t dim, double *risk, double *subgrad) {
    return risk_part((gate *)user, 0, w, dim, risk, subgrad);
}

static int32_t partial_risk_cb(void *user, size_t p, const double *w, size_t dim, double *risk,
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

static int32_t bcfw_oracle_cb(void *user, size_t i, const double *w, size_t dim,
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
            for (size_t k = 0; k < t->nnz && ok; k++) {
                if (bmrm_corner_add(out, t->index[k], t->value[k]) != BMRM_OK) {
                    fail(g, "bmrm:internal", "%s", bmrm_last_error());
                    ok = false;
                }
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

static int32_t progress_cb(void *user, const bmrm_info *info) {
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

/* ------------------------------------------------------------------------ */
/* Reading opts (struct fields checked by bmrm.m / bcfw.m; checked again).  */

typedef struct {
    char message[MSG_LEN];
    bool bad;
} arg_error;

static void arg_fail(arg_error *e, const char *fmt, ...) {
    if (e->bad) return;
    e->bad = true;
    va_list args;
    va_start(args, fmt);
    vsnprintf(e->message, MSG_LEN, fmt, args);
    va_end(args);
}

static double opt_num(arg_error *e, const mxArray *opts, const char *name, double dflt) {
    const mxArray *f = mxGetField(opts, 0, name);
    if (f == NULL || mxIsEmpty(f)) return dflt;
    if (!(mxIsNumeric(f) || mxIsLogical(f)) || mxIsComplex(f) || mxGetNumberOfElements(f) != 1) {
        arg_fail(e, "option %s must be a real scalar", name);
        return dflt;
    }
    double v = mxGetScalar(f);
    if (isnan(v)) arg_fail(e, "option %s is NaN", name);
    return v;
}

static void opt_str(arg_error *e, const mxArray *opts, const char *name, char *buf, size_t len,
                    const char *dflt) {
    const mxArray *f = mxGetField(opts, 0, name);
    snprintf(buf, len, "%s", dflt);
    if (f == NULL || mxIsEmpty(f)) return;
    if (!mxIsChar(f) || mxGetString(f, buf, (mwSize)len) != 0)
        arg_fail(e, "option %s must be a string", name);
}

/* A count option: a non-negative integer up to `max`; inf gives `inf_value`
 * (or an error when `inf_ok` is false). Values out of range are errors, never
 * truncated. */
static uint64_t opt_count(arg_error *e, const mxArray *opts, const char *name, uint64_t dflt,
                          uint64_t max, bool inf_ok, uint64_t inf_value) {
    const mxArray *f = mxGetField(opts, 0, name);
    if (f == NULL || mxIsEmpty(f)) return dflt;
    double v = opt_num(e, opts, name, (double)dflt);
    if (e->bad) return dflt;
    if (isinf(v) && v > 0) {
        if (!inf_ok) arg_fail(e, "option %s must be finite", name);
        return inf_ok ? inf_value : dflt;
    }
    if (!(v >= 0) || v != floor(v)) {
        arg_fail(e, "option %s must be a non-negative integer (got %g)", name, v);
        return dflt;
    }
    /* (double)max rounds up to 2^64 for UINT64_MAX: compare with >=. */
    if (max == UINT64_MAX ? v >= 18446744073709551616.0 : v > (double)max) {
        arg_fail(e, "option %s = %.17g is above its largest value %llu", name, v,
                 (unsigned long long)max);
        return dflt;
    }
    return (uint64_t)v;
}

/* An enum option: an integer in [0, count). */
static int opt_enum(arg_error *e, const mxArray *opts, const char *name, int dflt, int count) {
    double v = opt_num(e, opts, name, (double)dflt);
    if (e->bad) return dflt;
    if (!(v >= 0 && v < count) || v != floor(v)) {
        arg_fail(e, "option %s must be an integer from 0 to %d (got %.17g)", name, count - 1, v);
        return dflt;
    }
    return (int)v;
}

static bool algorithm_of(const char *name, bmrm_algorithm *a) {
    static const struct {
        const char *name;
        bmrm_algorithm a;
    } table[] = {{"bmrm", BMRM_ALGORITHM_BMRM},
                 {"proxbmrm", BMRM_ALGORITHM_PROX_BMRM},
                 {"pbmrm", BMRM_ALGORITHM_P_BMRM},
                 {"proxpbmrm", BMRM_ALGORITHM_PROX_P_BMRM},
                 {"cp", BMRM_ALGORITHM_CUTTING_PLANE},
                 {"sgd", BMRM_ALGORITHM_SGD},
                 {"bcfw", BMRM_ALGORITHM_BCFW}};
    for (size_t k = 0; k < sizeof table / sizeof table[0]; k++) {
        if (strcmp(name, table[k].name) == 0) {
            *a = table[k].a;
            return true;
        }
    }
    return false;
}

/* The settings common to both front ends. */
static bmrm_settings settings_from(arg_error *e, const mxArray *opts, bmrm_algorithm a,
                                   double lambda) {
    bmrm_settings s = bmrm_settings_default(a);
    s.lambda = lambda;
    s.tol_rel = opt_num(e, opts, "tol_rel", s.tol_rel);
    s.tol_abs = opt_num(e, opts, "tol_abs", s.tol_abs);
    s.max_iterations = opt_count(e, opts, "max_iterations", 0, UINT64_MAX, true, 0);
    double t = opt_num(e, opts, "time_limit", 0);
    if (!e->bad && !(t >= 0)) arg_fail(e, "option time_limit must be >= 0 (got %g)", t);
    s.time_limit_seconds = isinf(t) ? 0.0 : t;
    s.num_threads = opt_count(e, opts, "num_threads", 0, UINT64_MAX, true, 0);
    s.seed = opt_count(e, opts, "seed", 0, UINT64_MAX, false, 0);
    s.num_parts = opt_count(e, opts, "num_parts", 0, UINT64_MAX, false, 0);
    s.buffer_size = opt_count(e, opts, "buffer_size", s.buffer_size, UINT64_MAX, false, 0);
    s.clean_after = (uint32_t)opt_count(e, opts, "clean_after", s.clean_after, UINT32_MAX, true, 0);
    s.prox_k = opt_num(e, opts, "prox_k", s.prox_k);
    s.prox_t = opt_num(e, opts, "prox_t", s.prox_t);
    s.sgd_passes = (uint32_t)opt_count(e, opts, "sgd_passes", s.sgd_passes, UINT32_MAX, false, 0);
    /* BCFW */
    s.num_passes = opt_count(e, opts, "num_passes", 0, UINT64_MAX, true, 0);
    /* gap_check inf: no exact pass but the one certifying the end. */
    s.gap_check = (uint32_t)opt_count(e, opts, "gap_check", s.gap_check, UINT32_MAX, true,
                                      UINT32_MAX);
    s.line_search = opt_num(e, opts, "line_search", s.line_search) != 0;
    s.weighted_averaging = opt_num(e, opts, "weighted_averaging", s.weighted_averaging) != 0;
    s.use_cache = opt_num(e, opts, "use_cache", s.use_cache) != 0;
    s.cache_nu = opt_num(e, opts, "cache_nu", s.cache_nu);
    s.cache_factor = opt_num(e, opts, "cache_factor", s.cache_factor);
    s.cache_size = (uint32_t)opt_count(e, opts, "cache_size", s.cache_size, UINT32_MAX, false, 0);
    s.sampling = (bmrm_sampling)opt_enum(e, opts, "sampling", s.sampling, 4);
    s.step_type = (bmrm_step_type)opt_enum(e, opts, "step_type", s.step_type, 4);
    s.gap_degree = opt_num(e, opts, "gap_degree", s.gap_degree);
    s.early_exact_factor = opt_num(e, opts, "early_exact_factor", s.early_exact_factor);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Running a solve and collecting its results (no MATLAB error raised).     */

typedef struct {
    bmrm_status status;
    char last_error[MSG_LEN];
    bmrm_info info;
    size_t rows;
    bmrm_iteration *history;
    bool bcfw;               /* BCFW ran: bcfw_info and passes are set */
    bmrm_bcfw_info bcfw_info;
    bmrm_bcfw_pass *passes;  /* rows of them */
} outcome;

static void collect(bmrm_solver *solver, const bmrm_settings *s, outcome *o);

static void solve(gate *g, bmrm_problem *p, bmrm_settings *s, double *w, outcome *o) {
    memset(o, 0, sizeof *o);
    s->progress = progress_cb;
    s->progress_user = g;
    bmrm_solver *solver = NULL;
    o->status = bmrm_solver_new(p, s, &solver);
    if (o->status != BMRM_OK) {
        snprintf(o->last_error, MSG_LEN, "%s", bmrm_last_error());
        return;
    }
    g->iteration = 1;
    o->status = bmrm_solver_run(solver, w, g->dim);
    if (o->status != BMRM_OK) snprintf(o->last_error, MSG_LEN, "%s", bmrm_last_error());
    collect(solver, s, o);
    bmrm_solver_free(solver);
}

/* The toolbox's exitflag: 1 TolRel, 2 TolAbs, 0 MaxIter, 3 TimeLimit. */
static double exitflag(bmrm_exit e) {
    switch (e) {
    case BMRM_EXIT_CONVERGED_REL:
        return 1;
    case BMRM_EXIT_CONVERGED_ABS:
        return 2;
    case BMRM_EXIT_MAX_ITERATIONS:
        return 0;
    case BMRM_EXIT_TIME_LIMIT:
        return 3;
    case BMRM_EXIT_STOPPED_BY_USER:
        return -2;
    default:
        return -1;
    }
}

static mxArray *history_column(const outcome *o, int which) {
    mxArray *a = mxCreateDoubleMatrix((mwSize)o->rows, 1, mxREAL);
    double *p = mxGetPr(a);
    for (size_t k = 0; k < o->rows; k++) {
        const bmrm_iteration *r = &o->history[k];
        switch (which) {
        case 0: p[k] = r->primal; break;
        case 1: p[k] = r->lower_bound; break;
        case 2: p[k] = r->risk; break;
        case 3: p[k] = r->elapsed_seconds; break;
        case 4: p[k] = r->primal - r->lower_bound; break;
        case 5: p[k] = (double)r->iteration; break;
        case 6: p[k] = (double)r->oracle_calls; break;
        default: p[k] = r->objective; break;
        }
    }
    return a;
}

static mxArray *pass_column(const outcome *o, int which) {
    mxArray *a = mxCreateDoubleMatrix((mwSize)o->rows, 1, mxREAL);
    double *p = mxGetPr(a);
    for (size_t k = 0; k < o->rows; k++) {
        const bmrm_bcfw_pass *r = &o->passes[k];
        switch (which) {
        case 0: p[k] = r->primal; break;
        case 1: p[k] = r->lower_bound; break;
        case 2: p[k] = r->primal - r->lower_bound; break;
        case 3: p[k] = r->effective_passes; break;
        case 4: p[k] = r->elapsed_seconds; break;
        case 5: p[k] = (double)r->oracle_calls; break;
        case 6: p[k] = r->gap_estimate; break;
        default: p[k] = r->exact_gap; break;
        }
    }
    return a;
}

static const char *status_id(bmrm_status s) {
    switch (s) {
    case BMRM_ERROR_NULL_ARGUMENT:
    case BMRM_ERROR_INVALID_ARGUMENT: return "bmrm:badArgument";
    case BMRM_ERROR_DIMENSION_MISMATCH: return "bmrm:dimensionMismatch";
    case BMRM_ERROR_NO_ORACLE: return "bmrm:noOracle";
    case BMRM_ERROR_ORACLE_FAILED: return "bmrm:callbackError";
    case BMRM_ERROR_NON_FINITE: return "bmrm:nonFinite";
    case BMRM_ERROR_OUT_OF_MEMORY: return "bmrm:outOfMemory";
    default: return "bmrm:internal";
    }
}

/* After everything is freed: raises the run's error, if any. */
static void raise_if_failed(const gate *g, const outcome *o, const char *who) {
    if (g->interrupted)
        mexErrMsgIdAndTxt("bmrm:interrupted",
                          "%s: interrupted (Ctrl-C) at iteration %llu; the solve stopped cleanly",
                          who, (unsigned long long)g->iteration);
    if (g->failed) mexErrMsgIdAndTxt(g->identifier, "%s: %s", who, g->message);
    if (o->status != BMRM_OK)
        mexErrMsgIdAndTxt(status_id(o->status), "%s: %s", who, o->last_error);
}

/* ------------------------------------------------------------------------ */
/* [W, stat] = bmrm_mex('bmrm', data, risk, lambda, opts)                    */

static void do_bmrm(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]) {
    if (nrhs != 5) mexErrMsgIdAndTxt("bmrm:badArgument", "bmrm: 5 arguments expected");
    const mxArray *data = prhs[1], *risk = prhs[2], *opts = prhs[4];
    if (!mxIsFunctionHandle(risk))
        mexErrMsgIdAndTxt("bmrm:badArgument", "bmrm: risk must be a function handle, not a %s",
                          mxGetClassName(risk));
    if (!mxIsDouble(prhs[3]) || mxIsComplex(prhs[3]) || mxGetNumberOfElements(prhs[3]) != 1)
        mexErrMsgIdAndTxt("bmrm:badArgument", "bmrm: lambda must be a real double scalar");
    double lambda = mxGetScalar(prhs[3]);
    if (!mxIsStruct(opts)) mexErrMsgIdAndTxt("bmrm:badArgument", "bmrm: options must be a struct");

    arg_error e = {"", false};
    char alg_name[32];
    opt_str(&e, opts, "algorithm", alg_name, sizeof alg_name, "bmrm");
    bmrm_algorithm a = BMRM_ALGORITHM_BMRM;
    if (!e.bad && !algorithm_of(alg_name, &a))
        arg_fail(&e, "unknown Algorithm '%s' (bmrm, proxbmrm, pbmrm, proxpbmrm or cp)", alg_name);
    double dim_d = opt_num(&e, opts, "dim", 0);
    double nout = opt_num(&e, opts, "nout", 3);
    double verb = opt_num(&e, opts, "verb", 0);
    bmrm_settings s = settings_from(&e, opts, a, lambda);
    if (!e.bad && !(dim_d >= 1 && dim_d == floor(dim_d) && dim_d <= 9007199254740992.0 &&
                    dim_d <= (double)(SIZE_MAX / sizeof(double))))
        arg_fail(&e, "the dimension must be a positive integer of at most 2^53 (got %g)", dim_d);
    if (!e.bad && nout != 2 && nout != 3) arg_fail(&e, "nout must be 2 or 3");
    size_t parts = 0;
    if (mxIsCell(data)) {
        parts = mxGetNumberOfElements(data);
        if (parts == 0) arg_fail(&e, "data is an empty cell array: no partition");
    }
    size_t dim = (size_t)dim_d;
    const mxArray *w0 = mxGetField(opts, 0, "W0");
    if (!e.bad && w0 != NULL && !mxIsEmpty(w0)) {
        if (!mxIsDouble(w0) || mxIsComplex(w0) || mxIsSparse(w0) ||
            mxGetNumberOfElements(w0) != dim)
            arg_fail(&e, "W0 must be a full real double vector of %llu elements",
                     (unsigned long long)dim);
    }
    if (e.bad) mexErrMsgIdAndTxt("bmrm:badArgument", "bmrm: %s", e.message);

    /* From here on, nothing raises a MATLAB error until everything is freed. */
    gate g;
    memset(&g, 0, sizeof g);
    g.dim = dim;
    g.risk = risk;
    g.parts = parts;
    g.data = data;
    g.nout = (int)nout;
    g.verb = verb;
    size_t blocks = parts > 0 ? parts : 1;
    g.current = calloc(blocks, sizeof(mxArray *));
    double *w = calloc(dim, sizeof(double));
    outcome o;
    memset(&o, 0, sizeof o);
    if (g.current == NULL || w == NULL) {
        fail(&g, "bmrm:outOfMemory", "cannot allocate W of %llu elements",
             (unsigned long long)dim);
    } else {
        for (size_t p = 0; p < blocks; p++)
            g.current[p] = parts > 0 ? mxGetCell(data, p) : (mxArray *)data;
        if (w0 != NULL && !mxIsEmpty(w0)) memcpy(w, mxGetPr(w0), dim * sizeof(double));
        bmrm_problem *problem = NULL;
        o.status = bmrm_problem_new(dim, &problem);
        if (o.status == BMRM_OK) {
            o.status = parts > 0 ? bmrm_problem_set_partitioned_risk(problem, parts,
                                                                     partial_risk_cb, &g, false)
                                 : bmrm_problem_set_risk(problem, risk_cb, &g);
        }
        if (o.status == BMRM_OK)
            solve(&g, problem, &s, w, &o);
        else
            snprintf(o.last_error, MSG_LEN, "%s", bmrm_last_error());
        bmrm_problem_free(problem);
    }
    /* Outputs only on success: a failed run may be one whose W cannot even be
     * allocated (dim 1e15), and the error must be ours, with its identifier. */
    bool bad = g.interrupted || g.failed || o.status != BMRM_OK;
    mxArray *W = NULL, *stat = NULL;
    if (!bad) {
        W = mxCreateDoubleMatrix((mwSize)dim, 1, mxREAL);
        if (w != NULL) memcpy(mxGetPr(W), w, dim * sizeof(double));
        const char *stat_fields[] = {"Fp", "Fd", "nIter", "exitflag", "hist", "exit", "nCP",
                                     "nzA", "runtime", "oracle_calls"};
        stat = mxCreateStructMatrix(1, 1, 10, stat_fields);
        mxSetField(stat, 0, "Fp", mxCreateDoubleScalar(o.info.primal));
        mxSetField(stat, 0, "Fd", mxCreateDoubleScalar(o.info.lower_bound));
        mxSetField(stat, 0, "nIter", mxCreateDoubleScalar((double)o.info.iterations));
        mxSetField(stat, 0, "exitflag", mxCreateDoubleScalar(exitflag(o.info.exit)));
        mxSetField(stat, 0, "exit", mxCreateString(bmrm_exit_string(o.info.exit)));
        mxSetField(stat, 0, "nCP", mxCreateDoubleScalar((double)o.info.num_planes));
        mxSetField(stat, 0, "nzA", mxCreateDoubleScalar((double)o.info.active_planes));
        mxSetField(stat, 0, "runtime", mxCreateDoubleScalar(o.info.elapsed_seconds));
        mxSetField(stat, 0, "oracle_calls", mxCreateDoubleScalar((double)o.info.oracle_calls));
        const char *hist_fields[] = {"Fp", "Fd", "R", "runtime"};
        mxArray *hist = mxCreateStructMatrix(1, 1, 4, hist_fields);
        mxSetField(hist, 0, "Fp", history_column(&o, 0));
        mxSetField(hist, 0, "Fd", history_column(&o, 1));
        mxSetField(hist, 0, "R", history_column(&o, 2));
        mxSetField(hist, 0, "runtime", history_column(&o, 3));
        mxSetField(stat, 0, "hist", hist);
    }
    /* Free our state: the data the risk returned, W, the history. */
    if (g.current != NULL) {
        for (size_t p = 0; p < blocks; p++) {
            const mxArray *given = parts > 0 ? mxGetCell(data, p) : data;
            if (g.current[p] != NULL && g.current[p] != given) mxDestroyArray(g.current[p]);
        }
        free(g.current);
    }
    free(w);
    free(o.history);
    free(o.passes);
    o.history = NULL;
    if (bad) raise_if_failed(&g, &o, "bmrm");
    plhs[0] = W;
    if (nlhs > 1)
        plhs[1] = stat;
    else
        mxDestroyArray(stat);
}

/* ------------------------------------------------------------------------ */
/* [model, progress] = bmrm_mex('bcfw', param, opts)                        */

static const mxArray *handle_field(arg_error *e, const mxArray *param, const char *name,
                                   bool required) {
    const mxArray *f = mxGetField(param, 0, name);
    if (f == NULL || mxIsEmpty(f)) {
        if (required) arg_fail(e, "param.%s is missing", name);
        return NULL;
    }
    if (!mxIsFunctionHandle(f)) {
        arg_fail(e, "param.%s must be a function handle, not a %s", name, mxGetClassName(f));
        return NULL;
    }
    return f;
}

/* BCFW's per-block dual state, flat: block b has counts[b] corners; corner c
 * has labels[c], losses[c], alphas[c] and psi in index/value[start[c] ..
 * start[c + 1]). */
typedef struct {
    size_t n, total, nnz;
    size_t *counts;
    double *gaps;
    uint64_t *labels;
    double *losses, *alphas;
    size_t *start, *index;
    double *value;
} dual_state;

static void free_dual(dual_state *d) {
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
static bool export_dual(gate *g, bmrm_solver *solver, size_t n, dual_state *d) {
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
static mxArray *dual_to_mx(const dual_state *d, size_t dim, double lambda) {
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
static void dual_from_mx(arg_error *e, const mxArray *m, size_t n, size_t dim, dual_state *d) {
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

/* One lambda's results of a BCFW solve. */
typedef struct lambda_result {
    outcome o;
    double lambda;
    double *w;            /* the iterate the BCFW codes return (averaged under averaging) */
    double ell, dual;     /* ell and the dual value of that same point */
    bool have_iterate;
    double *models;       /* logged models: dim doubles each */
    double *models_ell, *models_dual, *models_pass;
    size_t num_models, cap_models;
    dual_state state;     /* the dual state after the run (export_dual) */
    bool have_state;
} lambda_result;

static void free_result(lambda_result *r) {
    free(r->o.history);
    free(r->o.passes);
    free(r->w);
    free(r->models);
    free(r->models_ell);
    free(r->models_dual);
    free(r->models_pass);
    free_dual(&r->state);
}

/* The engine's iterate hook: keeps the point, its ell and dual, and logs it. */
static int32_t iterate_cb(void *user, uint64_t pass, const double *w, size_t dim, double ell,
                          double dual) {
    gate *g = user;
    lambda_result *r = g->current_result;
    if (r == NULL || r->w == NULL) return 0;
    memcpy(r->w, w, dim * sizeof(double));
    r->ell = ell;
    r->dual = dual;
    r->have_iterate = true;
    if (g->log_every > 0 && fmod((double)pass, g->log_every) == 0.0) {
        if (r->num_models == r->cap_models) {
            size_t cap = r->cap_models > 0 ? 2 * r->cap_models : 16;
            double *m = realloc(r->models, cap * dim * sizeof(double));
            if (m != NULL) r->models = m;
            double *e = realloc(r->models_ell, cap * sizeof(double));
            if (e != NULL) r->models_ell = e;
            double *d = realloc(r->models_dual, cap * sizeof(double));
            if (d != NULL) r->models_dual = d;
            double *p = realloc(r->models_pass, cap * sizeof(double));
            if (p != NULL) r->models_pass = p;
            if (m == NULL || e == NULL || d == NULL || p == NULL) {
                fail(g, "bmrm:outOfMemory", "cannot keep the model of pass %llu",
                     (unsigned long long)pass);
                return 1;
            }
            r->cap_models = cap;
        }
        memcpy(r->models + r->num_models * dim, w, dim * sizeof(double));
        r->models_ell[r->num_models] = ell;
        r->models_dual[r->num_models] = dual;
        r->models_pass[r->num_models] = (double)pass;
        r->num_models++;
    }
    return 0;
}

/* After a run: the summary, the history and BCFW's pass rows. */
static void collect(bmrm_solver *solver, const bmrm_settings *s, outcome *o) {
    bmrm_solver_info(solver, &o->info);
    o->rows = bmrm_solver_history_len(solver);
    o->history = calloc(o->rows > 0 ? o->rows : 1, sizeof(bmrm_iteration));
    if (o->history == NULL) o->rows = 0;
    for (size_t k = 0; k < o->rows; k++) bmrm_solver_history(solver, k, &o->history[k]);
    if (s->algorithm == BMRM_ALGORITHM_BCFW &&
        bmrm_solver_bcfw_info(solver, &o->bcfw_info) == BMRM_OK) {
        o->passes = calloc(o->rows > 0 ? o->rows : 1, sizeof(bmrm_bcfw_pass));
        o->bcfw = o->passes != NULL;
        for (size_t k = 0; o->bcfw && k < o->rows; k++)
            if (bmrm_solver_bcfw_pass(solver, k, &o->passes[k]) != BMRM_OK) o->bcfw = false;
    }
}

static mxArray *result_model(const lambda_result *r, size_t dim, const double *best) {
    const char *fields[] = {"w", "ell", "dual", "lambda"};
    mxArray *model = mxCreateStructMatrix(1, 1, 4, fields);
    /* BCFW: the iterate and its own ell; a bundle method: its best point. */
    bool bcfw = r->o.bcfw && r->have_iterate;
    mxSetField(model, 0, "w", column(bcfw ? r->w : best, dim));
    mxSetField(model, 0, "ell", mxCreateDoubleScalar(bcfw ? r->ell : NAN));
    mxSetField(model, 0, "dual", mxCreateDoubleScalar(bcfw ? r->dual : r->o.info.lower_bound));
    mxSetField(model, 0, "lambda", mxCreateDoubleScalar(r->lambda));
    return model;
}

static void set_progress(mxArray *prog, size_t k, const lambda_result *r, size_t dim) {
    const outcome *o = &r->o;
    if (o->bcfw) {
        mxSetField(prog, k, "primal", pass_column(o, 0));
        mxSetField(prog, k, "dual", pass_column(o, 1));
        mxSetField(prog, k, "gap", pass_column(o, 2));
        mxSetField(prog, k, "eff_pass", pass_column(o, 3));
        mxSetField(prog, k, "time", pass_column(o, 4));
        mxSetField(prog, k, "oracle_calls", pass_column(o, 5));
        mxSetField(prog, k, "gap_estimate", pass_column(o, 6));
        mxSetField(prog, k, "exact_gap", pass_column(o, 7));
    } else {
        mxSetField(prog, k, "primal", history_column(o, 0));
        mxSetField(prog, k, "dual", history_column(o, 1));
        mxSetField(prog, k, "gap", history_column(o, 4));
        mxSetField(prog, k, "eff_pass", history_column(o, 5));
        mxSetField(prog, k, "time", history_column(o, 3));
        mxSetField(prog, k, "oracle_calls", history_column(o, 6));
    }
    mxSetField(prog, k, "exitflag", mxCreateDoubleScalar(exitflag(o->info.exit)));
    mxSetField(prog, k, "exit", mxCreateString(bmrm_exit_string(o->info.exit)));
    mxSetField(prog, k, "lambda", mxCreateDoubleScalar(r->lambda));
    /* The logged models: a dim x m matrix and their ell, dual and pass. */
    mxArray *W = mxCreateDoubleMatrix((mwSize)dim, (mwSize)r->num_models, mxREAL);
    if (r->num_models > 0) memcpy(mxGetPr(W), r->models, r->num_models * dim * sizeof(double));
    mxSetField(prog, k, "model_w", W);
    mxArray *E = mxCreateDoubleMatrix((mwSize)r->num_models, 1, mxREAL);
    mxArray *D = mxCreateDoubleMatrix((mwSize)r->num_models, 1, mxREAL);
    mxArray *P = mxCreateDoubleMatrix((mwSize)r->num_models, 1, mxREAL);
    if (r->num_models > 0) {
        memcpy(mxGetPr(E), r->models_ell, r->num_models * sizeof(double));
        memcpy(mxGetPr(D), r->models_dual, r->num_models * sizeof(double));
        memcpy(mxGetPr(P), r->models_pass, r->num_models * sizeof(double));
    }
    mxSetField(prog, k, "model_ell", E);
    mxSetField(prog, k, "model_dual", D);
    mxSetField(prog, k, "model_pass", P);
}

/* [model, progress] = bmrm_mex('bcfw', param, opts); with opts.lambdas a
 * vector, one solve per lambda (warm: the solver moves to the next lambda
 * keeping w and the w_i, gapBCFW's 'keep_primal'; else a fresh start) and
 * 1 x K struct arrays. */
static void do_bcfw(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]) {
    if (nrhs != 3) mexErrMsgIdAndTxt("bmrm:badArgument", "bcfw: 3 arguments expected");
    const mxArray *param = prhs[1], *opts = prhs[2];
    if (!mxIsStruct(param) || mxGetNumberOfElements(param) != 1)
        mexErrMsgIdAndTxt("bmrm:badArgument", "bcfw: param must be a scalar struct");
    if (!mxIsStruct(opts) || mxGetNumberOfElements(opts) != 1)
        mexErrMsgIdAndTxt("bmrm:badArgument", "bcfw: options must be a scalar struct");
    arg_error e = {"", false};
    gate g;
    memset(&g, 0, sizeof g);
    g.bcfw = 1;
    g.param = param;
    g.patterns = mxGetField(param, 0, "patterns");
    g.labels = mxGetField(param, 0, "labels");
    if (g.patterns == NULL || !mxIsCell(g.patterns)) arg_fail(&e, "param.patterns must be a cell array");
    if (g.labels == NULL || !mxIsCell(g.labels)) arg_fail(&e, "param.labels must be a cell array");
    size_t n = e.bad ? 0 : mxGetNumberOfElements(g.patterns);
    if (!e.bad && mxGetNumberOfElements(g.labels) != n)
        arg_fail(&e, "param.patterns has %llu entries but param.labels %llu",
                 (unsigned long long)n, (unsigned long long)mxGetNumberOfElements(g.labels));
    if (!e.bad && n == 0) arg_fail(&e, "no training examples (param.patterns is empty)");
    g.loss_fn = handle_field(&e, param, "lossFn", true);
    g.oracle_fn = handle_field(&e, param, "oracleFn", true);
    g.feature_fn = handle_field(&e, param, "featureFn", true);
    g.hash_fn = handle_field(&e, param, "hashFn", false);
    char alg_name[32];
    opt_str(&e, opts, "algorithm", alg_name, sizeof alg_name, "bcfw");
    bmrm_algorithm a = BMRM_ALGORITHM_BCFW;
    if (!e.bad && !algorithm_of(alg_name, &a)) arg_fail(&e, "unknown algorithm '%s'", alg_name);
    double lambda = opt_num(&e, opts, "lambda", n > 0 ? 1.0 / (double)n : 1.0);
    double dim_d = opt_num(&e, opts, "dim", 0);
    g.verb = opt_num(&e, opts, "verb", 0);
    g.hash_args = (int)opt_count(&e, opts, "hash_args", 2, 2, false, 0);
    if (!e.bad && g.hash_args < 1) arg_fail(&e, "option hash_args must be 1 or 2");
    g.log_every = (double)opt_count(&e, opts, "log_every", 0, UINT32_MAX, false, 0);
    /* 0: a fresh start per lambda; 1: keep w and the w_i (set_lambda,
     * gapBCFW's keep_primal); 2: keep the dual weights (keep_dual). */
    int warm = (int)opt_count(&e, opts, "warm", 1, 2, false, 0);
    bool want_state = opt_num(&e, opts, "export_dual", 0) != 0;
    /* The eps-approximate regularisation path from lambda_max down to
     * path_lambda_min (path_eps > 0), instead of a solve at lambda. */
    double path_eps = opt_num(&e, opts, "path_eps", 0);
    double path_lambda_min = opt_num(&e, opts, "path_lambda_min", 0);
    if (!e.bad && path_eps != 0 && !(path_eps > 0 && isfinite(path_eps) && path_lambda_min > 0 &&
                                     isfinite(path_lambda_min)))
        arg_fail(&e, "path_eps and path_lambda_min must be positive and finite");
    bmrm_settings s = settings_from(&e, opts, a, lambda);
    if (!e.bad && !(dim_d >= 1 && dim_d == floor(dim_d) && dim_d <= 9007199254740992.0 &&
                    dim_d <= (double)(SIZE_MAX / sizeof(double))))
        arg_fail(&e, "the dimension must be a positive integer of at most 2^53 (got %g)", dim_d);
    size_t dim = e.bad ? 0 : (size_t)dim_d;
    /* lambdas: the path of regularisation constants (default: lambda). */
    const mxArray *lams = mxGetField(opts, 0, "lambdas");
    size_t num_lambdas = 1;
    if (!e.bad && lams != NULL && !mxIsEmpty(lams)) {
        if (!mxIsDouble(lams) || mxIsComplex(lams) || mxIsSparse(lams))
            arg_fail(&e, "option lambdas must be a real double vector");
        else
            num_lambdas = mxGetNumberOfElements(lams);
        for (size_t k = 0; !e.bad && k < num_lambdas; k++) {
            double l = mxGetPr(lams)[k];
            if (!(l > 0) || !isfinite(l)) arg_fail(&e, "lambdas(%llu) = %g: must be positive and finite",
                                                    (unsigned long long)k + 1, l);
        }
    } else {
        lams = NULL;
    }
    /* positivity: w_j >= 0 where positivity(j) is non-zero (gapBCFW). */
    const mxArray *pos = mxGetField(opts, 0, "positivity");
    if (!e.bad && pos != NULL && !mxIsEmpty(pos)) {
        if (!(mxIsNumeric(pos) || mxIsLogical(pos)) || mxIsComplex(pos) || mxIsSparse(pos) ||
            mxGetNumberOfElements(pos) != dim)
            arg_fail(&e, "positivity must be a full real or logical vector of %llu elements",
                     (unsigned long long)dim);
        else if (a != BMRM_ALGORITHM_BCFW)
            arg_fail(&e, "positivity needs the BCFW algorithm");
    } else {
        pos = NULL;
    }
    if (!e.bad && lams != NULL && a != BMRM_ALGORITHM_BCFW)
        arg_fail(&e, "lambdas needs the BCFW algorithm");
    if (!e.bad && path_eps > 0 && (lams != NULL || a != BMRM_ALGORITHM_BCFW))
        arg_fail(&e, "the regularisation path needs the BCFW algorithm and no lambdas");
    s.path_a = opt_num(&e, opts, "path_a", s.path_a);
    const mxArray *init_mx = mxGetField(opts, 0, "dual");
    dual_state init;
    memset(&init, 0, sizeof init);
    bool have_init = false;
    if (!e.bad && init_mx != NULL && !mxIsEmpty(init_mx)) {
        if (a != BMRM_ALGORITHM_BCFW || path_eps > 0)
            arg_fail(&e, "a warm-start state needs the BCFW algorithm and no path");
        if (!e.bad) dual_from_mx(&e, init_mx, n, dim, &init);
        have_init = !e.bad;
    }
    if (e.bad) {
        free_dual(&init);
        mexErrMsgIdAndTxt("bmrm:badArgument", "bcfw: %s", e.message);
    }

    g.dim = dim;
    g.truth = calloc(n, sizeof(sparse_vec));
    double *w = calloc(dim, sizeof(double));
    double *lower = pos != NULL ? malloc(dim * sizeof(double)) : NULL;
    lambda_result *res = calloc(num_lambdas, sizeof(lambda_result));
    bool ok = g.truth != NULL && w != NULL && res != NULL && (pos == NULL || lower != NULL);
    for (size_t k = 0; ok && k < num_lambdas; k++) {
        res[k].lambda = lams != NULL ? mxGetPr(lams)[k] : lambda;
        res[k].w = calloc(dim, sizeof(double));
        ok = res[k].w != NULL;
    }
    size_t done = 0;
    bmrm_status status = BMRM_OK;
    char last_error[MSG_LEN] = "";
    bmrm_path *path = NULL;
    if (!ok) {
        fail(&g, "bmrm:outOfMemory", "cannot allocate the model (dimension %llu)",
             (unsigned long long)dim);
    } else {
        if (pos != NULL) {
            mxArray *as_double = NULL;
            mxArray *in[1] = {(mxArray *)pos};
            /* any numeric class: compare each element with 0 through double */
            if (mexCallMATLAB(1, &as_double, 1, in, "double") != 0 || as_double == NULL) {
                fail(&g, "bmrm:badArgument", "positivity: cannot convert to double");
            } else {
                const double *pv = mxGetPr(as_double);
                for (size_t j = 0; j < dim; j++) lower[j] = pv[j] != 0.0 ? 0.0 : -INFINITY;
                mxDestroyArray(as_double);
            }
        }
        bmrm_problem *problem = NULL;
        status = bmrm_problem_new(dim, &problem);
        if (status == BMRM_OK)
            status = bmrm_problem_set_max_oracle(problem, n, bcfw_oracle_cb, &g, false);
        if (status != BMRM_OK) snprintf(last_error, MSG_LEN, "%s", bmrm_last_error());
        s.progress = progress_cb;
        s.progress_user = &g;
        if (a == BMRM_ALGORITHM_BCFW) {
            s.bcfw_iterate = iterate_cb;
            s.bcfw_iterate_user = &g;
        }
        bmrm_solver *solver = NULL;
        for (size_t k = 0; status == BMRM_OK && !g.failed && k < num_lambdas; k++) {
            if (path_eps > 0 && k > 0) break;
            if (solver == NULL || warm != 1) {
                bmrm_solver_free(solver);
                solver = NULL;
                s.lambda = res[k].lambda;
                memset(w, 0, dim * sizeof(double));
                status = bmrm_solver_new(problem, &s, &solver);
                if (status == BMRM_OK && pos != NULL)
                    status = bmrm_solver_set_bounds(solver, lower, NULL, dim);
                const dual_state *start = NULL;
                if (k == 0 && have_init) start = &init;
                if (k > 0 && warm == 2) {
                    if (!res[k - 1].have_state) {
                        fail(&g, "bmrm:unsupported",
                             "keeping the dual needs the corners kept (useCache or pairwise/away "
                             "steps)");
                        break;
                    }
                    start = &res[k - 1].state;
                }
                if (status == BMRM_OK && start != NULL)
                    status = bmrm_solver_bcfw_set_dual(
                        solver, n, start->counts, start->gaps, start->labels, start->losses,
                        start->alphas, start->start, start->index, start->value, w, dim);
            } else {
                status = bmrm_solver_set_lambda(solver, res[k].lambda);
            }
            if (status != BMRM_OK) {
                snprintf(last_error, MSG_LEN, "%s", bmrm_last_error());
                break;
            }
            if (path_eps > 0) {
                status = bmrm_solver_bcfw_path(solver, path_eps, path_lambda_min, 0, &path);
                if (status != BMRM_OK) snprintf(last_error, MSG_LEN, "%s", bmrm_last_error());
                done = 0;
                break;
            }
            g.current_result = &res[k];
            g.iteration = 1;
            status = bmrm_solver_run(solver, w, dim);
            if (status != BMRM_OK) snprintf(last_error, MSG_LEN, "%s", bmrm_last_error());
            collect(solver, &s, &res[k].o);
            g.current_result = NULL;
            done = k + 1;
            if (status == BMRM_OK && !g.failed && (want_state || warm == 2))
                res[k].have_state = export_dual(&g, solver, n, &res[k].state);
        }
        bmrm_solver_free(solver);
        bmrm_problem_free(problem);
    }
    bool bad = g.interrupted || g.failed || status != BMRM_OK;
    mxArray *model = NULL, *prog = NULL, *states = NULL;
    if (!bad && path_eps > 0) {
        /* One model per breakpoint; prog: the breakpoints' figures. */
        size_t B = bmrm_path_len(path);
        const char *model_fields[] = {"w", "ell", "dual", "lambda"};
        model = mxCreateStructMatrix(1, (mwSize)B, 4, model_fields);
        const char *bp_fields[] = {"lambda", "lambda_low", "gap", "primal", "passes",
                                   "oracle_calls", "exit"};
        prog = mxCreateStructMatrix(1, (mwSize)B, 7, bp_fields);
        for (size_t k = 0; k < B; k++) {
            bmrm_breakpoint b;
            mxArray *W = mxCreateDoubleMatrix((mwSize)dim, 1, mxREAL);
            bmrm_path_breakpoint(path, k, &b, mxGetPr(W), dim);
            double norm2 = 0;
            for (size_t j = 0; j < dim; j++) norm2 += mxGetPr(W)[j] * mxGetPr(W)[j];
            double dual = b.primal - b.gap;
            mxSetField(model, k, "w", W);
            /* ell - lambda/2 ||w||^2 is the dual without a box */
            mxSetField(model, k, "ell", mxCreateDoubleScalar(pos == NULL ? dual + 0.5 * b.lambda * norm2 : NAN));
            mxSetField(model, k, "dual", mxCreateDoubleScalar(dual));
            mxSetField(model, k, "lambda", mxCreateDoubleScalar(b.lambda));
            mxSetField(prog, k, "lambda", mxCreateDoubleScalar(b.lambda));
            mxSetField(prog, k, "lambda_low", mxCreateDoubleScalar(b.lambda_low));
            mxSetField(prog, k, "gap", mxCreateDoubleScalar(b.gap));
            mxSetField(prog, k, "primal", mxCreateDoubleScalar(b.primal));
            mxSetField(prog, k, "passes", mxCreateDoubleScalar((double)b.passes));
            mxSetField(prog, k, "oracle_calls", mxCreateDoubleScalar((double)b.oracle_calls));
            mxSetField(prog, k, "exit", mxCreateString(bmrm_exit_string(b.exit)));
        }
        states = mxCreateCellMatrix(1, 0);
    } else if (!bad) {
        states = mxCreateCellMatrix(1, (mwSize)done);
        for (size_t k = 0; k < done; k++)
            if (res[k].have_state) mxSetCell(states, k, dual_to_mx(&res[k].state, dim, res[k].lambda));
        const char *prog_fields[] = {"primal", "dual", "gap", "eff_pass", "time", "oracle_calls",
                                     "gap_estimate", "exact_gap", "exitflag", "exit", "lambda",
                                     "model_w", "model_ell", "model_dual", "model_pass"};
        prog = mxCreateStructMatrix(1, (mwSize)done, 15, prog_fields);
        const char *model_fields[] = {"w", "ell", "dual", "lambda"};
        model = mxCreateStructMatrix(1, (mwSize)done, 4, model_fields);
        for (size_t k = 0; k < done; k++) {
            mxArray *one = result_model(&res[k], dim, w);
            for (int f = 0; f < 4; f++) {
                mxSetField(model, k, model_fields[f], mxDuplicateArray(mxGetField(one, 0, model_fields[f])));
            }
            mxDestroyArray(one);
            set_progress(prog, k, &res[k], dim);
        }
    }
    outcome last;
    memset(&last, 0, sizeof last);
    last.status = status;
    snprintf(last.last_error, MSG_LEN, "%s", last_error);
    if (g.truth != NULL) {
        for (size_t i = 0; i < n; i++) {
            free(g.truth[i].index);
            free(g.truth[i].value);
        }
        free(g.truth);
    }
    if (res != NULL) {
        for (size_t k = 0; k < num_lambdas; k++) free_result(&res[k]);
        free(res);
    }
    free(w);
    free(lower);
    free_dual(&init);
    bmrm_path_free(path);
    if (bad) raise_if_failed(&g, &last, "bcfw");
    plhs[0] = model;
    if (nlhs > 1)
        plhs[1] = prog;
    else
        mxDestroyArray(prog);
    if (nlhs > 2)
        plhs[2] = states;
    else
        mxDestroyArray(states);
}

/* ------------------------------------------------------------------------ */

void mexFunction(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]) {
    char cmd[16] = "";
    if (nrhs < 1 || !mxIsChar(prhs[0]) || mxGetString(prhs[0], cmd, sizeof cmd) != 0)
        mexErrMsgIdAndTxt("bmrm:badArgument",
                          "bmrm_mex is the gateway of bmrm.m and bcfw.m: call those");
    if (strcmp(cmd, "version") == 0) {
        plhs[0] = mxCreateString(bmrm_version());
    } else if (strcmp(cmd, "bmrm") == 0) {
        do_bmrm(nlhs, plhs, nrhs, prhs);
    } else if (strcmp(cmd, "bcfw") == 0) {
        do_bcfw(nlhs, plhs, nrhs, prhs);
    } else {
        mexErrMsgIdAndTxt("bmrm:badArgument", "bmrm_mex: unknown command '%s'", cmd);
    }
}
