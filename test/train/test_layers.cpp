// Gradients of every layer of the small transformer against central finite differences in fp64
// (embedding, layer norm, linear, MLP, attention with baseline and flash2 backward, LM head +
// cross entropy, and the whole model).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "train/attention_layer.hpp"
#include "train/layers.hpp"
#include "train/model.hpp"

using namespace attndev::train;
namespace at = attndev::attention;

namespace {

Mat random_mat(int rows, int cols, std::mt19937_64& rng, double std = 1.0) {
  std::normal_distribution<double> d(0.0, std);
  Mat m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = d(rng);
  return m;
}

void randomize(Param& p, std::mt19937_64& rng, double std) {
  p.value = random_mat(int(p.value.rows()), int(p.value.cols()), rng, std);
}

Numerics fp64(at::Algorithm alg = at::Algorithm::baseline) {
  Numerics n;
  n.algorithm = alg;
  n.block_r = 2;
  n.block_c = 3;
  n.threads = 1;
  return n;
}

// Compares backward's gradients with (L(v + h) - L(v - h)) / 2h for every element of `x` (when
// given) and of every parameter. `loss` runs the forward; `backward` runs the backward after a
// forward at the unperturbed point, returning dL/dx and accumulating parameter gradients.
struct GradCheck {
  std::function<double()> loss;
  std::function<Mat()> backward;
  Mat* x = nullptr;
  std::vector<Param*> params;
  int max_per_tensor = 1 << 30;  // sample stride keeps the whole-model check fast

  int run(const std::string& what) {
    for (Param* p : params) p->grad.setZero();
    loss();
    const Mat dx = backward();
    int compared = 0;
    auto check_tensor = [&](Mat& v, const Mat& analytic, const std::string& name) {
      REQUIRE(analytic.size() == v.size());
      REQUIRE(analytic.cwiseAbs().maxCoeff() > 0.0);  // an all-zero gradient checks nothing
      const Eigen::Index stride = std::max<Eigen::Index>(1, v.size() / max_per_tensor);
      for (Eigen::Index i = 0; i < v.size(); i += stride) {
        constexpr double kStep = 1e-5;
        double& e = v.data()[i];
        const double e0 = e;
        e = e0 + kStep;
        const double lp = loss();
        e = e0 - kStep;
        const double lm = loss();
        e = e0;
        const double numeric = (lp - lm) / (2 * kStep);
        INFO(what << ": " << name << "[" << i << "] numeric " << numeric << " analytic "
                  << analytic.data()[i]);
        // h^2 truncation (~1e-10 here) plus cancellation (~1e-16 |L| / h).
        CHECK(std::abs(numeric - analytic.data()[i]) <= 1e-7 * (1.0 + std::abs(numeric)));
        ++compared;
      }
    };
    if (x) check_tensor(*x, dx, "input");
    for (Param* p : params) {
      const Mat g = p->grad;
      check_tensor(p->value, g, p->name);
    }
    loss();  // leave caches at the unperturbed point
    return compared;
  }
};

}  // namespace

TEST_CASE("embedding gradient", "[train][gradcheck]") {
  std::mt19937_64 rng(11);
  INFO("seed 11");
  Embedding emb(7, 4, 3);
  randomize(emb.tok, rng, 1.0);
  randomize(emb.pos, rng, 1.0);
  const std::vector<int> tokens = {1, 3, 3, 0, 6, 1, 2, 5};  // B=2, T=4; repeated ids accumulate
  const Mat w = random_mat(8, 3, rng);
  const Numerics num = fp64();
  GradCheck g;
  g.params = {&emb.tok, &emb.pos};
  g.loss = [&] { return (emb.forward(tokens, 4, num).array() * w.array()).sum(); };
  g.backward = [&] {
    emb.backward(w);
    return Mat();
  };
  // tok rows of unused ids have zero gradient; the REQUIRE is on the whole tensor.
  CHECK(g.run("embedding") == 7 * 3 + 4 * 3);
}

TEST_CASE("layer norm gradient", "[train][gradcheck]") {
  std::mt19937_64 rng(12);
  INFO("seed 12");
  LayerNorm ln("ln", 6);
  randomize(ln.gamma, rng, 1.0);
  randomize(ln.beta, rng, 1.0);
  Mat x = random_mat(5, 6, rng, 2.0);
  const Mat w = random_mat(5, 6, rng);
  const Numerics num = fp64();
  GradCheck g;
  g.x = &x;
  g.params = {&ln.gamma, &ln.beta};
  g.loss = [&] { return (ln.forward(x, num).array() * w.array()).sum(); };
  g.backward = [&] { return ln.backward(w, num); };
  CHECK(g.run("layernorm") == 30 + 12);
}

