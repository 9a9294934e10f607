// A multiclass SVM (Crammer-Singer, 0/1 loss) trained from C++ the way SHOGUN
// code trained it: a StructuredModel with a loss-augmented argmax, and the
// trainer DualLibQPBMSOSVM with SHOGUN's option names and statistics. Then the
// same model through the plain bmrm::Problem / bmrm::Solver API.
//
// Build (see the README):
//     c++ -std=c++17 multiclass_shogun.cpp -Ibindings/cpp $(pkg-config --cflags --libs bmrm)
#include "bmrm.hpp"

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

constexpr std::size_t K = 4, D = 10, DP = D + 1; // classes, features, with a bias

struct Data {
    std::vector<double> x; // m x DP
    std::vector<std::size_t> y;
    std::size_t m() const { return y.size(); }
};

// Class c has its mean at 2 on coordinates c and c + K; unit noise.
Data make_data(std::size_t m, unsigned seed) {
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> noise(0.0, 1.0);
    std::uniform_int_distribution<std::size_t> cls(0, K - 1);
    Data d;
    for (std::size_t i = 0; i < m; i++) {
        std::size_t c = cls(gen);
        d.y.push_back(c);
        for (std::size_t j = 0; j < D; j++)
            d.x.push_back((j == c || j == c + K ? 2.0 : 0.0) + noise(gen));
        d.x.push_back(1.0);
    }
    return d;
}

double score(bmrm::span<const double> w, std::size_t c, const double *x) {
    double s = 0;
    for (std::size_t j = 0; j < DP; j++) s += w[c * DP + j] * x[j];
    return s;
}

std::size_t predict(bmrm::span<const double> w, const double *x) {
    std::size_t best = 0;
    for (std::size_t c = 1; c < K; c++)
        if (score(w, c, x) > score(w, best, x)) best = c;
    return best;
}

// SHOGUN's CMulticlassModel, in this adapter's terms.
class MulticlassModel : public bmrm::shogun::StructuredModel {
  public:
    explicit MulticlassModel(const Data &d) : d_(d) {}
    std::size_t get_dim() const override { return K * DP; }
    std::size_t get_num_examples() const override { return d_.m(); }
    bool thread_safe() const override { return true; } // reads only

    bmrm::shogun::ResultSet argmax(bmrm::span<const double> w, std::size_t i,
                                   bool training) override {
        const double *x = &d_.x[i * DP];
        std::size_t yi = d_.y[i], best = yi;
        double best_score = score(w, yi, x);
        for (std::size_t c = 0; c < K; c++) {
            double v = (training && c != yi ? 1.0 : 0.0) + score(w, c, x);
            if (c != yi && v > best_score) {
                best = c;
                best_score = v;
            }
        }
        bmrm::shogun::ResultSet r;
        r.argmax = best;
        if (best == yi) return r;
        r.delta = 1.0;
        for (std::size_t j = 0; j < DP; j++) { // sparse: only two blocks are non-zero
            r.psi_truth_sparse.emplace_back(yi * DP + j, x[j]);
            r.psi_pred_sparse.emplace_back(best * DP + j, x[j]);
        }
        return r;
    }

  private:
    const Data &d_;
};

double error_rate(const std::vector<double> &w, const Data &d) {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < d.m(); i++) wrong += predict(w, &d.x[i * DP]) != d.y[i];
    return static_cast<double>(wrong) / static_cast<double>(d.m());
}

} // namespace

int main() {
    Data train = make_data(2000, 1), test = make_data(1000, 2);
    MulticlassModel model(train);

    // SHOGUN: CDualLibQPBMSOSVM(model, labels, lambda) + set_* + train().
    const double lambda_sum = 1.0; // SHOGUN's lambda (summed risk) = m * ours
    bmrm::shogun::DualLibQPBMSOSVM sosvm(model, lambda_sum);
    sosvm.set_solver(bmrm::shogun::P3BMRM);
    sosvm.set_cp_models(8);
    sosvm.set_TolRel(1e-3);
    sosvm.train();
    bmrm::shogun::BmrmStatistics st = sosvm.get_result();
    std::printf("P3BMRM (cp_models = 8): nIter %u, nCP %u, nzA %u, Fp %.6f, Fd %.6f, "
                "exitflag %d\n",
                st.nIter, st.nCP, st.nzA, st.Fp, st.Fd, st.exitflag);
    std::printf("train error %.4f, test error %.4f\n", error_rate(sosvm.get_w(), train),
                error_rate(sosvm.get_w(), test));

    // The same model through the plain API, with a progress observer.
    bmrm::Problem problem = bmrm::shogun::make_problem(model);
    bmrm::Settings settings(bmrm::Algorithm::bmrm, lambda_sum / train.m());
    settings.set_progress([](const bmrm::Info &i) {
        if (i.iterations % 100 == 0)
            std::printf("  %3llu: F = %.6f, gap = %.2e\n",
                        static_cast<unsigned long long>(i.iterations), i.primal, i.gap);
    });
    bmrm::Solver solver(problem, settings);
    std::vector<double> w(model.get_dim(), 0.0);
    bmrm::Info info = solver.run(w);
    std::printf("BMRM: %llu iterations, F = %.6f (x m = %.6f), %s\n",
                static_cast<unsigned long long>(info.iterations), info.primal,
                info.primal * train.m(), bmrm::to_string(info.exit));
    std::printf("test error %.4f\n", error_rate(w, test));
    return 0;
}
