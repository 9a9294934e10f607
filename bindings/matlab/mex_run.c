/* mex_run.c: Running a solve and collecting its results (no MATLAB error raised). */
#include "bmrm_mex.h"

void solve(gate *g, bmrm_problem *p, bmrm_settings *s, double *w, outcome *o) {
    memset(o, 0, sizeof *o);
    s->progress = progress_cb;
    s->progress_user = g;
    bmrm_solver *solver = NULL;
    o->status = bmrm_solver_new(p, s, &solver);
    if (o->status != BMRM_OK) {
        snprintf(o->last_error, MSG_LEN, "%s", bmrm_last_error());
        return;
    }
    if (g->lower != NULL) {
        o->status = bmrm_solver_set_bounds(solver, g->lower, NULL, g->dim);
        if (o->status != BMRM_OK) {
            snprintf(o->last_error, MSG_LEN, "%s", bmrm_last_error());
            bmrm_solver_free(solver);
            return;
        }
    }
    g->iteration = 1;
    o->status = bmrm_solver_run(solver, w, g->dim);
    if (o->status != BMRM_OK) snprintf(o->last_error, MSG_LEN, "%s", bmrm_last_error());
    collect(solver, s, o);
    bmrm_solver_free(solver);
}

/* After a run: the summary, the history and BCFW's pass rows. */
void collect(bmrm_solver *solver, const bmrm_settings *s, outcome *o) {
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

/* The toolbox's exitflag: 1 TolRel, 2 TolAbs, 0 MaxIter, 3 TimeLimit. */
double exitflag(bmrm_exit e) {
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

mxArray *history_column(const outcome *o, int which) {
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

mxArray *pass_column(const outcome *o, int which) {
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
void raise_if_failed(const gate *g, const outcome *o, const char *who) {
    if (g->interrupted)
        mexErrMsgIdAndTxt("bmrm:interrupted",
                          "%s: interrupted (Ctrl-C) at iteration %llu; the solve stopped cleanly",
                          who, (unsigned long long)g->iteration);
    if (g->failed) mexErrMsgIdAndTxt(g->identifier, "%s: %s", who, g->message);
    if (o->status != BMRM_OK)
        mexErrMsgIdAndTxt(status_id(o->status), "%s: %s", who, o->last_error);
}
