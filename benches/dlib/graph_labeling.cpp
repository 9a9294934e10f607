// dlib's binary graph-labelling structural SVM on a problem written by
// benches/dlib_graph.rs, for the side-by-side comparison there.
//
//   graph_labeling train PROBLEM C EPS THREADS LIMIT W_OUT [--check-trainer]
//   graph_labeling eval  PROBLEM C W_IN
//
// `train` runs what structural_graph_labeling_trainer::train does (the
// structural_svm_graph_labeling_problem with the per-node losses of the
// file, its C, epsilon, threads and default cache of 5, solved by oca with
// the edge weights kept non-negative) through a thin oca_problem wrapper
// that records each iteration's status, stopping after LIMIT seconds (oca's
// max runtime), and prints
//
//   train SECONDS ITERATIONS LIMITED    (LIMITED: 1 when stopped by LIMIT)
//   objective H RISK RISK_GAP     (h(w) = 0.5 |w|^2 + C R(w) at the returned w)
//
// and writes the returned w (edge weights first, then node weights, one a
// line) to W_OUT. With --check-trainer it also runs the trainer itself and
// fails unless its weights equal the wrapper's bit for bit. `eval` prints
// `objective H RISK` of the w in W_IN, evaluated by dlib's own separation
// oracle (a first risk evaluation is never served from the cache), and
// `pass SECONDS`, the time of a second such pass over all examples.
//
// The file (text): a line `dlib_graph m d f`, then per example a line
// `N E`, N node lines `label loss x_1 .. x_d` (loss: the cost of
// mislabelling the node) and E edge lines `u v e_1 .. e_f`.

#include <dlib/graph.h>
#include <dlib/svm_threaded.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

using vec = dlib::matrix<double, 0, 1>;
using graph_type = dlib::graph<vec, vec>::kernel_1a;
using problem_type = dlib::structural_svm_graph_labeling_problem<graph_type>;

struct data {
    dlib::array<graph_type> samples;
    std::vector<std::vector<bool>> labels;
    std::vector<std::vector<double>> losses;
};

static data read_problem(const char* path) {
    std::ifstream in(path);
    std::string tag;
    long m = 0, d = 0, f = 0;
    if (!(in >> tag >> m >> d >> f) || tag != "dlib_graph")
        throw std::runtime_error(std::string("not a dlib_graph file: ") + path);
    data out;
    out.samples.resize(m);
    out.labels.resize(m);
    out.losses.resize(m);
    for (long i = 0; i < m; ++i) {
        long n = 0, e = 0;
        if (!(in >> n >> e)) throw std::runtime_error("truncated example header");
        graph_type& g = out.samples[i];
        g.set_number_of_nodes(n);
        for (long j = 0; j < n; ++j) {
            int label = 0;
            double loss = 0;
            in >> label >> loss;
            vec x(d);
            for (long k = 0; k < d; ++k) in >> x(k);
            g.node(j).data = x;
            out.labels[i].push_back(label != 0);
            out.losses[i].push_back(loss);
        }
        for (long j = 0; j < e; ++j) {
            unsigned long u = 0, v = 0;
            in >> u >> v;
            vec x(f);
            for (long k = 0; k < f; ++k) in >> x(k);
            g.add_edge(u, v);
            dlib::edge(g, u, v) = x;
        }
        if (!in) throw std::runtime_error("truncated example");
    }
    return out;
}

// Forwards to the problem through its oca_problem interface (where the
// members are public) and records the last status oca reported.
struct recorder : dlib::oca_problem<vec> {
    const dlib::oca_problem<vec>& inner;
    mutable double objective = 0, risk = 0, risk_gap = 0;
    mutable unsigned long iterations = 0;
    mutable bool converged = false;

