/* mex_graph.c: graph problems: [W, stat, pred] = bmrm_mex('graph', data, lambda, opts, decoder).
 *
 * data's fields (bmrm_graph.m checks them first): node_start, edge_start
 * (m + 1 offsets from 0), states, labels (1-based), node_features (n x D),
 * edges (E x 2, 1-based node indices within the example), edge_features
 * (E x F), edge_kind, grids (n x 4: origin_x origin_y width height), loss,
 * bias, engine. decoder is [] or a handle decoder(potentials) returning the
 * 1-based labels; it is registered as not thread-safe, so it runs on
 * MATLAB's thread. */
#include "bmrm_mex.h"

/* The arrays of one call, freed together. */
typedef struct {
    size_t *node_start, *edge_start;
    uint32_t *states, *labels, *edges;
    float *x, *ex;
    bmrm_grid *grids;
} graph_arrays;

static void free_arrays(graph_arrays *a) {
    free(a->node_start);
    free(a->edge_start);
    free(a->states);
    free(a->labels);
    free(a->edges);
    free(a->x);
    free(a->ex);
    free(a->grids);
}

/* A real double field (NULL when absent or empty). */
static const double *field(arg_error *e, const mxArray *s, const char *name, size_t *rows,
                           size_t *cols) {
    const mxArray *f = mxGetField(s, 0, name);
    *rows = 0;
    *cols = 0;
    if (f == NULL || mxIsEmpty(f)) return NULL;
    if (!mxIsDouble(f) || mxIsComplex(f) || mxIsSparse(f)) {
        arg_fail(e, "data.%s must be a full real double array", name);
        return NULL;
    }
    *rows = mxGetM(f);
    *cols = mxGetN(f);
    return mxGetPr(f);
}

static bool whole(double v, double lo, double hi) { return v == floor(v) && v >= lo && v <= hi; }

/* An offsets field: m + 1 non-decreasing whole numbers from 0. */
static size_t *offsets(arg_error *e, const mxArray *s, const char *name, size_t *count) {
    size_t r, c;
    const double *p = field(e, s, name, &r, &c);
    if (e->bad) return NULL;
    if (p == NULL || r * c < 2) {
        arg_fail(e, "data.%s must hold m + 1 >= 2 offsets", name);
        return NULL;
    }
    size_t *out = calloc(r * c, sizeof(size_t));
    if (out == NULL) return NULL;
    for (size_t k = 0; k < r * c; k++) {
        if (!whole(p[k], k == 0 ? 0 : p[k - 1], 4503599627370496.0) || (k == 0 && p[0] != 0)) {
            arg_fail(e, "data.%s(%llu) = %g: the offsets start at 0 and never decrease", name,
                     (unsigned long long)k + 1, p[k]);
            break;
        }
        out[k] = (size_t)p[k];
    }
    *count = r * c;
    return out;
}

