// Masks beyond the causal one (attention/mask.hpp, rows/mask_hook.hpp): key padding, attention
// masks and additive biases, on every algorithm and both paths.
//   * a mask of zeros is no mask, bit for bit; an explicit causal mask is the causal option;
//   * right padding: a padded batch with its padding masked gives, row for row, the bits of each
//     sequence run alone, under the kernel, framework and math presets and the golden;
//   * the values at masked keys never matter; fully masked rows are O = 0, lse = -inf;
//   * a bias enters softmax(S * scale + bias) (fp64 against a long double reference);
//   * the fast paths equal the generic path under random masks and biases;
//   * bad masks are refused with what and where.
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/mask.hpp"
#include "helpers.hpp"
#include "test_scale.hpp"

using namespace attndev::attention;
using namespace attndev::attention::testing;
namespace nx = attndev::numerics;

namespace {

constexpr double kMasked = -std::numeric_limits<double>::infinity();

struct MaskCase {
  std::string name;
  nx::PrecisionPolicy policy;
};

// The presets under which padding must be exact (the kernel, framework and math models and the
// golden), and a few variations of them.
std::vector<MaskCase> padding_policies() {
  std::vector<MaskCase> out;
  for (const char* n :
       {"kernel-bf16", "kernel-fp16", "framework-bf16", "framework-fp16", "framework-fp32",
        "torch-math-bf16", "torch-math-fp16", "working-bf16", "fp32", "fp64"})
    out.push_back({n, preset(n)});
  nx::PrecisionPolicy p = preset("kernel-bf16");
  p.fma = false;
  out.push_back({"kernel-bf16+fma=false", p});
  p = preset("kernel-bf16");
  p.score_accum = nx::Format::bf16;  // no SIMD kernel: the generic path under automatic
  out.push_back({"kernel-bf16+score_accum=bf16", p});
  return out;
}

std::shared_ptr<Mask> make_mask(int b, int h, int rows, int cols, double fill = 0.0) {
  auto m = std::make_shared<Mask>();
  m->batch = b;
  m->heads = h;
  m->rows = rows;
  m->cols = cols;
  m->bias.assign(static_cast<std::size_t>(b) * h * rows * cols, fill);
  return m;
}

double& at(Mask& m, int b, int h, int i, int j) {
  return m.bias[((static_cast<std::size_t>(b) * m.heads + h) * m.rows + i) * m.cols + j];
}

// Batch b of t, its first `rows` rows: (1, H, rows, d).
Tensor slice(const Tensor& t, int b, int rows) {
  Tensor out(1, t.heads, rows, t.cols);
  for (int h = 0; h < t.heads; ++h)
    for (int i = 0; i < rows; ++i)
      for (int c = 0; c < t.cols; ++c) out.at(0, h, i, c) = t.at(b, h, i, c);
  return out;
}

// Elements of rows [0, rows) of batch b of `padded` whose bits differ from `alone` (B = 1).
std::size_t row_differences(const Output& padded, int b, const Output& alone, int rows) {
  std::size_t n = 0;
  const Tensor& o = padded.o;
  for (int h = 0; h < o.heads; ++h)
    for (int i = 0; i < rows; ++i) {
      for (int c = 0; c < o.cols; ++c) n += !same_bits(o.at(b, h, i, c), alone.o.at(0, h, i, c));
      const double lp = padded.lse[(static_cast<std::size_t>(b) * o.heads + h) * o.rows + i];
      const double la = alone.lse[static_cast<std::size_t>(h) * rows + i];
      n += !same_bits(lp, la);
    }
  return n;
}

Options with_path(Options o, bool generic) {
  if (generic) o.path = Options::Path::generic;
  return o;
}

}  // namespace

