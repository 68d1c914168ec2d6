// The kernel rounding model against an independent scalar reference, and the FP64 golden against
// an extended-precision one.
//
// The kernel reference below is written from docs/numerics.md's step tables (baseline, flash1,
// flash2), not from lib/attention/rows: one row at a time, plain loops, every operation of an fp32
// stage one IEEE float operation (the kernel model computes each operation exactly and rounds it
// once to its stage's format, which for fp32 is what a float operation does), `fmaf` where the
// table says mac/fma, and an explicit rounding where the table stores a value in a narrower
// format. Rounding to bf16, fp16 and e4m3 is written here from the formats' definitions (fraction
// bits, smallest normal exponent, largest finite value, typed in below, not read from
// numerics::traits) with `nearbyint` in the default round-to-nearest-even mode, so a wrong entry
// of the format table or a wrong rounding routine in lib/numerics shows here too. The inputs are
// drawn and rounded here as well (not through lib/inputs), and the causal rule is written out.
// The one shared piece is numerics' exp_f32 / exp2_f32: the emulator's deterministic fp32 exp is
// part of the model (docs/numerics.md, Notation) and has its own accuracy tests.
//
// Only presets whose every operation computes in fp32 under the kernel model are covered (every
// stage fp32, or a storage stage narrower): kernel-bf16/fp16, torch-math-bf16/fp16, fp32,
// fp8-e4m3. working-* (bf16/fp16 statistics computed exactly and rounded once) would need exact
// arithmetic that is not a float operation; framework-* has its own reference
// (test_framework_model.cpp).
//
// Each emulator result (fast and generic path) must equal the reference bit for bit on every
// element of O and of lse.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "numerics/math.hpp"
#include "test_scale.hpp"

namespace kernel_ref {

using attndev::attention::Algorithm;
using attndev::attention::Inputs;
using attndev::attention::Options;
using attndev::attention::Output;
using attndev::attention::ScalePlacement;
using attndev::attention::Tensor;

constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A storage format as its definition gives it: p fraction bits, smallest normal exponent, largest
// finite value; formats without infinity saturate (the presets' fp8 overflow rule).
struct Fmt {
  const char* name;
  int fraction_bits;
  int min_exponent;
  double max_finite;
  bool has_inf;
};
constexpr Fmt kFp32{"fp32", 23, -126, 0x1.fffffep127, true};
constexpr Fmt kBf16{"bf16", 7, -126, 0x1.fep127, true};
constexpr Fmt kFp16{"fp16", 10, -14, 65504.0, true};
constexpr Fmt kE4m3{"e4m3", 3, -6, 448.0, false};

// x rounded to nearest, ties to even, into f. a / quantum is an exact power-of-two scaling and
// nearbyint rounds it to an integer in the default mode (RNE), which is the rounding wanted.
inline double round_fmt(const Fmt& f, double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return f.has_inf ? x : std::copysign(f.max_finite, x);
  const double a = std::fabs(x);
  if (a == 0) return x;
  int e = 0;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  const int exponent = std::max(e - 1, f.min_exponent);
  const double quantum = std::ldexp(1.0, exponent - f.fraction_bits);
  double r = std::nearbyint(a / quantum) * quantum;
  if (r > f.max_finite) r = f.has_inf ? kInf : f.max_finite;
  return std::copysign(r, x);
}

inline float to(const Fmt& f, float x) {
  return static_cast<float>(round_fmt(f, x));
}

// The stage formats of a preset, as docs/numerics.md ("Presets") describes it. Every operation
// computes in fp32; score, prob and output may be narrower storage formats.
struct Preset {
  const char* name;
  Fmt input, score, prob, output;
};
const Preset kPresets[] = {
    {"kernel-bf16", kBf16, kFp32, kBf16, kBf16},
    {"kernel-fp16", kFp16, kFp32, kFp16, kFp16},
    {"torch-math-bf16", kBf16, kBf16, kBf16, kBf16},
    {"torch-math-fp16", kFp16, kFp16, kFp16, kFp16},
    {"fp32", kFp32, kFp32, kFp32, kFp32},
    {"fp8-e4m3", kE4m3, kFp32, kE4m3, kBf16},
};

struct Problem {
  int batch, heads, nq, nkv, d;
  std::vector<double> q, k, v;  // (B, H, N, d), values of the input format
  double qv(int b, int h, int i, int t) const { return q[((b * heads + h) * nq + i) * d + t]; }
  double kv(int b, int h, int j, int t) const { return k[((b * heads + h) * nkv + j) * d + t]; }
  double vv(int b, int h, int j, int t) const { return v[((b * heads + h) * nkv + j) * d + t]; }
};

struct Settings {
  bool causal;
  bool scale_on_query;
  double scale;  // options.scale, or 1/sqrt(d)
  int bc;        // K/V tile (Br does not change any row's arithmetic)
};

// How many keys row i sees: all, or the bottom-right-aligned causal prefix j <= i + (nkv - nq).
inline int visible(const Problem& p, const Settings& s, int i) {
  if (!s.causal) return p.nkv;
  const long last = long(i) + p.nkv - p.nq;  // the last visible key
  return int(std::clamp<long>(last + 1, 0, p.nkv));
}

struct Row {
  std::vector<float> o;
  double lse;
};

inline float dot(const std::vector<float>& q, const Problem& p, int b, int h, int j) {
  float acc = 0.0f;
  for (int t = 0; t < p.d; ++t) acc = std::fmaf(q[t], float(p.kv(b, h, j, t)), acc);
  return acc;
}

// Row i of baseline: docs/numerics.md, "baseline".
Row baseline_row(const Preset& pr, const Problem& p, const Settings& s, const std::vector<float>& q,
                 int b, int h, int i) {
  const float scale_c = s.scale_on_query ? 1.0f : float(s.scale);
  const int n = visible(p, s, i);
  std::vector<float> S(n);
  float m = -kInfF;
  for (int j = 0; j < n; ++j) {
    S[j] = to(pr.score, dot(q, p, b, h, j) * scale_c);
    if (m < S[j]) m = S[j];
  }
  Row r{std::vector<float>(p.d, 0.0f), -kInf};
  if (m == -kInfF) return r;
  std::vector<float> e(n);
  float l = 0.0f;
  for (int j = 0; j < n; ++j) {
    e[j] = attndev::numerics::exp_f32(S[j] - m);
    l += e[j];
  }
  std::vector<float> P(n);
  for (int j = 0; j < n; ++j) P[j] = to(pr.prob, e[j] / l);
  for (int t = 0; t < p.d; ++t) {
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) acc = std::fmaf(P[j], float(p.vv(b, h, j, t)), acc);
    r.o[t] = to(pr.output, acc);
  }
  r.lse = double(m) + std::log(double(l));
  return r;
}