/* Fills g from data (arrays in a); returns false with e set. */
static bool read_graph(arg_error *e, const mxArray *d, graph_arrays *a, bmrm_graph_data *g) {
    *g = bmrm_graph_data_default();
    size_t m1 = 0, m1e = 0, r, c;
    a->node_start = offsets(e, d, "node_start", &m1);
    if (!e->bad) a->edge_start = offsets(e, d, "edge_start", &m1e);
    if (e->bad) return false;
    if (m1 != m1e) return arg_fail(e, "data.node_start and data.edge_start differ in length"), false;
    size_t n = a->node_start[m1 - 1], ne = a->edge_start[m1 - 1];
    const double *st = field(e, d, "states", &r, &c);
    if (!e->bad && (st == NULL || r * c != n))
        arg_fail(e, "data.states must hold %llu state counts", (unsigned long long)n);
    const double *lb = field(e, d, "labels", &r, &c);
    if (!e->bad && (lb == NULL || r * c != n))
        arg_fail(e, "data.labels must hold %llu labels", (unsigned long long)n);
    if (e->bad) return false;
    a->states = calloc(n + 1, sizeof(uint32_t));
    a->labels = calloc(n + 1, sizeof(uint32_t));
    a->edges = calloc(2 * ne + 1, sizeof(uint32_t));
    if (!a->states || !a->labels || !a->edges) return arg_fail(e, "out of memory"), false;
    for (size_t i = 0; i < n; i++) {
        if (!whole(st[i], 1, 4294967295.0))
            return arg_fail(e, "data.states(%llu) = %g is not a positive count", (unsigned long long)i + 1, st[i]), false;
        if (!whole(lb[i], 1, st[i]))
            return arg_fail(e, "data.labels(%llu) = %g is not in 1..%g", (unsigned long long)i + 1, lb[i], st[i]), false;
        a->states[i] = (uint32_t)st[i];
        a->labels[i] = (uint32_t)lb[i] - 1;
    }
    const double *x = field(e, d, "node_features", &r, &c);
    if (e->bad) return false;
    if (x != NULL) {
        if (r != n) return arg_fail(e, "data.node_features has %llu rows, expected %llu (one a node)", (unsigned long long)r, (unsigned long long)n), false;
        a->x = calloc(r * c, sizeof(float));
        if (!a->x) return arg_fail(e, "out of memory"), false;
        for (size_t i = 0; i < r; i++)
            for (size_t j = 0; j < c; j++) a->x[i * c + j] = (float)x[j * r + i];
        g->node_dim = c;
        g->node_values = a->x;
    }
    const double *ed = field(e, d, "edges", &r, &c);
    if (e->bad) return false;
    if (ne > 0 && (ed == NULL || r != ne || c != 2))
        return arg_fail(e, "data.edges must be %llu x 2", (unsigned long long)ne), false;
    for (size_t k = 0; k < ne; k++) {
        for (size_t j = 0; j < 2; j++) {
            double v = ed[j * ne + k];
            if (!whole(v, 1, 4294967296.0))
                return arg_fail(e, "data.edges(%llu, %llu) = %g is not a node (1-based)", (unsigned long long)k + 1, (unsigned long long)j + 1, v), false;
            a->edges[2 * k + j] = (uint32_t)(v - 1);
        }
    }
    char kind[32], loss[32], engine[32];
    opt_str(e, d, "edge_kind", kind, sizeof kind, "constant");
    opt_str(e, d, "loss", loss, sizeof loss, "hamming");
    opt_str(e, d, "engine", engine, sizeof engine, "auto");
    if (e->bad) return false;
    const double *gx = field(e, d, "edge_features", &r, &c);
    if (e->bad) return false;
    if (gx != NULL) {
        if (r != ne) return arg_fail(e, "data.edge_features has %llu rows, expected %llu (one an edge)", (unsigned long long)r, (unsigned long long)ne), false;
        a->ex = calloc(r * c, sizeof(float));
        if (!a->ex) return arg_fail(e, "out of memory"), false;
        for (size_t i = 0; i < r; i++)
            for (size_t j = 0; j < c; j++) a->ex[i * c + j] = (float)gx[j * r + i];
        g->edge_dim = c;
        g->edge_values = a->ex;
    }
    const double *gr = field(e, d, "grids", &r, &c);
    if (e->bad) return false;
    if (gr != NULL) {
        if (r != n || c != 4) return arg_fail(e, "data.grids must be %llu x 4", (unsigned long long)n), false;
        a->grids = calloc(n, sizeof(bmrm_grid));
        if (!a->grids) return arg_fail(e, "out of memory"), false;
        for (size_t i = 0; i < n; i++)
            a->grids[i] = (bmrm_grid){(int32_t)gr[i], (int32_t)gr[n + i], (uint32_t)gr[2 * n + i], (uint32_t)gr[3 * n + i]};
        g->grids = a->grids;
    }
    if (strcmp(kind, "constant") == 0) g->edge_features = BMRM_EDGE_FEATURES_CONSTANT;
    else if (strcmp(kind, "dense") == 0) g->edge_features = BMRM_EDGE_FEATURES_DENSE;
    else if (strcmp(kind, "potts") == 0) g->edge_features = BMRM_EDGE_FEATURES_POTTS;
    else if (strcmp(kind, "displacement") == 0) g->edge_features = BMRM_EDGE_FEATURES_DISPLACEMENT;
    else return arg_fail(e, "data.edge_kind '%s' is not constant, dense, potts or displacement", kind), false;
    if (strcmp(loss, "hamming") == 0) g->normalise = false;
    else if (strcmp(loss, "normalised-hamming") == 0) g->normalise = true;
    else return arg_fail(e, "data.loss '%s' is not hamming or normalised-hamming", loss), false;
    /* The library resolves the name (its engine registry; '_' for '-'). */
    bmrm_engine engine_value;
    if (bmrm_graph_engine_from_name(engine, &engine_value) != BMRM_OK)
        return arg_fail(e, "data.engine '%s': %s", engine, bmrm_last_error()), false;
    g->engine = engine_value;
    g->bias = opt_num(e, d, "bias", 1) != 0;
    g->num_examples = m1 - 1;
    g->node_start = a->node_start;
    g->edge_start = a->edge_start;
    g->states = a->states;
    g->labels = a->labels;
    g->edges = a->edges;
    return !e->bad;
}