TEST_CASE("a mask of zeros is no mask and an explicit causal mask is the causal option",
          "[attention][mask]") {
  std::mt19937_64 rng(11);
  std::size_t compared = 0;
  std::vector<MaskCase> policies = padding_policies();
  policies.push_back({"torch-cpu-flash-bf16", preset("torch-cpu-flash-bf16")});
  // The smoke scale (sanitizer and clang builds): two trials per policy, the first with a tile
  // of 16 keys and one random.
  const int trials = attndev::test::kSmokeScale ? 2 : 3;
  for (const MaskCase& mc : policies) {
    for (int trial = 0; trial < trials; ++trial) {
      Shape s{2, 2, 0, 0, 16};
      s.seq_q = static_cast<int>(1 + rng() % 70);
      s.seq_kv = static_cast<int>(1 + rng() % 70);
      Options opt;
      opt.block_r = static_cast<int>(1 + rng() % 20);
      opt.block_c = trial == 0 ? 16 : static_cast<int>(1 + rng() % 40);
      INFO(mc.name << " " << describe(s, opt) << " trial=" << trial);
      const Inputs in = random_inputs(s, 100 + trial, mc.policy.input);
      auto causal = make_mask(1, 1, s.seq_q, s.seq_kv);
      for (int i = 0; i < s.seq_q; ++i)
        for (int j = 0; j < s.seq_kv; ++j)
          if (!causal_visible(i, j, s.seq_q, s.seq_kv)) at(*causal, 0, 0, i, j) = kMasked;
      for (Algorithm a : kAllAlgorithms)
        for (bool generic : {false, true}) {
          INFO(algorithm_name(a) << (generic ? " generic" : " automatic"));
          const Options plain = with_path(opt, generic);
          Options zeros = plain;
          zeros.mask = make_mask(s.batch, 1, 1, s.seq_kv);
          CHECK(bit_differences(run(a, mc.policy, in, zeros), run(a, mc.policy, in, plain)) == 0);
          Options explicit_causal = plain;
          explicit_causal.mask = causal;
          Options causal_option = plain;
          causal_option.causal = true;
          CHECK(bit_differences(run(a, mc.policy, in, explicit_causal),
                                run(a, mc.policy, in, causal_option)) == 0);
          compared += 2;
        }
    }
  }
  CHECK(compared == policies.size() * trials * 3 * 2 * 2);
}

TEST_CASE("right padding masked gives each sequence's own bits, every exact preset",
          "[attention][mask]") {
  // Two sequences of different lengths padded to the longer; the padding's K, V (and queries)
  // are random values, masked by a key-padding mask (B, 1, 1, S), or by a causal mask combined
  // with it (B, 1, L, S), as Hugging Face models pass them to SDPA.
  std::mt19937_64 rng(23);
  std::size_t compared = 0;
  // The smoke scale (sanitizer and clang builds): two trials per policy, one without and one
  // with the causal mask.
  const int trials = attndev::test::kSmokeScale ? 2 : 4;
  for (const MaskCase& mc : padding_policies()) {
    for (int trial = 0; trial < trials; ++trial) {
      const int len[2] = {static_cast<int>(1 + rng() % 90), static_cast<int>(1 + rng() % 90)};
      const int n_pad = std::max(len[0], len[1]) + static_cast<int>(rng() % 9);
      const bool causal = trial % 2 == 1;
      Shape s{2, 2, n_pad, n_pad, static_cast<int>(8 + rng() % 30)};
      Options opt;
      opt.block_r = static_cast<int>(1 + rng() % 33);
      opt.block_c = trial == 0 ? 16 : static_cast<int>(1 + rng() % 70);
      INFO(mc.name << " " << describe(s, opt) << " lengths " << len[0] << ", " << len[1]
                   << (causal ? " causal" : "") << " trial=" << trial);
      const Inputs in = random_inputs(s, 300 + trial, mc.policy.input);
      auto mask = make_mask(2, 1, causal ? n_pad : 1, n_pad);
      for (int b = 0; b < 2; ++b)
        for (int i = 0; i < mask->rows; ++i)
          for (int j = 0; j < n_pad; ++j)
            if (j >= len[b] || (causal && j > i)) at(*mask, b, 0, i, j) = kMasked;
      for (Algorithm a : kAllAlgorithms)
        for (bool generic : {false, true}) {
          INFO(algorithm_name(a) << (generic ? " generic" : " automatic"));
          Options padded_opt = with_path(opt, generic);
          padded_opt.mask = mask;
          const Output padded = run(a, mc.policy, in, padded_opt);
          for (int b = 0; b < 2; ++b) {
            const Inputs alone{slice(in.q, b, len[b]), slice(in.k, b, len[b]),
                               slice(in.v, b, len[b])};
            Options alone_opt = with_path(opt, generic);
            alone_opt.causal = causal;
            CHECK(row_differences(padded, b, run(a, mc.policy, alone, alone_opt), len[b]) == 0);
            ++compared;
          }
        }
    }
  }
  CHECK(compared == padding_policies().size() * trials * 3 * 2 * 2);
}