// Row i of flash2: docs/numerics.md, "flash2" (registers: m, l, acc never rounded between blocks).
Row flash2_row(const Preset& pr, const Problem& p, const Settings& s, const std::vector<float>& q,
               int b, int h, int i) {
  const double scale = s.scale_on_query ? 1.0 : s.scale;
  const float scale_log2 = float(scale * 1.4426950408889634074);
  const int n = visible(p, s, i);
  float m = -kInfF, l = 0.0f;
  std::vector<float> acc(p.d, 0.0f);
  for (int j0 = 0; j0 < n; j0 += s.bc) {
    const int j1 = std::min(n, j0 + s.bc);
    std::vector<float> S(j1 - j0);
    float m_new = m;
    for (int j = j0; j < j1; ++j) {
      S[j - j0] = to(pr.score, dot(q, p, b, h, j));
      if (m_new < S[j - j0]) m_new = S[j - j0];
    }
    if (m_new == -kInfF) continue;
    const float max_scaled = m_new * scale_log2;
    const float alpha = m == -kInfF ? 0.0f : attndev::numerics::exp2_f32((m - m_new) * scale_log2);
    std::vector<float> pj(S.size());
    for (std::size_t j = 0; j < S.size(); ++j)
      pj[j] = attndev::numerics::exp2_f32(std::fmaf(S[j], scale_log2, -max_scaled));
    l = l * alpha;
    for (float x : pj) l = l + x;
    for (int t = 0; t < p.d; ++t) {
      acc[t] = acc[t] * alpha;
      for (int j = j0; j < j1; ++j)
        acc[t] = std::fmaf(to(pr.prob, pj[j - j0]), float(p.vv(b, h, j, t)), acc[t]);
    }
    m = m_new;
  }
  Row r{std::vector<float>(p.d, 0.0f), -kInf};
  if (l == 0.0f) return r;
  const float inv_l = 1.0f / l;
  for (int t = 0; t < p.d; ++t) r.o[t] = to(pr.output, acc[t] * inv_l);
  r.lse = double(m) * scale + std::log(double(l));
  return r;
}

