/*
 * Graph problems from C (bmrm_problem_new_graph, _graph_decoder,
 * bmrm_graph_predict): a C decoder over the library's potentials gives the
 * built-in engine's solves bit for bit; a decoder that returns
 * non-maximisers gives a run whose bound stays below the optimum; bad
 * graphs get their status and a message naming the example and the node or
 * edge; bmrm_graph_positivity_coordinates lists the Potts weights. Run by
 * tests/ffi.rs, under valgrind and under the sanitizers.
 * Exits 0 when every check passed.
 */
#include <sys/resource.h>

#include "common.h"

#define M 6
#define D 2

/* Six chains of 2..4 binary nodes with two features each. */
typedef struct {
    size_t node_start[M + 1], edge_start[M + 1];
    uint32_t states[32], labels[32], edges[64];
    float x[64];
} chains;

static chains make_chains(void) {
    chains c;
    memset(&c, 0, sizeof c);
    lcg g = {27};
    size_t n = 0, e = 0;
    for (size_t i = 0; i < M; i++) {
        size_t len = 2 + i % 3;
        c.node_start[i] = n;
        c.edge_start[i] = e;
        for (size_t t = 0; t < len; t++) {
            c.states[n] = 2;
            c.labels[n] = lcg_next(&g) < 0.5 ? 0 : 1;
            for (size_t j = 0; j < D; j++)
                c.x[n * D + j] = (float)(c.labels[n] ? 1.0 : -1.0) * 0.5f + (float)(lcg_next(&g) - 0.5);
            if (t > 0) {
                c.edges[2 * e] = (uint32_t)(t - 1);
                c.edges[2 * e + 1] = (uint32_t)t;
                e++;
            }
            n++;
        }
    }
    c.node_start[M] = n;
    c.edge_start[M] = e;
    return c;
}

static bmrm_graph_data graph_data(const chains *c, bmrm_engine engine) {
    bmrm_graph_data g = bmrm_graph_data_default();
    g.num_examples = M;
    g.node_start = c->node_start;
    g.states = c->states;
    g.labels = c->labels;
    g.node_dim = D;
    g.node_values = c->x;
    g.bias = true;
    g.edge_start = c->edge_start;
    g.edges = c->edges;
    g.normalise = true;
    g.engine = engine;
    return g;
}

/* The score of a labelling, in the library's order: nodes, then edges. */
static double score(const bmrm_potentials *p, const uint32_t *y) {
    double s = 0.0;
    for (size_t i = 0; i < p->num_nodes; i++) s += p->unary[p->unary_start[i] + y[i]];
    for (size_t e = 0; e < p->num_edges; e++) {
        uint32_t u = p->edges[2 * e], v = p->edges[2 * e + 1];
        s += p->pairwise[p->pairwise_start[e] + y[u] * p->states[v] + y[v]];
    }
    return s;
}

/* Exhaustive search, node 0 fastest, the first best kept: the built-in
 * exhaustive engine's order, so the answers are the same. */
static int32_t enumerate(void *user, const bmrm_potentials *p, uint32_t *labels, bool *exact) {
    int *calls = user;
    if (calls) (*calls)++;
    uint32_t y[32] = {0};
    double best = -INFINITY;
    for (;;) {
        double s = score(p, y);
        if (s > best) {
            best = s;
            memcpy(labels, y, p->num_nodes * sizeof(uint32_t));
        }
        size_t i = 0;
        while (i < p->num_nodes && ++y[i] == p->states[i]) y[i++] = 0;
        if (i == p->num_nodes) break;
    }
    *exact = true;
    return 0;
}

/* Always answers "every node in state 0", claiming it is exact. */
static int32_t all_zero(void *user, const bmrm_potentials *p, uint32_t *labels, bool *exact) {
    (void)user;
    (void)exact;
    memset(labels, 0, p->num_nodes * sizeof(uint32_t));
    return 0;
}

static int32_t failing(void *user, const bmrm_potentials *p, uint32_t *labels, bool *exact) {
    (void)user;
    (void)p;
    (void)labels;
    (void)exact;
    return 7;
}

