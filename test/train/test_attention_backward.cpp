// attention::backward: fp64 gradients against central finite differences, flash2 == baseline in
// fp64, determinism across thread counts, stage roundings visible in low precision.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "attention/backward.hpp"
#include "numerics/policy.hpp"
#include "numerics/round.hpp"

namespace at = attndev::attention;
namespace nm = attndev::numerics;

namespace {

struct Case {
  std::string name;
  int batch, heads, seq_q, seq_kv, d, block_r, block_c;
  bool causal;
  at::ScalePlacement placement = at::ScalePlacement::scores;
};

at::Tensor random_tensor(int b, int h, int n, int d, std::mt19937_64& rng) {
  std::normal_distribution<double> dist(0.0, 1.0);
  at::Tensor t(b, h, n, d);
  for (double& x : t.data) x = dist(rng);
  return t;
}

// Plain fp64 softmax attention written out independently of the library: O and lse.
at::Output reference_forward(const at::Inputs& in, const at::Options& opt) {
  const at::Shape s = in.shape();
  const double scale = opt.scale.value_or(1.0 / std::sqrt(double(s.head_dim)));
  at::Output out{at::Tensor(s.batch, s.heads, s.seq_q, s.head_dim), {}};
  out.lse.assign(std::size_t(s.batch) * s.heads * s.seq_q, 0.0);
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h)
      for (int i = 0; i < s.seq_q; ++i) {
        std::vector<double> sc(s.seq_kv, -std::numeric_limits<double>::infinity());
        double m = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < s.seq_kv; ++j) {
          if (opt.causal && !at::causal_visible(i, j, s.seq_q, s.seq_kv)) continue;
          double acc = 0;
          for (int c = 0; c < s.head_dim; ++c) acc += in.q.at(b, h, i, c) * in.k.at(b, h, j, c);
          sc[j] = acc * scale;
          m = std::max(m, sc[j]);
        }
        double l = 0;
        for (int j = 0; j < s.seq_kv; ++j)
          if (sc[j] != -std::numeric_limits<double>::infinity()) l += std::exp(sc[j] - m);
        const std::size_t li = (std::size_t(b) * s.heads + h) * s.seq_q + i;
        out.lse[li] = l > 0 ? m + std::log(l) : -std::numeric_limits<double>::infinity();
        for (int c = 0; c < s.head_dim; ++c) {
          double o = 0;
          for (int j = 0; j < s.seq_kv; ++j)
            if (l > 0 && sc[j] != -std::numeric_limits<double>::infinity())
              o += std::exp(sc[j] - m) / l * in.v.at(b, h, j, c);
          out.o.at(b, h, i, c) = o;
        }
      }
  return out;
}

double weighted_sum(const at::Tensor& o, const at::Tensor& w) {
  double s = 0;
  for (std::size_t i = 0; i < o.data.size(); ++i) s += o.data[i] * w.data[i];
  return s;
}

at::Options options_of(const Case& c, int threads) {
  at::Options o;
  o.causal = c.causal;
  o.block_r = c.block_r;
  o.block_c = c.block_c;
  o.threads = threads;
  o.scale_placement = c.placement;
  return o;
}

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) m = std::max(m, std::abs(a.data[i] - b.data[i]));
  return m;
}

double max_abs(const at::Tensor& a) {
  double m = 0;
  for (double x : a.data) m = std::max(m, std::abs(x));
  return m;
}

const Case kCases[] = {
    {"square non-causal", 1, 2, 9, 9, 4, 4, 4, false},
    {"square causal odd tiles", 2, 1, 13, 13, 5, 4, 3, true},
    {"N_q < N_kv causal", 1, 2, 7, 11, 3, 3, 5, true},
    {"N_q > N_kv causal (fully masked rows)", 1, 1, 10, 6, 4, 4, 4, true},
    {"tile larger than N", 1, 1, 5, 5, 6, 16, 16, true},
};

}  // namespace