// Row i of flash1: docs/numerics.md, "flash1" (O stored in the output format after every block).
Row flash1_row(const Preset& pr, const Problem& p, const Settings& s, const std::vector<float>& q,
               int b, int h, int i) {
  const float scale_c = s.scale_on_query ? 1.0f : float(s.scale);
  const int n = visible(p, s, i);
  float m = -kInfF, l = 0.0f;
  std::vector<float> o(p.d, 0.0f);
  for (int j0 = 0; j0 < n; j0 += s.bc) {
    const int j1 = std::min(n, j0 + s.bc);
    std::vector<float> S(j1 - j0);
    float mt = -kInfF;
    for (int j = j0; j < j1; ++j) {
      S[j - j0] = to(pr.score, dot(q, p, b, h, j) * scale_c);
      if (mt < S[j - j0]) mt = S[j - j0];
    }
    if (mt == -kInfF) continue;
    std::vector<float> pt(S.size());
    float lt = 0.0f;
    for (std::size_t j = 0; j < S.size(); ++j) {
      pt[j] = attndev::numerics::exp_f32(S[j] - mt);
      lt += pt[j];
    }
    const float m_new = m < mt ? mt : m;
    const float f_old = m == -kInfF ? 0.0f : attndev::numerics::exp_f32(m - m_new);
    const float f_new = attndev::numerics::exp_f32(mt - m_new);
    const float l_new = f_old * l + f_new * lt;
    const float l_f_old = l * f_old;
    for (int t = 0; t < p.d; ++t) {
      float pv = 0.0f;
      for (int j = j0; j < j1; ++j)
        pv = std::fmaf(to(pr.prob, pt[j - j0]), float(p.vv(b, h, j, t)), pv);
      const float num = l_f_old * o[t] + f_new * pv;
      o[t] = to(pr.output, num / l_new);
    }
    m = m_new;  // the stats format is fp32: storing m and l rounds nothing
    l = l_new;
  }
  Row r{o, -kInf};
  if (l == 0.0f) return r;
  r.lse = double(m) + std::log(double(l));
  return r;
}

Output reference(Algorithm algo, const Preset& pr, const Problem& p, const Settings& s) {
  Output out{Tensor(p.batch, p.heads, p.nq, p.d), {}};
  out.lse.assign(std::size_t(p.batch) * p.heads * p.nq, 0.0);
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.heads; ++h)
      for (int i = 0; i < p.nq; ++i) {
        // Input stage: Q as stored, or Q * scale (in double) stored in the input format.
        std::vector<float> q(p.d);
        for (int t = 0; t < p.d; ++t)
          q[t] = float(s.scale_on_query ? round_fmt(pr.input, p.qv(b, h, i, t) * s.scale)
                                        : p.qv(b, h, i, t));
        const Row r = algo == Algorithm::baseline ? baseline_row(pr, p, s, q, b, h, i)
                      : algo == Algorithm::flash1 ? flash1_row(pr, p, s, q, b, h, i)
                                                  : flash2_row(pr, p, s, q, b, h, i);
        for (int t = 0; t < p.d; ++t) out.o.at(b, h, i, t) = r.o[t];
        out.lse[(std::size_t(b) * p.heads + h) * p.nq + i] = r.lse;
      }
  return out;
}

// Q, K, V ~ N(0, stddev^2) rounded to f, drawn here (not through lib/inputs).
Problem make_problem(int batch, int heads, int nq, int nkv, int d, const Fmt& f, double stddev,
                     std::uint64_t seed) {
  Problem p{batch, heads, nq, nkv, d, {}, {}, {}};
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(0.0, stddev);
  auto fill = [&](std::vector<double>& x, int n) {
    x.resize(std::size_t(batch) * heads * n * d);
    for (double& e : x) e = round_fmt(f, dist(rng));
  };
  fill(p.q, nq);
  fill(p.k, nkv);
  fill(p.v, nkv);
  return p;
}

Inputs to_inputs(const Problem& p) {
  Inputs in{Tensor(p.batch, p.heads, p.nq, p.d), Tensor(p.batch, p.heads, p.nkv, p.d),
            Tensor(p.batch, p.heads, p.nkv, p.d)};
  in.q.data = p.q;
  in.k.data = p.k;
  in.v.data = p.v;
  return in;
}

struct Case {
  int batch, heads, nq, nkv, d, br, bc;
  double stddev;
};