static bmrm_info solve(const bmrm_problem *p, bmrm_algorithm a, size_t threads, double *w,
                       size_t dim) {
    bmrm_settings s = bmrm_settings_default(a);
    s.lambda = 0.05;
    s.tol_rel = a == BMRM_ALGORITHM_BCFW ? 1e-2 : 1e-7; /* BCFW: few passes under valgrind */
    s.num_threads = threads;
    bmrm_info info;
    memset(&info, 0, sizeof info);
    bmrm_solver *solver = NULL;
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_OK);
    if (solver == NULL) return info;
    memset(w, 0, dim * sizeof(double));
    CHECK_STATUS(bmrm_solver_run(solver, w, dim), BMRM_OK);
    CHECK_STATUS(bmrm_solver_info(solver, &info), BMRM_OK);
    bmrm_solver_free(solver);
    return info;
}

static void test_decoder_matches_engine(void) {
    chains c = make_chains();
    bmrm_graph_data g = graph_data(&c, BMRM_ENGINE_EXHAUSTIVE);
    bmrm_problem *built = NULL, *user = NULL;
    CHECK_STATUS(bmrm_problem_new_graph(&g, &built), BMRM_OK);
    g.engine = BMRM_ENGINE_AUTO;
    int calls = 0;
    CHECK_STATUS(bmrm_problem_new_graph_decoder(&g, enumerate, &calls, false, &user), BMRM_OK);
    if (!built || !user) return;
    size_t dim = 0;
    CHECK_STATUS(bmrm_problem_dim(built, &dim), BMRM_OK);
    /* 2 states x (2 features + bias) + a 2 x 2 table. */
    CHECK(dim == 10, "dim %zu", dim);
    double wa[16], wb[16];
    bmrm_algorithm algs[2] = {BMRM_ALGORITHM_BMRM, BMRM_ALGORITHM_BCFW};
    for (int k = 0; k < 2; k++) {
        bmrm_info a = solve(built, algs[k], 2, wa, dim);
        bmrm_info b = solve(user, algs[k], 2, wb, dim);
        CHECK(memcmp(wa, wb, dim * sizeof(double)) == 0, "algorithm %d: w differs", (int)algs[k]);
        CHECK(a.primal == b.primal && a.lower_bound == b.lower_bound,
              "algorithm %d: F %.17g / %.17g, bound %.17g / %.17g", (int)algs[k], a.primal,
              b.primal, a.lower_bound, b.lower_bound);
        CHECK(a.lower_bound <= a.primal && a.gap <= 1e-2 * a.primal + 1e-12, "gap %g", a.gap);
    }
    CHECK(calls > 0, "the decoder was called %d times", calls);
    /* Prediction: the maximiser of <w, phi> without loss, by enumeration. */
    uint32_t y[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    bool exact = false;
    CHECK_STATUS(bmrm_graph_predict(built, wa, dim, 5, y, 4, &exact), BMRM_OK);
    CHECK(exact, "the exhaustive engine is exact");
    CHECK(y[0] < 2 && y[1] < 2 && y[2] < 2 && y[3] < 2 && y[4] == 9, "labels %u %u %u %u %u",
          y[0], y[1], y[2], y[3], y[4]);
    CHECK_STATUS(bmrm_graph_predict(built, wa, dim, 5, y, 3, &exact), BMRM_ERROR_DIMENSION_MISMATCH);
    CHECK(last_error_has("example 5 has 4 nodes"), "%s", bmrm_last_error());
    /* A NaN or infinite weight is refused naming its coordinate (as
     * bmrm_multiclass_predict), nothing written. */
    double bad[16];
    memcpy(bad, wa, dim * sizeof(double));
    bad[3] = NAN;
    for (int i = 0; i < 8; i++) y[i] = 9;
    CHECK_STATUS(bmrm_graph_predict(built, bad, dim, 5, y, 4, &exact), BMRM_ERROR_NON_FINITE);
    CHECK(last_error_has("w[3] is NaN"), "%s", bmrm_last_error());
    bad[3] = wa[3];
    bad[dim - 1] = -INFINITY;
    CHECK_STATUS(bmrm_graph_predict(user, bad, dim, 0, y, 2, &exact), BMRM_ERROR_NON_FINITE);
    CHECK(last_error_has("w[9] is -inf"), "%s", bmrm_last_error());
    CHECK(y[0] == 9 && y[1] == 9, "labels written on failure: %u %u", y[0], y[1]);
    bmrm_problem_free(built);
    bmrm_problem_free(user);
}

/* Engines by name (the library's registry: '_' for '-', aliases) and the
 * engines appended to bmrm_engine: conditioning is exact and solves the
 * exhaustive engine's problem; unary ignores the chains' edges, so its
 * answers are not exact and the run is not certified. */
static void test_engines_by_name(void) {
    bmrm_engine e = BMRM_ENGINE_AUTO;
    CHECK_STATUS(bmrm_graph_engine_from_name("tree-max-sum", &e), BMRM_OK);
    CHECK(e == BMRM_ENGINE_TREE_MAX_SUM, "tree-max-sum is %d", (int)e);
    CHECK_STATUS(bmrm_graph_engine_from_name("cut_set_conditioning", &e), BMRM_OK);
    CHECK(e == BMRM_ENGINE_CONDITIONING, "cut_set_conditioning is %d", (int)e);
    CHECK_STATUS(bmrm_graph_engine_from_name("lp", &e), BMRM_OK);
    CHECK(e == BMRM_ENGINE_AD3, "lp is %d", (int)e);
    CHECK_STATUS(bmrm_graph_engine_from_name("unary", &e), BMRM_OK);
    CHECK(e == BMRM_ENGINE_UNARY, "unary is %d", (int)e);
    CHECK_STATUS(bmrm_graph_engine_from_name("qpbo", &e), BMRM_OK);
    CHECK(e == BMRM_ENGINE_QPBO, "qpbo is %d", (int)e);
    CHECK_STATUS(bmrm_graph_engine_from_name("trw", &e), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("name = \"trw\" is not an engine") && last_error_has("conditioning"),
          "%s", bmrm_last_error());
    CHECK(e == BMRM_ENGINE_QPBO, "a failed call writes nothing");
    CHECK_STATUS(bmrm_graph_engine_from_name(NULL, &e), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_graph_engine_from_name("auto", NULL), BMRM_ERROR_NULL_ARGUMENT);

    chains c = make_chains();
    bmrm_graph_data g = graph_data(&c, BMRM_ENGINE_EXHAUSTIVE);
    bmrm_problem *exhaustive = NULL, *conditioning = NULL, *unary = NULL;
    CHECK_STATUS(bmrm_problem_new_graph(&g, &exhaustive), BMRM_OK);
    g.engine = BMRM_ENGINE_CONDITIONING;
    CHECK_STATUS(bmrm_problem_new_graph(&g, &conditioning), BMRM_OK);
    g.engine = BMRM_ENGINE_UNARY;
    CHECK_STATUS(bmrm_problem_new_graph(&g, &unary), BMRM_OK);
    if (!exhaustive || !conditioning || !unary) return;
    double wa[16], wb[16], wc[16];
    bmrm_info a = solve(exhaustive, BMRM_ALGORITHM_BMRM, 1, wa, 10);
    bmrm_info b = solve(conditioning, BMRM_ALGORITHM_BMRM, 1, wb, 10);
    bmrm_info u = solve(unary, BMRM_ALGORITHM_BMRM, 1, wc, 10);
    CHECK(fabs(a.primal - b.primal) <= 1e-6 * a.primal, "conditioning: F %.17g vs %.17g",
          b.primal, a.primal);
    CHECK(a.certified && b.certified, "the exact engines certify");
    CHECK(!u.certified, "unary on chains is not certified");
    bmrm_problem_free(exhaustive);
    bmrm_problem_free(conditioning);
    bmrm_problem_free(unary);
}

static void test_wrong_decoder_keeps_the_bound_below_the_optimum(void) {
    chains c = make_chains();
    bmrm_graph_data g = graph_data(&c, BMRM_ENGINE_EXHAUSTIVE);
    bmrm_problem *exact = NULL, *wrong = NULL, *broken = NULL;
    CHECK_STATUS(bmrm_problem_new_graph(&g, &exact), BMRM_OK);
    g.engine = BMRM_ENGINE_AUTO;
    CHECK_STATUS(bmrm_problem_new_graph_decoder(&g, all_zero, NULL, true, &wrong), BMRM_OK);
    CHECK_STATUS(bmrm_problem_new_graph_decoder(&g, failing, NULL, true, &broken), BMRM_OK);
    if (!exact || !wrong || !broken) return;
    size_t dim = 0;
    CHECK_STATUS(bmrm_problem_dim(exact, &dim), BMRM_OK);
    double w[16];
    bmrm_info opt = solve(exact, BMRM_ALGORITHM_BMRM, 1, w, dim);
    bmrm_algorithm algs[3] = {BMRM_ALGORITHM_BMRM, BMRM_ALGORITHM_PROX_P_BMRM, BMRM_ALGORITHM_BCFW};
    for (int k = 0; k < 3; k++) {
        bmrm_info i = solve(wrong, algs[k], 2, w, dim);
        CHECK(i.lower_bound <= opt.primal + 1e-12,
              "algorithm %d: bound %.17g above the optimum %.17g", (int)algs[k], i.lower_bound,
              opt.primal);
    }
    bmrm_settings s = bmrm_settings_default(BMRM_ALGORITHM_BMRM);
    s.lambda = 0.05;
    bmrm_solver *solver = NULL;
    CHECK_STATUS(bmrm_solver_new(broken, &s, &solver), BMRM_OK);
    if (solver) {
        CHECK_STATUS(bmrm_solver_run(solver, w, dim), BMRM_ERROR_ORACLE_FAILED);
        CHECK(last_error_has("graph decoder returned 7"), "%s", bmrm_last_error());
        bmrm_solver_free(solver);
    }
    bmrm_problem_free(exact);
    bmrm_problem_free(wrong);
    bmrm_problem_free(broken);
}

static double sentinel_storage[4];
#define SENTINEL ((bmrm_problem *)(void *)sentinel_storage)

/* A bad graph: the status, a message with `part`, and `out` untouched. */
static void expect_bad(const bmrm_graph_data *g, bmrm_status want, const char *part) {
    bmrm_problem *out = SENTINEL;
    CHECK_STATUS(bmrm_problem_new_graph(g, &out), want);
    CHECK(out == SENTINEL, "out was written on failure");
    CHECK(last_error_has(part), "'%s' lacks '%s'", bmrm_last_error(), part);
}

static void test_bad_graphs(void) {
    chains c = make_chains();
    bmrm_graph_data g = graph_data(&c, BMRM_ENGINE_AUTO);

    chains bad = c;
    bad.edges[2 * c.edge_start[1]] = 9; /* example 1's first edge to node 9 */
    bmrm_graph_data b = graph_data(&bad, BMRM_ENGINE_AUTO);
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "example 1: edge 0 (9, 1) joins node 9");

    bad = c;
    bad.edges[2 * c.edge_start[2] + 1] = bad.edges[2 * c.edge_start[2]];
    b = graph_data(&bad, BMRM_ENGINE_AUTO);
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "example 2: edge 0 is a self loop on node 0");

    bad = c;
    bad.states[c.node_start[3] + 1] = 0;
    b = graph_data(&bad, BMRM_ENGINE_AUTO);
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "example 3: node 1 has zero states");

    b = g;
    b.node_dim = 3; /* more features than the array holds is a length the caller states */
    b.node_values = NULL;
    expect_bad(&b, BMRM_ERROR_NULL_ARGUMENT, "node_values is NULL");

    b = g;
    bmrm_grid grids[1] = {{0, 0, 1, 2}};
    b.grids = grids;
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "grids is set but CONSTANT edge features");

    b = g;
    b.engine = (bmrm_engine)(BMRM_ENGINE_QPBO + 1);
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "engine = 13 is not a bmrm_engine (0..=12)");

    b = g;
    b.node_features = 5;
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "node_features = 5");

    b = g;
    b.num_examples = 0;
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "num_examples must be positive");

    /* Dense edge features: a feature listed twice would enter psi twice
     * but the scores once (a false certificate). */
    float ex[64];
    for (size_t k = 0; k < 64; k++)
        ex[k] = 0.25f * (float)(k % 5);
    size_t twice[2] = {0, 0}, one[1] = {1};
    b = g;
    b.edge_features = BMRM_EDGE_FEATURES_DENSE;
    b.edge_dim = 2;
    b.edge_values = ex;
    b.symmetric = twice;
    b.num_symmetric = 2;
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "symmetric edge feature 0 is listed twice");
    b.symmetric = one;
    b.num_symmetric = 1;
    b.antisymmetric = twice;
    b.num_antisymmetric = 2;
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "antisymmetric edge feature 0 is listed twice");

    /* A bad value is named by its example and node or edge. */
    bad = c;
    bad.x[(c.node_start[1] + 1) * D + 1] = NAN;
    b = graph_data(&bad, BMRM_ENGINE_AUTO);
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "example 1: node 1: node features: value 1 is NaN");
    b = g;
    b.edge_features = BMRM_EDGE_FEATURES_POTTS;
    b.edge_dim = 1;
    float potts[64];
    for (size_t k = 0; k < 64; k++)
        potts[k] = 1.0f;
    potts[c.edge_start[2] + 1] = INFINITY;
    b.edge_values = potts;
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "example 2: edge 1: Potts edge features: value 0 is inf");

    /* The distance transform needs displacement edges: refused when built. */
    b = g;
    b.engine = BMRM_ENGINE_DISTANCE_TRANSFORM;
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "example 0: the distance transform");

    bmrm_problem *out = SENTINEL;
    CHECK_STATUS(bmrm_problem_new_graph(NULL, &out), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_problem_new_graph(&g, NULL), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_problem_new_graph_decoder(&g, NULL, NULL, true, &out),
                 BMRM_ERROR_NULL_ARGUMENT);
    b = g;
    b.engine = BMRM_ENGINE_EXHAUSTIVE;
    CHECK_STATUS(bmrm_problem_new_graph_decoder(&b, enumerate, NULL, true, &out),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(out == SENTINEL, "out was written on failure");
    uint32_t y[4];
    bool exact;
    double w[10] = {0};
    CHECK_STATUS(bmrm_graph_predict(NULL, w, 10, 0, y, 2, &exact), BMRM_ERROR_NULL_ARGUMENT);
}