TEST_CASE("fp64 flash2 backward equals baseline backward", "[backward]") {
  for (const Case& c : kCases) {
    const std::uint64_t seed = 1000 + std::hash<std::string>{}(c.name) % 1000;
    INFO("case " << c.name << " seed " << seed);
    std::mt19937_64 rng(seed);
    at::Inputs in{random_tensor(c.batch, c.heads, c.seq_q, c.d, rng),
                  random_tensor(c.batch, c.heads, c.seq_kv, c.d, rng),
                  random_tensor(c.batch, c.heads, c.seq_kv, c.d, rng)};
    const at::Tensor d_out = random_tensor(c.batch, c.heads, c.seq_q, c.d, rng);
    const at::Options opt = options_of(c, 1);
    const at::Output fwd = reference_forward(in, opt);
    const at::Gradients gb =
        at::backward(at::Algorithm::baseline, nm::kGoldenPolicy, in, fwd, d_out, opt);
    const at::Gradients gf =
        at::backward(at::Algorithm::flash2, nm::kGoldenPolicy, in, fwd, d_out, opt);
    REQUIRE(max_abs(gb.dq) > 0.0);  // a zero gradient would make the comparison vacuous
    REQUIRE(max_abs(gb.dk) > 0.0);
    REQUIRE(max_abs(gb.dv) > 0.0);
    CHECK(max_abs_diff(gb.dq, gf.dq) <= 1e-12 * max_abs(gb.dq));
    CHECK(max_abs_diff(gb.dk, gf.dk) <= 1e-12 * max_abs(gb.dk));
    CHECK(max_abs_diff(gb.dv, gf.dv) <= 1e-12 * max_abs(gb.dv));
    // The same with O and lse from the emulator's own fp64 flash2 forward.
    const at::Output run_fwd = at::run(at::Algorithm::flash2, nm::kGoldenPolicy, in, opt);
    const at::Gradients gr =
        at::backward(at::Algorithm::flash2, nm::kGoldenPolicy, in, run_fwd, d_out, opt);
    CHECK(max_abs_diff(gb.dq, gr.dq) <= 1e-12 * max_abs(gb.dq));
    CHECK(max_abs_diff(gb.dk, gr.dk) <= 1e-12 * max_abs(gb.dk));
    CHECK(max_abs_diff(gb.dv, gr.dv) <= 1e-12 * max_abs(gb.dv));
  }
}

// The gradient checks below take O and lse from reference_forward; it and the FP64 golden are two
// independent fp64 implementations, so they agree to a few fp64 roundings of each element's scale
// (sum_j P_ij |V_jt| <= max_j |V_jt|): 1e-13 relative leaves room for those and none for a stage
// computed in a narrower format.
TEST_CASE("reference_forward equals the FP64 golden to 1e-13 relative", "[backward][golden]") {
  std::size_t compared = 0;
  for (const Case& c : kCases) {
    for (at::ScalePlacement placement : {at::ScalePlacement::scores, at::ScalePlacement::query}) {
      const std::uint64_t seed = 3000 + std::hash<std::string>{}(c.name) % 1000;
      INFO("case " << c.name << " seed " << seed << " query placement "
                   << (placement == at::ScalePlacement::query));
      std::mt19937_64 rng(seed);
      at::Inputs in{random_tensor(c.batch, c.heads, c.seq_q, c.d, rng),
                    random_tensor(c.batch, c.heads, c.seq_kv, c.d, rng),
                    random_tensor(c.batch, c.heads, c.seq_kv, c.d, rng)};
      at::Options opt = options_of(c, 1);
      opt.scale_placement = placement;
      const at::Output ref = reference_forward(in, opt);
      const at::Output gold = at::golden(in, opt);
      REQUIRE(gold.lse.size() == ref.lse.size());
      for (int b = 0; b < c.batch; ++b)
        for (int h = 0; h < c.heads; ++h) {
          for (int t = 0; t < c.d; ++t) {
            double v_max = 0;
            for (int j = 0; j < c.seq_kv; ++j) v_max = std::max(v_max, std::abs(in.v.at(b, h, j, t)));
            for (int i = 0; i < c.seq_q; ++i) {
              INFO("b " << b << " h " << h << " i " << i << " t " << t);
              CHECK(std::abs(gold.o.at(b, h, i, t) - ref.o.at(b, h, i, t)) <= 1e-13 * v_max);
            }
          }
          for (int i = 0; i < c.seq_q; ++i) {
            const std::size_t li = (std::size_t(b) * c.heads + h) * c.seq_q + i;
            INFO("lse row " << i << ": golden " << gold.lse[li] << " reference " << ref.lse[li]);
            if (std::isinf(ref.lse[li])) {
              CHECK(gold.lse[li] == ref.lse[li]);
            } else {
              CHECK(std::abs(gold.lse[li] - ref.lse[li]) <=
                    1e-13 * std::max(1.0, std::abs(ref.lse[li])));
              ++compared;  // a row that sees keys: O and lse were compared at a nonzero scale
            }
          }
        }
    }
  }
  CHECK(compared > 100);
}