// Odd sizes reach partial tiles; N_q > N_kv under the causal mask gives rows that see no key;
// stddev 3 makes scores large enough that the rescale factors are far from 1.
const Case kCases[] = {
    {1, 2, 75, 113, 16, 16, 16, 1.0}, {2, 1, 113, 75, 32, 64, 32, 1.0},
    {1, 1, 64, 64, 64, 64, 64, 1.0},  {1, 1, 40, 17, 8, 7, 5, 3.0},
    {1, 1, 3, 150, 24, 1, 13, 3.0},   {1, 1, 33, 33, 8, 128, 1, 1.0},
};

}  // namespace kernel_ref

TEST_CASE("kernel model equals an independent scalar reference written from docs/numerics.md",
          "[attention][kernel][reference]") {
  namespace kr = kernel_ref;
  namespace at = attndev::attention;
  std::size_t compared = 0;
  std::uint64_t seed = 2600;
  for (const kr::Preset& pr : kr::kPresets)
    for (const kr::Case& c : kr::kCases) {
      const kr::Problem p =
          kr::make_problem(c.batch, c.heads, c.nq, c.nkv, c.d, pr.input, c.stddev, ++seed);
      const at::Inputs in = kr::to_inputs(p);
      for (int variant = 0; variant < 4; ++variant) {
        // At the smoke scale (sanitizer and clang builds) two of the four: causal with the scale
        // on the scores, and not causal with it on Q, so that each flag takes both values.
        if (attndev::test::kSmokeScale && (variant == 0 || variant == 3)) continue;
        kr::Settings s{variant % 2 == 1, variant / 2 == 1, 1.0 / std::sqrt(double(c.d)), c.bc};
        if (seed % 3 == 0) s.scale = 0.3;  // an explicit options.scale on some cases
        at::Options opt;
        opt.causal = s.causal;
        opt.scale_placement =
            s.scale_on_query ? at::ScalePlacement::query : at::ScalePlacement::scores;
        if (seed % 3 == 0) opt.scale = s.scale;
        opt.block_r = c.br;
        opt.block_c = c.bc;
        opt.threads = 1;
        for (at::Algorithm algo :
             {at::Algorithm::baseline, at::Algorithm::flash1, at::Algorithm::flash2}) {
          const at::Output ref = kr::reference(algo, pr, p, s);
          for (at::Options::Path path :
               {at::Options::Path::automatic, at::Options::Path::generic}) {
            opt.path = path;
            const at::Output got = at::run(algo, at::testing::preset(pr.name), in, opt);
            INFO(pr.name << " " << at::algorithm_name(algo) << " B=" << c.batch << " H=" << c.heads
                         << " Nq=" << c.nq << " Nkv=" << c.nkv << " d=" << c.d << " Br=" << c.br
                         << " Bc=" << c.bc << " causal=" << s.causal
                         << " scale_on_query=" << s.scale_on_query << " scale=" << s.scale
                         << " path=" << at::kernel_path(algo, at::testing::preset(pr.name), opt)
                         << (path == at::Options::Path::generic ? " (forced generic)" : "")
                         << " seed=" << seed);
            REQUIRE(got.lse.size() == ref.lse.size());
            std::string first = "none";
            for (std::size_t e = 0; e < got.o.data.size() && first == "none"; ++e)
              if (!at::testing::same_bits(got.o.data[e], ref.o.data[e]))
                first = std::to_string(e) + ": emulator " + std::to_string(got.o.data[e]) +
                        ", reference " + std::to_string(ref.o.data[e]);
            INFO("first differing O element " << first);
            CHECK(at::testing::bit_differences(got, ref) == 0);
            ++compared;
          }
        }
      }
    }
  // 6 presets x 6 cases x 4 (smoke: 2) mask/placement variants x 3 algorithms x 2 paths.
  CHECK(compared == 6 * 6 * (attndev::test::kSmokeScale ? 2 : 4) * 3 * 2);
}