/* The MATLAB decoder: decoder(potentials) with the potentials as a struct
 * (example, states, edges 1-based; unary{i}(s); pairwise{e}(a, b)). */
static int32_t graph_decoder_cb(void *user, const bmrm_potentials *p, uint32_t *labels,
                                bool *exact) {
    gate *g = user;
    const char *names[] = {"example", "states", "edges", "unary", "pairwise"};
    mxArray *s = mxCreateStructMatrix(1, 1, 5, names);
    size_t n = p->num_nodes, ne = p->num_edges;
    mxSetField(s, 0, "example", mxCreateDoubleScalar((double)p->example + 1));
    mxArray *st = mxCreateDoubleMatrix((mwSize)n, 1, mxREAL);
    mxArray *un = mxCreateCellMatrix((mwSize)n, 1);
    for (size_t i = 0; i < n; i++) {
        mxGetPr(st)[i] = p->states[i];
        mxArray *u = mxCreateDoubleMatrix(p->states[i], 1, mxREAL);
        memcpy(mxGetPr(u), p->unary + p->unary_start[i], p->states[i] * sizeof(double));
        mxSetCell(un, (mwIndex)i, u);
    }
    mxArray *ed = mxCreateDoubleMatrix((mwSize)ne, 2, mxREAL);
    mxArray *pw = mxCreateCellMatrix((mwSize)ne, 1);
    for (size_t k = 0; k < ne; k++) {
        uint32_t a = p->edges[2 * k], b = p->edges[2 * k + 1];
        mxGetPr(ed)[k] = a + 1.0;
        mxGetPr(ed)[ne + k] = b + 1.0;
        if (p->pairwise == NULL) continue; /* displacement edges: no tables */
        size_t sa = p->states[a], sb = p->states[b];
        mxArray *t = mxCreateDoubleMatrix((mwSize)sa, (mwSize)sb, mxREAL);
        for (size_t i = 0; i < sa; i++)
            for (size_t j = 0; j < sb; j++)
                mxGetPr(t)[j * sa + i] = p->pairwise[p->pairwise_start[k] + i * sb + j];
        mxSetCell(pw, (mwIndex)k, t);
    }
    mxSetField(s, 0, "states", st);
    mxSetField(s, 0, "edges", ed);
    mxSetField(s, 0, "unary", un);
    mxSetField(s, 0, "pairwise", pw);
    mxArray *in[2] = {(mxArray *)g->decoder, s}, *out[1];
    bool ok = call(g, "decoder(potentials)", 1, out, 2, in);
    mxDestroyArray(s);
    if (!ok) return 1;
    const mxArray *y = out[0];
    bool good = mxIsDouble(y) && !mxIsComplex(y) && !mxIsSparse(y) && mxGetNumberOfElements(y) == n;
    if (!good)
        fail(g, "bmrm:badOutput", "decoder(potentials) for example %llu must return %llu labels (a double vector)",
             (unsigned long long)p->example + 1, (unsigned long long)n);
    for (size_t i = 0; good && i < n; i++) {
        double v = mxGetPr(y)[i];
        if (!whole(v, 1, p->states[i])) {
            fail(g, "bmrm:badOutput", "decoder(potentials): example %llu, node %llu: label %g is not in 1..%u",
                 (unsigned long long)p->example + 1, (unsigned long long)i + 1, v, p->states[i]);
            good = false;
        } else {
            labels[i] = (uint32_t)v - 1;
        }
    }
    mxDestroyArray(out[0]);
    *exact = true;
    return good ? 0 : 1;
}