TEST_CASE("fp64 backward matches central finite differences", "[backward][gradcheck]") {
  for (const at::Algorithm alg : {at::Algorithm::baseline, at::Algorithm::flash2}) {
    for (Case c : kCases) {
      for (const at::ScalePlacement placement :
           {at::ScalePlacement::scores, at::ScalePlacement::query}) {
        c.placement = placement;
        const std::uint64_t seed = 2000 + std::hash<std::string>{}(c.name) % 1000;
        INFO("algorithm " << at::algorithm_name(alg) << " case " << c.name << " placement "
                          << (placement == at::ScalePlacement::query ? "query" : "scores")
                          << " seed " << seed);
        std::mt19937_64 rng(seed);
        at::Inputs in{random_tensor(c.batch, c.heads, c.seq_q, c.d, rng),
                      random_tensor(c.batch, c.heads, c.seq_kv, c.d, rng),
                      random_tensor(c.batch, c.heads, c.seq_kv, c.d, rng)};
        const at::Tensor w = random_tensor(c.batch, c.heads, c.seq_q, c.d, rng);  // L = <w, O>
        const at::Options opt = options_of(c, 2);
        const at::Gradients g =
            at::backward(alg, nm::kGoldenPolicy, in, reference_forward(in, opt), w, opt);
        const at::Tensor* grads[3] = {&g.dq, &g.dk, &g.dv};
        at::Tensor* vars[3] = {&in.q, &in.k, &in.v};
        int compared = 0;
        for (int which = 0; which < 3; ++which) {
          for (std::size_t idx = 0; idx < vars[which]->data.size(); ++idx) {
            constexpr double kStep = 1e-5;
            double& x = vars[which]->data[idx];
            const double x0 = x;
            x = x0 + kStep;
            const double lp = weighted_sum(reference_forward(in, opt).o, w);
            x = x0 - kStep;
            const double lm = weighted_sum(reference_forward(in, opt).o, w);
            x = x0;
            const double numeric = (lp - lm) / (2 * kStep);
            const double analytic = grads[which]->data[idx];
            // Central differences: truncation O(h^2) ~ 1e-10, cancellation ~ 1e-16 * |L| / h.
            CHECK(std::abs(numeric - analytic) <= 1e-7 * (1.0 + std::abs(numeric)));
            ++compared;
          }
        }
        REQUIRE(compared > 0);
      }
    }
  }
}

TEST_CASE("backward is bit-identical for 1 and 3 threads", "[backward][determinism]") {
  const Case c{"threads", 2, 3, 17, 17, 8, 8, 4, true};
  std::mt19937_64 rng(77);
  INFO("seed 77");
  at::Inputs in{random_tensor(c.batch, c.heads, c.seq_q, c.d, rng),
                random_tensor(c.batch, c.heads, c.seq_kv, c.d, rng),
                random_tensor(c.batch, c.heads, c.seq_kv, c.d, rng)};
  const nm::PrecisionPolicy pol = nm::find_preset("kernel-bf16")->policy;
  for (double& x : in.q.data) x = nm::round_to(nm::Format::bf16, x);
  for (double& x : in.k.data) x = nm::round_to(nm::Format::bf16, x);
  for (double& x : in.v.data) x = nm::round_to(nm::Format::bf16, x);
  const at::Tensor d_out = random_tensor(c.batch, c.heads, c.seq_q, c.d, rng);
  for (const at::Algorithm alg : {at::Algorithm::baseline, at::Algorithm::flash2}) {
    const at::Output fwd = reference_forward(in, options_of(c, 1));
    const at::Gradients g1 = at::backward(alg, pol, in, fwd, d_out, options_of(c, 1));
    const at::Gradients g3 = at::backward(alg, pol, in, fwd, d_out, options_of(c, 3));
    REQUIRE(max_abs(g1.dq) > 0.0);
    CHECK(g1.dq.data == g3.dq.data);
    CHECK(g1.dk.data == g3.dk.data);
    CHECK(g1.dv.data == g3.dv.data);
  }
}

