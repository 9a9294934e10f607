/* mex_options.c: Reading opts into bmrm_settings. */
#include "bmrm_mex.h"

/* ------------------------------------------------------------------------ */
/* Reading opts (struct fields checked by bmrm.m / bcfw.m; checked again).  */


void arg_fail(arg_error *e, const char *fmt, ...) {
    if (e->bad) return;
    e->bad = true;
    va_list args;
    va_start(args, fmt);
    vsnprintf(e->message, MSG_LEN, fmt, args);
    va_end(args);
}

double opt_num(arg_error *e, const mxArray *opts, const char *name, double dflt) {
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

void opt_str(arg_error *e, const mxArray *opts, const char *name, char *buf, size_t len,
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
uint64_t opt_count(arg_error *e, const mxArray *opts, const char *name, uint64_t dflt,
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

bool algorithm_of(const char *name, bmrm_algorithm *a) {
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
bmrm_settings settings_from(arg_error *e, const mxArray *opts, bmrm_algorithm a,
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
    s.multi_plane = opt_num(e, opts, "multi_plane", s.multi_plane) != 0;
    s.mp_timed = opt_num(e, opts, "mp_timed", s.mp_timed) != 0;
    s.mp_approx_passes =
        (uint32_t)opt_count(e, opts, "mp_approx_passes", s.mp_approx_passes, UINT32_MAX, false, 0);
    s.mp_inactive_passes = (uint32_t)opt_count(e, opts, "mp_inactive_passes",
                                               s.mp_inactive_passes, UINT32_MAX, false, 0);
    s.mp_block_steps =
        (uint32_t)opt_count(e, opts, "mp_block_steps", s.mp_block_steps, UINT32_MAX, false, 0);
    s.mini_batch = (uint32_t)opt_count(e, opts, "mini_batch", s.mini_batch, UINT32_MAX, false, 0);
    return s;
}