/* Type ids: an id of 2^24 or more (UINT32_MAX: a -1 cast) is refused at
 * once, naming the example, the node or edge and the list, without an
 * address-space limit; 2^24 - 1 is a valid node type (the unused types'
 * class-form blocks are empty, so w keeps its length). */
static void test_huge_type_ids(void) {
    chains c = make_chains();
    bmrm_graph_data g = graph_data(&c, BMRM_ENGINE_AUTO);
    size_t n = c.node_start[M], e = c.edge_start[M];
    uint32_t node_types[64] = {0}, edge_types[64] = {0};
    CHECK(n <= 64 && e <= 64, "the chains are larger than the type arrays");
    bmrm_graph_data b = g;
    b.node_types = node_types;
    node_types[c.node_start[3] + 1] = UINT32_MAX;
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "example 3: node 1 has type 4294967295 in node_types");
    node_types[c.node_start[3] + 1] = 1u << 24;
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "example 3: node 1 has type 16777216 in node_types");
    b = g;
    b.edge_types = edge_types;
    edge_types[e - 1] = UINT32_MAX - 5;
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "example 5: edge 2 has type 4294967290 in edge_types");
    /* The largest valid id: all nodes of type 2^24 - 1, types 0.. unused. */
    for (size_t i = 0; i < n; i++) node_types[i] = (1u << 24) - 1;
    b = g;
    b.node_types = node_types;
    bmrm_problem *p = NULL;
    CHECK_STATUS(bmrm_problem_new_graph(&b, &p), BMRM_OK);
    size_t dim = 0;
    if (p != NULL) CHECK_STATUS(bmrm_problem_dim(p, &dim), BMRM_OK);
    CHECK(dim == 10, "dim %zu with node type 2^24 - 1", dim);
    bmrm_problem_free(p);
}

