/* mex_bcfw.c: The BCFW gateway: [model, progress, states] = bmrm_mex('bcfw', ...). */
#include "bmrm_mex.h"

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
    /* Whether every oracle answer was trusted, so the gap certifies (ABI 4). */
    mxSetField(prog, k, "certified", mxCreateLogicalScalar(o->info.certified != 0));
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
void do_bcfw(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]) {
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
                                     "model_w", "model_ell", "model_dual", "model_pass",
                                     "certified"};
        prog = mxCreateStructMatrix(1, (mwSize)done, 16, prog_fields);
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