    explicit recorder(const dlib::oca_problem<vec>& p) : inner(p) {}
    bool risk_has_lower_bound(double& lower) const override {
        return inner.risk_has_lower_bound(lower);
    }
    bool optimization_status(double obj, double obj_gap, double r, double r_gap,
                             unsigned long planes, unsigned long iter) const override {
        objective = obj;
        risk = r;
        risk_gap = r_gap;
        iterations = iter;
        converged = inner.optimization_status(obj, obj_gap, r, r_gap, planes, iter);
        return converged;
    }
    double get_c() const override { return inner.get_c(); }
    long get_num_dimensions() const override { return inner.get_num_dimensions(); }
    void get_risk(vec& w, double& r, vec& subgradient) const override {
        inner.get_risk(w, r, subgradient);
    }
};

static int train(int argc, char** argv) {
    const data p = read_problem(argv[2]);
    const double c = std::atof(argv[3]), eps = std::atof(argv[4]);
    const unsigned long threads = std::strtoul(argv[5], nullptr, 10);
    const double limit = std::atof(argv[6]);
    const char* w_out = argv[7];
    const bool check = argc > 8 && std::string(argv[8]) == "--check-trainer";

    const auto start = std::chrono::steady_clock::now();
    // As structural_graph_labeling_trainer::train does, with its defaults
    // (cache of 5 per example, the default oca).
    problem_type prob(p.samples, p.labels, p.losses, threads);
    prob.set_c(c);
    prob.set_epsilon(eps);
    prob.set_max_cache_size(5);
    recorder rec(prob);
    vec w;
    dlib::oca solver;
    solver.set_max_runtime(std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(limit)));
    solver(rec, w, prob.get_num_edge_weights());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    std::printf("train %.6f %lu %d\n", seconds, rec.iterations, rec.converged ? 0 : 1);
    std::printf("objective %.17g %.17g %.17g\n", rec.objective, rec.risk, rec.risk_gap);
    std::ofstream out(w_out);
    out.precision(17);
    for (long k = 0; k < w.size(); ++k) out << w(k) << '\n';

    if (check) {
        dlib::structural_graph_labeling_trainer<vec> trainer;
        trainer.set_c(c);
        trainer.set_epsilon(eps);
        trainer.set_num_threads(threads);
        const auto labeler = trainer.train(p.samples, p.labels, p.losses);
        const vec& edge = labeler.get_edge_weights();
        const vec& node = labeler.get_node_weights();
        bool same = edge.size() + node.size() == w.size();
        for (long k = 0; same && k < edge.size(); ++k) same = edge(k) == w(k);
        for (long k = 0; same && k < node.size(); ++k) same = node(k) == w(edge.size() + k);
        std::printf("trainer_match %d\n", same ? 1 : 0);
        if (!same) return 4;
    }
    return 0;
}

static int eval(char** argv) {
    const data p = read_problem(argv[2]);
    const double c = std::atof(argv[3]);
    problem_type prob(p.samples, p.labels, p.losses, 1);
    prob.set_c(c);
    std::vector<double> values;
    std::ifstream in(argv[4]);
    for (double x; in >> x;) values.push_back(x);
    vec w(values.size());
    for (size_t k = 0; k < values.size(); ++k) w(k) = values[k];
    const dlib::oca_problem<vec>& as_oca = prob;
    if (w.size() != as_oca.get_num_dimensions()) throw std::runtime_error("w has the wrong length");
    double risk = 0;
    vec subgradient;
    // The first evaluation also fills the cache's true psi: time the second
    // (also a full pass: the cache is skipped until oca reports a status).
    as_oca.get_risk(w, risk, subgradient);
    const auto start = std::chrono::steady_clock::now();
    as_oca.get_risk(w, risk, subgradient);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("objective %.17g %.17g\n", 0.5 * dlib::dot(w, w) + c * risk, risk);
    std::printf("pass %.6f\n", seconds);
    return 0;
}

int main(int argc, char** argv) {
    try {
        if (argc >= 8 && std::string(argv[1]) == "train") return train(argc, argv);
        if (argc == 5 && std::string(argv[1]) == "eval") return eval(argv);
        std::fprintf(stderr,
                     "usage: graph_labeling train PROBLEM C EPS THREADS LIMIT W_OUT "
                     "[--check-trainer]\n"
                     "       graph_labeling eval PROBLEM C W_IN\n");
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "graph_labeling: %s\n", e.what());
        return 1;
    }
}