void do_graph(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]) {
    if (nrhs != 5) mexErrMsgIdAndTxt("bmrm:badArgument", "bmrm_graph: 5 arguments expected");
    const mxArray *data = prhs[1], *opts = prhs[3], *decoder = prhs[4];
    if (!mxIsStruct(data) || mxGetNumberOfElements(data) != 1)
        mexErrMsgIdAndTxt("bmrm:badArgument", "bmrm_graph: data must be a struct");
    if (!mxIsDouble(prhs[2]) || mxGetNumberOfElements(prhs[2]) != 1)
        mexErrMsgIdAndTxt("bmrm:badArgument", "bmrm_graph: lambda must be a real double scalar");
    if (!mxIsStruct(opts)) mexErrMsgIdAndTxt("bmrm:badArgument", "bmrm_graph: options must be a struct");
    if (!mxIsEmpty(decoder) && !mxIsFunctionHandle(decoder))
        mexErrMsgIdAndTxt("bmrm:badArgument", "bmrm_graph: the decoder must be a function handle or []");
    double lambda = mxGetScalar(prhs[2]);
    arg_error e = {"", false};
    char alg_name[32];
    opt_str(&e, opts, "algorithm", alg_name, sizeof alg_name, "bmrm");
    bmrm_algorithm alg = BMRM_ALGORITHM_BMRM;
    if (!e.bad && !algorithm_of(alg_name, &alg))
        arg_fail(&e, "unknown Algorithm '%s' (bmrm, proxbmrm, pbmrm, proxpbmrm, cp, sgd or bcfw)", alg_name);
    double verb = opt_num(&e, opts, "verb", 0);
    bool positivity = opt_num(&e, opts, "positivity", 0) != 0;
    bmrm_settings s = settings_from(&e, opts, alg, lambda);
    graph_arrays a;
    memset(&a, 0, sizeof a);
    bmrm_graph_data gd;
    if (!e.bad) read_graph(&e, data, &a, &gd);
    if (e.bad) {
        free_arrays(&a);
        mexErrMsgIdAndTxt("bmrm:badArgument", "bmrm_graph: %s", e.message);
    }

    gate g;
    memset(&g, 0, sizeof g);
    g.verb = verb;
    g.decoder = mxIsEmpty(decoder) ? NULL : decoder;
    outcome o;
    memset(&o, 0, sizeof o);
    bmrm_problem *problem = NULL;
    o.status = g.decoder ? bmrm_problem_new_graph_decoder(&gd, graph_decoder_cb, &g, false, &problem)
                         : bmrm_problem_new_graph(&gd, &problem);
    double *w = NULL, *lower = NULL;
    size_t *positive = NULL, num_positive = 0;
    if (o.status == BMRM_OK) o.status = bmrm_problem_dim(problem, &g.dim);
    /* The weights that must stay >= 0 (stat.positivity), and with
       options.Positivity the bounds W(positivity) >= 0. */
    if (o.status == BMRM_OK)
        o.status = bmrm_graph_positivity_coordinates(problem, NULL, 0, &num_positive);
    if (o.status == BMRM_OK) {
        positive = calloc(num_positive + 1, sizeof(size_t));
        lower = calloc(g.dim + 1, sizeof(double));
        if (positive == NULL || lower == NULL) o.status = BMRM_ERROR_OUT_OF_MEMORY;
    }
    if (o.status == BMRM_OK)
        o.status = bmrm_graph_positivity_coordinates(problem, positive, num_positive, &num_positive);
    if (o.status == BMRM_OK && positivity) {
        for (size_t j = 0; j < g.dim; j++) lower[j] = -INFINITY;
        for (size_t k = 0; k < num_positive; k++) lower[positive[k]] = 0.0;
        g.lower = lower;
    }
    if (o.status == BMRM_OK) {
        w = calloc(g.dim ? g.dim : 1, sizeof(double));
        if (w == NULL) fail(&g, "bmrm:outOfMemory", "cannot allocate W");
        else solve(&g, problem, &s, w, &o);
    } else {
        snprintf(o.last_error, MSG_LEN, "%s (the library counts examples, nodes and edges from 0)",
                 bmrm_last_error());
    }
    bool bad = g.interrupted || g.failed || o.status != BMRM_OK;
    size_t m = gd.num_examples;
    mxArray *W = NULL, *stat = NULL, *pred = NULL;
    if (!bad) {
        W = column(w, g.dim);
        const char *fields[] = {"Fp", "Fd", "nIter", "exitflag", "exit", "positivity"};
        stat = mxCreateStructMatrix(1, 1, 6, fields);
        mxArray *pos = mxCreateDoubleMatrix((mwSize)num_positive, 1, mxREAL);
        for (size_t k = 0; k < num_positive; k++) mxGetPr(pos)[k] = positive[k] + 1.0;
        mxSetField(stat, 0, "positivity", pos);
        mxSetField(stat, 0, "Fp", mxCreateDoubleScalar(o.info.primal));
        mxSetField(stat, 0, "Fd", mxCreateDoubleScalar(o.info.lower_bound));
        mxSetField(stat, 0, "nIter", mxCreateDoubleScalar((double)o.info.iterations));
        mxSetField(stat, 0, "exitflag", mxCreateDoubleScalar(exitflag(o.info.exit)));
        mxSetField(stat, 0, "exit", mxCreateString(bmrm_exit_string(o.info.exit)));
        pred = mxCreateCellMatrix((mwSize)m, 1);
        for (size_t i = 0; i < m && !bad; i++) {
            size_t n = a.node_start[i + 1] - a.node_start[i];
            uint32_t *y = calloc(n + 1, sizeof(uint32_t));
            bool exact = false;
            o.status = y ? bmrm_graph_predict(problem, w, g.dim, i, y, n, &exact) : BMRM_ERROR_OUT_OF_MEMORY;
            if (o.status != BMRM_OK) snprintf(o.last_error, MSG_LEN, "%s", bmrm_last_error());
            bad = o.status != BMRM_OK || g.failed || g.interrupted;
            mxArray *col = mxCreateDoubleMatrix((mwSize)n, 1, mxREAL);
            for (size_t k = 0; y && k < n; k++) mxGetPr(col)[k] = y[k] + 1.0;
            mxSetCell(pred, (mwIndex)i, col);
            free(y);
        }
        if (bad) {
            mxDestroyArray(W);
            mxDestroyArray(stat);
            mxDestroyArray(pred);
        }
    }
    bmrm_problem_free(problem);
    free_arrays(&a);
    free(w);
    free(lower);
    free(positive);
    free(o.history);
    free(o.passes);
    if (bad) raise_if_failed(&g, &o, "bmrm_graph");
    plhs[0] = W;
    if (nlhs > 1) plhs[1] = stat; else mxDestroyArray(stat);
    if (nlhs > 2) plhs[2] = pred; else mxDestroyArray(pred);
}