/* bmrm_graph_positivity_coordinates: none for constant edges; for Potts
   edges with two features the two Potts weights after the 2 x (D + bias)
   unary block; the count alone with coords NULL; a short buffer, a
   non-graph problem and NULLs refused. */
static void test_positivity_coordinates(void) {
    chains c = make_chains();
    bmrm_graph_data g = graph_data(&c, BMRM_ENGINE_AUTO);
    bmrm_problem *constant = NULL, *potts = NULL;
    CHECK_STATUS(bmrm_problem_new_graph(&g, &constant), BMRM_OK);
    size_t count = 99, coords[4] = {0};
    CHECK_STATUS(bmrm_graph_positivity_coordinates(constant, coords, 4, &count), BMRM_OK);
    CHECK(count == 0, "constant edges: %zu coordinates", count);
    float features[64];
    for (size_t e = 0; e < c.edge_start[M]; e++) {
        features[2 * e] = 1.0f;
        features[2 * e + 1] = (float)(e % 3) * 0.25f;
    }
    g.edge_features = BMRM_EDGE_FEATURES_POTTS;
    g.edge_dim = 2;
    g.edge_values = features;
    CHECK_STATUS(bmrm_problem_new_graph(&g, &potts), BMRM_OK);
    size_t dim = 0;
    CHECK_STATUS(bmrm_problem_dim(potts, &dim), BMRM_OK);
    CHECK(dim == 2 * (D + 1) + 2, "dim %zu", dim);
    CHECK_STATUS(bmrm_graph_positivity_coordinates(potts, NULL, 0, &count), BMRM_OK);
    CHECK(count == 2, "count %zu", count);
    CHECK_STATUS(bmrm_graph_positivity_coordinates(potts, coords, 1, &count),
                 BMRM_ERROR_DIMENSION_MISMATCH);
    CHECK(strstr(bmrm_last_error(), "capacity = 1") != NULL, "'%s'", bmrm_last_error());
    CHECK_STATUS(bmrm_graph_positivity_coordinates(potts, coords, 4, &count), BMRM_OK);
    CHECK(count == 2 && coords[0] == 6 && coords[1] == 7, "coordinates %zu: %zu %zu", count,
          coords[0], coords[1]);
    CHECK_STATUS(bmrm_graph_positivity_coordinates(potts, coords, 4, NULL),
                 BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_graph_positivity_coordinates(NULL, coords, 4, &count),
                 BMRM_ERROR_NULL_ARGUMENT);
    bmrm_problem *risk = NULL;
    CHECK_STATUS(bmrm_problem_new(3, &risk), BMRM_OK);
    CHECK_STATUS(bmrm_graph_positivity_coordinates(risk, coords, 4, &count),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(bmrm_last_error(), "not a graph problem") != NULL, "'%s'", bmrm_last_error());
    bmrm_problem_free(risk);
    bmrm_problem_free(potts);
    bmrm_problem_free(constant);
}