TEST_CASE("fp8 algorithms: keys padded with zeros and masked give the unpadded bits",
          "[attention][mask][fp8]") {
  // The fp8 algorithms scale by the amax of each block or tensor: zero padding leaves every
  // scale as it is, so the masked keys are the only difference.
  nx::PrecisionPolicy policy = preset("fp8-e4m3");
  policy.input = nx::Format::fp16;
  std::size_t compared = 0;
  for (int trial = 0; trial < 4; ++trial) {
    const int len = 37 + 11 * trial, n_pad = len + 5 + trial;
    const Shape s{1, 2, 48, n_pad, 64};
    Options opt;
    opt.block_r = 16;
    opt.block_c = trial % 2 == 0 ? 16 : 64;
    INFO(describe(s, opt) << " length " << len);
    Inputs in = random_inputs(s, 500 + trial, policy.input);
    for (Tensor* t : {&in.k, &in.v})
      for (int h = 0; h < s.heads; ++h)
        for (int j = len; j < n_pad; ++j)
          for (int c = 0; c < s.head_dim; ++c) t->at(0, h, j, c) = 0.0;
    auto mask = make_mask(1, 1, 1, n_pad);
    for (int j = len; j < n_pad; ++j) at(*mask, 0, 0, 0, j) = kMasked;
    const Inputs alone{in.q, slice(in.k, 0, len), slice(in.v, 0, len)};
    for (Algorithm a : kFp8Algorithms)
      for (bool generic : {false, true}) {
        INFO(algorithm_name(a) << (generic ? " generic" : " automatic"));
        Options padded_opt = with_path(opt, generic);
        padded_opt.mask = mask;
        CHECK(bit_differences(run(a, policy, in, padded_opt),
                              run(a, policy, alone, with_path(opt, generic))) == 0);
        ++compared;
      }
  }
  CHECK(compared == 4 * 4 * 2);
}

TEST_CASE("values at masked keys never matter and fully masked rows are O = 0, lse = -inf",
          "[attention][mask]") {
  std::mt19937_64 rng(31);
  const Shape s{1, 2, 29, 53, 16};
  auto mask = make_mask(1, 2, s.seq_q, s.seq_kv);
  std::vector<bool> masked(static_cast<std::size_t>(2) * s.seq_q * s.seq_kv);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < s.seq_q; ++i)
      for (int j = 0; j < s.seq_kv; ++j) {
        const bool m = i == 7 || rng() % 3 == 0;  // row 7: every key masked
        masked[(static_cast<std::size_t>(h) * s.seq_q + i) * s.seq_kv + j] = m;
        if (m) at(*mask, 0, h, i, j) = kMasked;
      }
  std::size_t compared = 0;
  for (const MaskCase& mc : padding_policies()) {
    const Inputs in = random_inputs(s, 41, mc.policy.input);
    Inputs other = in;  // different values wherever a key is masked for some query of the head
    for (int h = 0; h < 2; ++h)
      for (int j = 0; j < s.seq_kv; ++j) {
        bool everywhere = true;
        for (int i = 0; i < s.seq_q; ++i)
          everywhere =
              everywhere && masked[(static_cast<std::size_t>(h) * s.seq_q + i) * s.seq_kv + j];
        if (!everywhere) continue;
        for (int c = 0; c < s.head_dim; ++c) {
          other.k.at(0, h, j, c) = nx::round_to(mc.policy.input, other.k.at(0, h, j, c) * 3 + 1);
          other.v.at(0, h, j, c) = nx::round_to(mc.policy.input, -other.v.at(0, h, j, c) * 2);
        }
      }
    for (Algorithm a : kAllAlgorithms) {
      INFO(mc.name << " " << algorithm_name(a));
      Options opt;
      opt.block_r = 8;
      opt.block_c = 16;
      opt.mask = mask;
      const Output out = run(a, mc.policy, in, opt);
      CHECK(bit_differences(out, run(a, mc.policy, other, opt)) == 0);
      for (int h = 0; h < 2; ++h) {
        for (int c = 0; c < s.head_dim; ++c) CHECK(same_bits(out.o.at(0, h, 7, c), 0.0));
        CHECK(out.lse[static_cast<std::size_t>(h) * s.seq_q + 7] == kMasked);
      }
      ++compared;
    }
  }
  CHECK(compared == padding_policies().size() * 3);
}