TEST_CASE("linear and MLP gradients", "[train][gradcheck]") {
  std::mt19937_64 rng(13);
  INFO("seed 13");
  const Numerics num = fp64();
  {
    Linear lin("lin", 4, 3, /*with_bias=*/true);
    randomize(lin.weight, rng, 1.0);
    randomize(lin.bias, rng, 1.0);
    Mat x = random_mat(5, 4, rng);
    const Mat w = random_mat(5, 3, rng);
    GradCheck g;
    g.x = &x;
    g.params = {&lin.weight, &lin.bias};
    g.loss = [&] { return (lin.forward(x, num).array() * w.array()).sum(); };
    g.backward = [&] { return lin.backward(w, num); };
    CHECK(g.run("linear") == 20 + 12 + 3);
  }
  {
    Mlp mlp("mlp", 4, 8);
    for (Param* p : {&mlp.fc.weight, &mlp.fc.bias, &mlp.proj.weight, &mlp.proj.bias})
      randomize(*p, rng, 0.7);
    Mat x = random_mat(5, 4, rng);
    const Mat w = random_mat(5, 4, rng);
    GradCheck g;
    g.x = &x;
    g.params = {&mlp.fc.weight, &mlp.fc.bias, &mlp.proj.weight, &mlp.proj.bias};
    g.loss = [&] { return (mlp.forward(x, num).array() * w.array()).sum(); };
    g.backward = [&] { return mlp.backward(w, num); };
    CHECK(g.run("mlp") == 20 + 32 + 8 + 32 + 4);
  }
}

TEST_CASE("attention layer gradient, baseline and flash2 backward", "[train][gradcheck]") {
  for (const at::Algorithm alg : {at::Algorithm::baseline, at::Algorithm::flash2}) {
    std::mt19937_64 rng(14);
    INFO("seed 14, algorithm " << at::algorithm_name(alg));
    AttentionLayer attn("attn", /*index=*/0, 6, 2);
    for (Param* p : {&attn.qkv.weight, &attn.qkv.bias, &attn.proj.weight, &attn.proj.bias})
      randomize(*p, rng, 0.6);
    Mat x = random_mat(2 * 5, 6, rng);  // B=2, T=5 (odd: tiles 2x3 leave tails)
    const Mat w = random_mat(10, 6, rng);
    const Numerics num = fp64(alg);
    GradCheck g;
    g.x = &x;
    g.params = {&attn.qkv.weight, &attn.qkv.bias, &attn.proj.weight, &attn.proj.bias};
    g.loss = [&] { return (attn.forward(x, 5, num).array() * w.array()).sum(); };
    g.backward = [&] { return attn.backward(w, num); };
    CHECK(g.run(std::string("attention ") + at::algorithm_name(alg)) == 60 + 108 + 18 + 36 + 6);
  }
}

TEST_CASE("LM head + cross entropy gradient", "[train][gradcheck]") {
  std::mt19937_64 rng(15);
  INFO("seed 15");
  LmHead head(4, 9);
  randomize(head.out.weight, rng, 1.0);
  Mat x = random_mat(6, 4, rng);
  const std::vector<int> targets = {0, 8, 3, 3, 5, 1};
  const Numerics num = fp64();
  GradCheck g;
  g.x = &x;
  g.params = {&head.out.weight};
  g.loss = [&] { return head.forward(x, targets, num); };
  g.backward = [&] { return head.backward(1.0, num); };
  CHECK(g.run("lm head") == 24 + 36);
}

TEST_CASE("whole model gradient (both attention algorithms)", "[train][gradcheck]") {
  for (const at::Algorithm alg : {at::Algorithm::baseline, at::Algorithm::flash2}) {
    INFO("seed 16, algorithm " << at::algorithm_name(alg));
    ModelConfig cfg{11, 8, 2, 2, 6, 12};
    Model model(cfg);
    model.init(16, attndev::numerics::Format::fp64);
    // Scale the init up so every path carries a visible gradient (0.02 is nearly linear).
    std::mt19937_64 rng(16);
    for (Param* p : model.params())
      p->value += random_mat(int(p->value.rows()), int(p->value.cols()), rng, 0.3);
    const std::vector<int> inputs = {1, 4, 2, 9, 10, 0, 3, 3, 7, 5, 6, 8};  // B=2, T=6
    const std::vector<int> targets = {4, 2, 9, 10, 0, 3, 3, 7, 5, 6, 8, 1};
    const Numerics num = fp64(alg);
    GradCheck g;
    g.params = model.params();
    g.max_per_tensor = 12;
    g.loss = [&] { return model.forward(inputs, targets, 6, num); };
    g.backward = [&] {
      model.backward(1.0, num);
      return Mat();
    };
    CHECK(g.run(std::string("model ") + at::algorithm_name(alg)) > 200);
  }
}