/* Run as `graph_test oom` (by tests/ffi.rs, never under a sanitizer):
 * under a 900 MB address-space limit, a valid 480 MB feature array and a
 * node_dim of 2^40 are BMRM_ERROR_OUT_OF_MEMORY, not an abort, and a node
 * or edge type id of 2^32 - 1 in small arrays is refused; the library
 * works afterwards. */
static void test_out_of_memory(void) {
    struct rlimit limit = {900000u * 1024u, 900000u * 1024u};
    CHECK(setrlimit(RLIMIT_AS, &limit) == 0, "setrlimit failed");
    chains c = make_chains();
    bmrm_graph_data g = graph_data(&c, BMRM_ENGINE_AUTO);
    size_t n = c.node_start[M];
    size_t d = (480u << 20) / sizeof(float) / n;
    float *big = calloc(n * d, sizeof(float));
    CHECK(big != NULL, "cannot allocate the 480 MB input");
    if (big != NULL) {
        bmrm_graph_data b = g;
        b.node_dim = d;
        b.node_values = big;
        expect_bad(&b, BMRM_ERROR_OUT_OF_MEMORY, "node_values");
        free(big);
    }
    bmrm_graph_data b = g;
    b.node_dim = (size_t)1 << 40;
    expect_bad(&b, BMRM_ERROR_OUT_OF_MEMORY, "node_values");
    /* Small arrays, a huge type id: refused before any per-type block. */
    uint32_t node_types[64] = {0};
    uint32_t edge_types[64] = {0};
    CHECK(n <= 64 && c.edge_start[M] <= 64, "the chains are larger than the type arrays");
    node_types[n - 1] = UINT32_MAX;
    b = g;
    b.node_types = node_types;
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "node_types");
    edge_types[c.edge_start[M] - 1] = UINT32_MAX;
    b = g;
    b.edge_types = edge_types;
    expect_bad(&b, BMRM_ERROR_INVALID_ARGUMENT, "edge_types");
    bmrm_problem *p = NULL;
    CHECK_STATUS(bmrm_problem_new_graph(&g, &p), BMRM_OK);
    bmrm_problem_free(p);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "oom") == 0) {
        test_out_of_memory();
        printf("%d passed, %d failed\n", checks_passed, checks_failed);
        return checks_failed == 0 ? 0 : 1;
    }
    /* common.h helpers this program does not need. */
    (void)l1_risk;
    (void)l1_part;
    (void)mc_oracle;
    (void)mc_oracle_dense;
    (void)mc_make;
    (void)mc_free;
    test_decoder_matches_engine();
    test_engines_by_name();
    test_wrong_decoder_keeps_the_bound_below_the_optimum();
    test_bad_graphs();
    test_huge_type_ids();
    test_positivity_coordinates();
    printf("%d passed, %d failed\n", checks_passed, checks_failed);
    return checks_failed == 0 ? 0 : 1;
}