TEST_CASE("low-precision backward stores gradients in the output format", "[backward][policy]") {
  const Case c{"bf16", 1, 2, 12, 12, 8, 4, 4, true};
  std::mt19937_64 rng(91);
  INFO("seed 91");
  at::Inputs in{random_tensor(c.batch, c.heads, c.seq_q, c.d, rng),
                random_tensor(c.batch, c.heads, c.seq_kv, c.d, rng),
                random_tensor(c.batch, c.heads, c.seq_kv, c.d, rng)};
  const at::Tensor d_out = random_tensor(c.batch, c.heads, c.seq_q, c.d, rng);
  const at::Options opt = options_of(c, 1);
  const at::Output fwd = reference_forward(in, opt);
  const at::Gradients exact =
      at::backward(at::Algorithm::baseline, nm::kGoldenPolicy, in, fwd, d_out, opt);
  for (const char* preset : {"kernel-bf16", "working-bf16"}) {
    const nm::PrecisionPolicy pol = nm::find_preset(preset)->policy;
    for (const at::Algorithm alg : {at::Algorithm::baseline, at::Algorithm::flash2}) {
      INFO(preset << " " << at::algorithm_name(alg));
      const at::Gradients g = at::backward(alg, pol, in, fwd, d_out, opt);
      int not_bf16 = 0;
      for (const at::Tensor* t : {&g.dq, &g.dk, &g.dv})
        for (double x : t->data) not_bf16 += !nm::representable(nm::Format::bf16, x);
      CHECK(not_bf16 == 0);
      // Rounding happened (differs from fp64) but the result is still a gradient (bf16 has
      // 8 bits: a relative error of a few percent of the largest entry at most).
      const double err = max_abs_diff(g.dq, exact.dq);
      CHECK(err > 0.0);
      CHECK(err < 0.1 * max_abs(exact.dq));
    }
  }
}

TEST_CASE("backward rejects impossible arguments", "[backward][errors]") {
  std::mt19937_64 rng(5);
  at::Inputs in{random_tensor(1, 1, 4, 2, rng), random_tensor(1, 1, 4, 2, rng),
                random_tensor(1, 1, 4, 2, rng)};
  at::Options opt;
  const at::Output fwd = reference_forward(in, opt);
  CHECK_THROWS_AS(at::backward(at::Algorithm::flash1, nm::kGoldenPolicy, in, fwd, fwd.o, opt),
                  std::invalid_argument);
  const at::Tensor wrong = random_tensor(1, 1, 3, 2, rng);
  CHECK_THROWS_AS(at::backward(at::Algorithm::baseline, nm::kGoldenPolicy, in, fwd, wrong, opt),
                  std::invalid_argument);
  at::Output no_lse = fwd;
  no_lse.lse.clear();
  CHECK_THROWS_AS(at::backward(at::Algorithm::flash2, nm::kGoldenPolicy, in, no_lse, fwd.o, opt),
                  std::invalid_argument);
  // The framework rounding model has no backward; the kernel model of the same formats has.
  const nm::PrecisionPolicy framework = nm::find_preset("framework-bf16")->policy;
  nm::PrecisionPolicy kernel = framework;
  kernel.model = nm::Model::kernel;
  for (at::Algorithm a : {at::Algorithm::baseline, at::Algorithm::flash2}) {
    const at::Output f = at::run(a, framework, in, opt);
    CHECK_THROWS_WITH(at::backward(a, framework, in, f, f.o, opt),
                      Catch::Contains("framework rounding model"));
    CHECK_NOTHROW(at::backward(a, kernel, in, at::run(a, kernel, in, opt), f.o, opt));
  }
}

TEST_CASE("baseline backward: a row's non-finite softmax stays out of the keys it does not see",
          "[backward][policy]") {
  // Causal, N = 4: row 0 sees key 0 only. Its one score overflows bf16 to +inf, so its softmax is
  // NaN (inf - inf), as in the forward. The forward never forms P for the keys row 0 does not
  // see; the backward must keep those P at 0, or the NaN reaches dV of keys 1..3 through P^T dO.
  // (The backward's own softmax loop normalized the whole row, masked zeros included: 0/NaN.)
  const nm::PrecisionPolicy pol = nm::find_preset("kernel-bf16")->policy;
  std::mt19937_64 rng(11);
  at::Inputs in{random_tensor(1, 1, 4, 2, rng), random_tensor(1, 1, 4, 2, rng),
                random_tensor(1, 1, 4, 2, rng)};
  in.q.at(0, 0, 0, 0) = 1e300;
  in.q.at(0, 0, 0, 1) = 0.0;
  in.k.at(0, 0, 0, 0) = 1.0;
  at::Options opt;
  opt.causal = true;
  const at::Output fwd = at::run(at::Algorithm::baseline, pol, in, opt);
  REQUIRE(std::isnan(fwd.o.at(0, 0, 0, 0)));  // the premise: row 0's softmax is NaN
  const at::Tensor d_out = random_tensor(1, 1, 4, 2, rng);
  const at::Gradients g = at::backward(at::Algorithm::baseline, pol, in, fwd, d_out, opt);
  for (int j = 1; j < 4; ++j) {
    INFO("key " << j);
    CHECK(std::isfinite(g.dv.at(0, 0, j, 0)));
    CHECK(std::isfinite(g.dv.at(0, 0, j, 1)));
  }
}
