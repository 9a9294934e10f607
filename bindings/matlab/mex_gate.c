/* mex_gate.c: Calls into MATLAB without raising, and reading the user's outputs. */
#include "bmrm_mex.h"

void fail(gate *g, const char *id, const char *fmt, ...) {
    if (g->failed) return;
    g->failed = true;
    snprintf(g->identifier, ID_LEN, "%s", id);
    va_list args;
    va_start(args, fmt);
    vsnprintf(g->message, MSG_LEN, fmt, args);
    va_end(args);
}

bool interrupt_pending(gate *g) {
#if defined(BMRM_MEX_OCTAVE)
    if (bmrm_octave_interrupt_pending()) g->interrupted = true;
#else
    if (utIsInterruptPending()) g->interrupted = true;
#endif
    return g->interrupted;
}

/* feval(in[0], in[1..]) with nout outputs. On failure records "<what>: <the
 * user's message>" and returns false. */
bool call(gate *g, const char *what, int nout, mxArray **out, int nin, mxArray **in) {
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

mxArray *column(const double *w, size_t dim) {
    mxArray *a = mxCreateDoubleMatrix((mwSize)dim, 1, mxREAL);
    memcpy(mxGetPr(a), w, dim * sizeof(double));
    return a;
}

/* A real numeric finite scalar, or a failure naming `what`. */
bool scalar_out(gate *g, const mxArray *a, const char *what, double *v) {
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
bool vector_out(gate *g, const mxArray *v, const char *what, size_t dim, double sign,
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