TEST_CASE("a bias is added to the scaled scores: fp64 against a long double reference",
          "[attention][mask]") {
  const Shape s{1, 1, 21, 45, 12};
  const Inputs in = random_inputs(s, 57, nx::Format::fp64);
  std::mt19937_64 rng(57);
  std::normal_distribution<double> normal(0.0, 2.0);
  auto mask = make_mask(1, 1, s.seq_q, s.seq_kv);
  for (double& b : mask->bias) b = rng() % 5 == 0 ? kMasked : normal(rng);
  for (int scale_case = 0; scale_case < 2; ++scale_case) {
    Options opt;
    opt.block_r = 4;
    opt.block_c = 8;
    opt.mask = mask;
    opt.scale = scale_case == 0 ? std::optional<double>() : std::optional<double>(0.7);
    const long double scale = scale_case == 0 ? 1.0L / std::sqrt(12.0L) : 0.7L;
    std::vector<long double> ref(static_cast<std::size_t>(s.seq_q) * s.head_dim);
    for (int i = 0; i < s.seq_q; ++i) {
      std::vector<long double> z(static_cast<std::size_t>(s.seq_kv));
      long double zmax = -INFINITY;
      for (int j = 0; j < s.seq_kv; ++j) {
        long double dot = 0;
        for (int c = 0; c < s.head_dim; ++c)
          dot += static_cast<long double>(in.q.at(0, 0, i, c)) * in.k.at(0, 0, j, c);
        z[j] = dot * scale + at(*mask, 0, 0, i, j);
        zmax = std::max(zmax, z[j]);
      }
      long double sum = 0;
      for (long double& x : z) sum += (x = std::exp(x - zmax));
      for (int c = 0; c < s.head_dim; ++c) {
        long double o = 0;
        for (int j = 0; j < s.seq_kv; ++j) o += z[j] / sum * in.v.at(0, 0, j, c);
        ref[static_cast<std::size_t>(i) * s.head_dim + c] = o;
      }
    }
    for (Algorithm a : kAllAlgorithms)
      for (const char* pol : {"fp64", "framework-fp64"}) {
        INFO(algorithm_name(a) << " " << pol << " scale case " << scale_case);
        const Output out = run(a, preset(pol), in, opt);
        double worst = 0;
        for (std::size_t e = 0; e < ref.size(); ++e)
          worst = std::max(worst, static_cast<double>(std::fabs(out.o.data[e] - ref[e])));
        CHECK(worst < 1e-13);
      }
    // The same bias ignored would be far off: the comparison sees the bias.
    Options unbiased = opt;
    unbiased.mask.reset();
    CHECK(max_abs_diff(golden(in, unbiased).o, golden(in, opt).o) > 1e-3);
  }
}

