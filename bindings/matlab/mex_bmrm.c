/* mex_bmrm.c: The bundle methods' gateway: [W, stat] = bmrm_mex('bmrm', ...). */
#include "bmrm_mex.h"

void do_bmrm(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]) {
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
                                     "nzA", "runtime", "oracle_calls", "certified"};
        stat = mxCreateStructMatrix(1, 1, 11, stat_fields);
        mxSetField(stat, 0, "Fp", mxCreateDoubleScalar(o.info.primal));
        mxSetField(stat, 0, "Fd", mxCreateDoubleScalar(o.info.lower_bound));
        mxSetField(stat, 0, "nIter", mxCreateDoubleScalar((double)o.info.iterations));
        mxSetField(stat, 0, "exitflag", mxCreateDoubleScalar(exitflag(o.info.exit)));
        mxSetField(stat, 0, "exit", mxCreateString(bmrm_exit_string(o.info.exit)));
        mxSetField(stat, 0, "nCP", mxCreateDoubleScalar((double)o.info.num_planes));
        mxSetField(stat, 0, "nzA", mxCreateDoubleScalar((double)o.info.active_planes));
        mxSetField(stat, 0, "runtime", mxCreateDoubleScalar(o.info.elapsed_seconds));
        mxSetField(stat, 0, "oracle_calls", mxCreateDoubleScalar((double)o.info.oracle_calls));
        /* Whether the gap certifies (ABI 4; always for risk callbacks). */
        mxSetField(stat, 0, "certified", mxCreateLogicalScalar(o.info.certified != 0));
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