namespace golden_ref {

namespace at = attndev::attention;

// Softmax attention in long double (64-bit significand, 11 bits more than the golden's), written
// out here with the causal rule spelled out: the golden's independent check. Returns O and lse.
at::Output extended(const at::Inputs& in, const at::Options& opt, at::Tensor& weight) {
  const at::Shape s = in.shape();
  const long double scale =
      opt.scale ? (long double)*opt.scale : 1.0L / std::sqrt((long double)s.head_dim);
  at::Output out{at::Tensor(s.batch, s.heads, s.seq_q, s.head_dim), {}};
  weight = at::Tensor(s.batch, s.heads, s.seq_q, s.head_dim);  // sum_j P_ij |V_jt|
  out.lse.assign(std::size_t(s.batch) * s.heads * s.seq_q, 0.0);
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h)
      for (int i = 0; i < s.seq_q; ++i) {
        const int n = opt.causal ? std::clamp(i + 1 + s.seq_kv - s.seq_q, 0, s.seq_kv) : s.seq_kv;
        std::vector<long double> sc(n);
        long double m = -std::numeric_limits<long double>::infinity();
        for (int j = 0; j < n; ++j) {
          long double acc = 0;
          for (int t = 0; t < s.head_dim; ++t)
            acc += (long double)in.q.at(b, h, i, t) * in.k.at(b, h, j, t);
          sc[j] = acc * scale;
          m = std::max(m, sc[j]);
        }
        long double l = 0;
        for (int j = 0; j < n; ++j) l += std::exp(sc[j] - m);
        out.lse[(std::size_t(b) * s.heads + h) * s.seq_q + i] =
            n == 0 ? -std::numeric_limits<double>::infinity() : double(m + std::log(l));
        for (int t = 0; t < s.head_dim; ++t) {
          long double o = 0, w = 0;
          for (int j = 0; j < n; ++j) {
            const long double pj = std::exp(sc[j] - m) / l;
            o += pj * in.v.at(b, h, j, t);
            w += pj * std::fabs(in.v.at(b, h, j, t));
          }
          out.o.at(b, h, i, t) = double(o);
          weight.at(b, h, i, t) = double(w);
        }
      }
  return out;
}

}  // namespace golden_ref

// The golden's error is a few fp64 roundings per dot product, per exp and per sum: far below
// 1e-13 of each element's scale sum_j P_ij |V_jt| at these sizes (N, d <= 200), and far above
// what any narrower stage (fp32: ~1e-7) would leave.
TEST_CASE("the FP64 golden equals a long double reference to 1e-13 relative",
          "[attention][golden][reference]") {
  namespace at = attndev::attention;
  struct G {
    at::Shape shape;
    bool causal;
    at::ScalePlacement placement;
    double stddev;
  };
  const G cases[] = {
      {{1, 2, 75, 113, 16}, false, at::ScalePlacement::scores, 1.0},
      {{2, 1, 113, 75, 64}, true, at::ScalePlacement::scores, 1.0},
      {{1, 1, 40, 17, 8}, true, at::ScalePlacement::query, 3.0},
      {{1, 1, 200, 200, 32}, false, at::ScalePlacement::query, 2.0},
  };
  std::size_t compared_o = 0, compared_lse = 0;
  std::uint64_t seed = 2650;
  for (const G& g : cases) {
    // Unrounded fp64 inputs: the golden's own input stage (fp64) is the identity on them.
    const at::Inputs in = kernel_ref::to_inputs(kernel_ref::make_problem(
        g.shape.batch, g.shape.heads, g.shape.seq_q, g.shape.seq_kv, g.shape.head_dim,
        {"fp64", 52, -1022, std::numeric_limits<double>::max(), true}, g.stddev, ++seed));
    at::Options opt;
    opt.causal = g.causal;
    opt.scale_placement = g.placement;
    opt.block_r = 16;
    opt.block_c = 16;
    INFO("seed " << seed << " Nq=" << g.shape.seq_q << " Nkv=" << g.shape.seq_kv
                 << " d=" << g.shape.head_dim << " causal=" << g.causal);
    at::Tensor weight;
    const at::Output ref = golden_ref::extended(in, opt, weight);
    const at::Output gold = at::golden(in, opt);
    for (std::size_t e = 0; e < ref.o.data.size(); ++e) {
      INFO("O element " << e << ": golden " << gold.o.data[e] << " reference " << ref.o.data[e]);
      REQUIRE(std::fabs(gold.o.data[e] - ref.o.data[e]) <= 1e-13 * weight.data[e]);
      compared_o += weight.data[e] > 0;
    }
    for (std::size_t i = 0; i < ref.lse.size(); ++i) {
      INFO("lse " << i << ": golden " << gold.lse[i] << " reference " << ref.lse[i]);
      if (std::isinf(ref.lse[i])) {
        REQUIRE(gold.lse[i] == ref.lse[i]);
      } else {
        REQUIRE(std::fabs(gold.lse[i] - ref.lse[i]) <=
                1e-13 * std::max(1.0, std::fabs(ref.lse[i])));
        ++compared_lse;
      }
    }
  }
  // Only rows that see a key carry a nonzero weight (causal N_q > N_kv leaves rows that see none).
  CHECK(compared_o > 15000);
  CHECK(compared_lse > 400);
}