TEST_CASE("fast paths equal the generic path under random masks and biases",
          "[attention][mask][fast]") {
  std::mt19937_64 rng(77);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::size_t compared = 0;
  const std::vector<MaskCase> policies = padding_policies();
  const int trials = static_cast<int>(attndev::test::scaled_count(60, 12));
  for (int trial = 0; trial < trials; ++trial) {
    const MaskCase& mc = policies[static_cast<std::size_t>(trial) % policies.size()];
    Shape s{static_cast<int>(1 + rng() % 2), static_cast<int>(1 + rng() % 2),
            static_cast<int>(1 + rng() % 80), static_cast<int>(1 + rng() % 80),
            static_cast<int>(1 + rng() % 40)};
    Options opt;
    opt.block_r = static_cast<int>(1 + rng() % 20);
    opt.block_c = static_cast<int>(1 + rng() % 70);
    opt.causal = rng() % 3 == 0;
    opt.scale_placement = rng() % 4 == 0 ? ScalePlacement::query : ScalePlacement::scores;
    auto mask = make_mask(rng() % 2 == 0 ? 1 : s.batch, rng() % 2 == 0 ? 1 : s.heads,
                          rng() % 3 == 0 ? 1 : s.seq_q, s.seq_kv);
    const int kind = static_cast<int>(rng() % 3);  // 0: boolean, 1: bias, 2: both
    for (double& b : mask->bias) {
      if (kind != 1 && rng() % 4 == 0)
        b = kMasked;
      else if (kind != 0)
        b = normal(rng);
    }
    opt.mask = mask;
    INFO(mc.name << " " << describe(s, opt) << " mask (" << mask->batch << ", " << mask->heads
                 << ", " << mask->rows << ", " << mask->cols << ") kind " << kind
                 << " trial=" << trial);
    const Inputs in = random_inputs(s, 900 + trial, mc.policy.input);
    for (Algorithm a : kAllAlgorithms) {
      if (std::string(kernel_path(a, mc.policy, opt)) == "generic") continue;
      INFO(algorithm_name(a));
      CHECK(bit_differences(run(a, mc.policy, in, opt),
                            run(a, mc.policy, in, with_path(opt, /*generic=*/true))) == 0);
      ++compared;
    }
  }
  CHECK(compared >= static_cast<std::size_t>(trials) * 2);
}

TEST_CASE("the twins of GPU kernels refuse a mask instead of ignoring it", "[attention][mask]") {
  const Shape s{1, 1, 16, 16, 64};
  const Inputs in = random_inputs(s, 3, nx::Format::bf16);
  Options opt;
  opt.mask = make_mask(1, 1, 1, 16);
  for (Algorithm a : kTwinAlgorithms) {
    INFO(algorithm_name(a));
    CHECK_THROWS_WITH(run(a, preset("kernel-bf16"), in, opt),
                      Catch::Matchers::Contains("masks beyond the causal one are not modelled in "
                                                "the twins"));
  }
}

TEST_CASE("a bias is held as the score arithmetic holds it", "[attention][mask]") {
  auto zero_inf = make_mask(1, 1, 1, 3);
  zero_inf->bias = {0.0, kMasked, -0.0};
  CHECK(mask_for_policy(zero_inf, preset("kernel-bf16")) == zero_inf);  // nothing to round
  auto fine = make_mask(1, 1, 1, 2);
  fine->bias = {0.1, -1e300};
  const auto fp32 = mask_for_policy(fine, preset("kernel-bf16"));
  REQUIRE(fp32 != fine);
  CHECK(fp32->bias[0] == static_cast<double>(0.1f));
  CHECK(fp32->bias[1] == kMasked);  // beyond fp32's range: a masked key, as in an fp32 kernel
  CHECK(mask_for_policy(fine, preset("fp64")) == fine);
}

TEST_CASE("bad masks are refused with what and where", "[attention][mask]") {
  const Shape s{2, 3, 5, 7, 4};
  const Inputs in = random_inputs(s, 1, nx::Format::fp32);
  Options opt;
  auto expect = [&](std::shared_ptr<Mask> m, const std::string& text) {
    opt.mask = std::move(m);
    CHECK_THROWS_WITH(run(Algorithm::flash2, preset("fp32"), in, opt),
                      Catch::Matchers::Contains(text));
  };
  expect(make_mask(3, 1, 1, 7), "batch extent is 3; it must be 1 (broadcast) or the batch size 2");
  expect(make_mask(1, 2, 1, 7), "heads extent is 2");
  expect(make_mask(1, 1, 4, 7), "query (rows) extent is 4");
  expect(make_mask(1, 1, 1, 6),
         "key (cols) extent is 6; it must be 1 (broadcast) or the key "
         "length N_kv 7");
  auto short_data = make_mask(1, 1, 1, 7);
  short_data->bias.pop_back();
  expect(short_data, "mask: 6 values for extents (1, 1, 1, 7) = 7");
  auto nan = make_mask(1, 1, 5, 7);
  at(*nan, 0, 0, 2, 3) = std::nan("");
  expect(nan, "mask: NaN at flat index 17 (query 2, key 3)");
  auto pos_inf = make_mask(1, 1, 1, 7);
  at(*pos_inf, 0, 0, 0, 6) = INFINITY;
  expect(pos_inf, "mask: +inf at flat index 6 (query 0, key 6)");
}
