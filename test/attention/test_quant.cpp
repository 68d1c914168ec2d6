// The quantization stage (attention/quantize.hpp) and the quantized recipes
// (attention/quant_recipes.hpp): scale rules against their published formulas on crafted blocks,
// fa3-fp8-paper against flash3-fp8 bit for bit, sage2-8b against an independent scalar reference
// written from docs/numerics.md, the unsupported combinations named, and every recipe near the
// golden with its stages reported.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "attention/quant_recipes.hpp"
#include "attention/quantize.hpp"
#include "helpers.hpp"
#include "inputs/random_inputs.hpp"
#include "numerics/math.hpp"
#include "numerics/round.hpp"

using namespace attndev::attention;
using namespace attndev::attention::testing;
namespace nx = attndev::numerics;
namespace q = attndev::attention::quant;

namespace {

Tensor row_tensor(const std::vector<double>& values, int cols) {
  Tensor t(1, 1, static_cast<int>(values.size()) / cols, cols);
  t.data = values;
  return t;
}

nx::PrecisionPolicy with_mma(const char* preset_name, nx::mma::Arch arch) {
  nx::PrecisionPolicy p = preset(preset_name);
  p.mma = arch;
  return p;
}

float f32(double x) {
  return static_cast<float>(x);
}

}  // namespace

TEST_CASE("quantize: the MX scale rules give the published exponents", "[quant]") {
  // One block of 32 along d: amax 3 -> OCP 2^(floor(log2 3) - 8) = 2^-7; NVIDIA's round-up
  // 2^ceil(log2(3 / 448)) = 2^-7 as well; amax 448 -> OCP 2^0, round-up 2^0; amax 449 -> OCP
  // 2^0 (449 saturates to 448), round-up 2^1.
  for (const auto& [amax, ocp, rceil, saturated] :
       {std::tuple{3.0, -7, -7, 0}, std::tuple{448.0, 0, 0, 0}, std::tuple{470.0, 0, 1, 1},
        std::tuple{0.75, -9, -9, 0}}) {
    std::vector<double> x(32, 0.0);
    x[5] = -amax;
    x[6] = amax / 3;
    const Tensor t = row_tensor(x, 32);
    const q::Spec o{nx::Format::fp8_e4m3, q::Granularity::row_groups, 1, 32,
                    q::ScaleRule::ocp_floor};
    const q::Spec r{nx::Format::fp8_e4m3, q::Granularity::row_groups, 1, 32,
                    q::ScaleRule::nv_rceil};
    const q::Quantized qo = q::quantize(t, o), qr = q::quantize(t, r);
    INFO("amax " << amax);
    CHECK(qo.scales[0] == std::ldexp(1.0, ocp));
    CHECK(qr.scales[0] == std::ldexp(1.0, rceil));
    CHECK(qo.stats.saturated == static_cast<std::size_t>(saturated));
    CHECK(qo.dequantized(0, 0, 0, 5) ==
          -nx::round_to(nx::Format::fp8_e4m3, amax / qo.scales[0], nx::Overflow::saturate) *
              qo.scales[0]);
  }
  // An all-zero block: zeros, whatever the rule; the amax_div rule's scale is 0 and says so.
  const Tensor zeros = row_tensor(std::vector<double>(64, 0.0), 32);
  for (q::ScaleRule rule : {q::ScaleRule::ocp_floor, q::ScaleRule::nv_rceil, q::ScaleRule::amax,
                            q::ScaleRule::amax_div, q::ScaleRule::ue4m3_recip}) {
    const q::Spec s{nx::Format::fp8_e4m3, q::Granularity::row_groups, 1, 32, rule};
    const q::Quantized z = q::quantize(zeros, s);
    for (double v : z.dequantized().data) CHECK(v == 0.0);
    CHECK(z.stats.zero_scales ==
          (rule == q::ScaleRule::amax_div || rule == q::ScaleRule::ue4m3_recip ? 2u : 0u));
  }
}

TEST_CASE("quantize: nvfp4 follows torchao's two-level rule, saturation counted", "[quant]") {
  // Tensor amax 2688 -> tensor scale 1. Block amax 6.375 -> block scale 1.0625, the tie between
  // e4m3's 1 and 1.125 -> 1 (even): 6.375 / 1 is beyond fp4's 6, clamped to 6 as torchao clamps;
  // fp4's own grid (4, 6, 8) would round it to 6 as well, so it is not counted as saturated (an
  // e4m3 scale rounds down by at most 1/16: nvfp4 never pushes an element past 6.4).
  std::vector<double> x(32, 0.5);
  x[0] = 2688.0;
  x[16] = 6.375;
  const q::Quantized n =
      q::quantize(row_tensor(x, 32),
                  {nx::Format::fp4_e2m1, q::Granularity::row_groups, 1, 16, q::ScaleRule::nvfp4});
  CHECK(n.tensor_scale == 1.0);
  CHECK(n.scales[0] == 448.0);
  CHECK(n.scales[1] == 1.0);
  CHECK(n.stats.saturated == 0);
  CHECK(n.dequantized(0, 0, 0, 16) == 6.0);
  CHECK(n.dequantized(0, 0, 0, 17) == 0.5);
  // Every dequantized value is element x block scale x tensor scale.
  for (int c = 0; c < 32; ++c)
    CHECK(n.dequantized(0, 0, 0, c) == n.values.at(0, 0, 0, c) * n.scale(0, 0, 0, c));
  // A head dim the blocks cannot tile is refused by name.
  CHECK_THROWS_WITH(q::quantize(row_tensor(std::vector<double>(48, 1.0), 48),
                                {nx::Format::fp8_e4m3, q::Granularity::row_groups, 1, 32,
                                 q::ScaleRule::nv_rceil}),
                    Catch::Contains("cannot tile d = 48"));
}

TEST_CASE("fa3-fp8-paper without a tensor-core profile equals flash3-fp8 bit for bit",
          "[quant][fp8]") {
  nx::PrecisionPolicy pol = preset("fp8-e4m3");
  pol.input = nx::Format::fp16;
  int compared = 0;
  for (const auto& [mine, theirs] :
       {std::pair{Algorithm::fa3_fp8_paper, Algorithm::flash3_fp8},
        std::pair{Algorithm::fa3_fp8_paper_per_tensor, Algorithm::flash3_fp8_per_tensor},
        std::pair{Algorithm::fa3_fp8_paper_no_hadamard, Algorithm::flash3_fp8_no_hadamard}})
    for (bool causal : {false, true})
      for (const Shape& s : {Shape{1, 2, 75, 113, 64}, Shape{2, 1, 113, 75, 32}}) {
        const Inputs in = outlier_inputs(s, 36 + compared, nx::Format::fp16);
        Options opt;
        opt.causal = causal;
        opt.block_r = 32;
        opt.block_c = 16;
        INFO(algorithm_name(mine) << " causal " << causal << " N " << s.seq_q);
        CHECK(bit_differences(run(mine, pol, in, opt), run(theirs, pol, in, opt)) == 0);
        ++compared;
      }
  CHECK(compared == 12);
}

namespace {

// sage2-8b with no tensor-core model, written from docs/numerics.md's description of the recipe
// (SageAttention2's rules), one row at a time in plain loops: (B, H, N, d) in, O (fp16) out.
Tensor sage2_reference(const Inputs& in, int bc) {
  const int B = in.q.batch, H = in.q.heads, nq = in.q.rows, nk = in.k.rows, d = in.q.cols;
  Tensor o(B, H, nq, d);
  const float sl2 = f32(1.0 / std::sqrt(static_cast<double>(d))) * f32(nx::kLog2e);
  auto int8 = [](float x) {  // Triton: x += 0.5 * sign, then truncation
    const float y = x + (x >= 0 ? 0.5f : -0.5f);
    return std::trunc(static_cast<double>(y));
  };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      std::vector<double> k(static_cast<std::size_t>(nk) * d), q8(static_cast<std::size_t>(nq) * d),
          k8(k.size()), v8(k.size()), sq(static_cast<std::size_t>(nq)),
          sk(static_cast<std::size_t>(nk)), sv(static_cast<std::size_t>(d));
      for (int c = 0; c < d; ++c) {
        double sum = 0;
        for (int j = 0; j < nk; ++j) sum += in.k.at(b, h, j, c);
        const double mean = nx::round_to(nx::Format::fp16, sum / nk);
        for (int j = 0; j < nk; ++j)
          k[static_cast<std::size_t>(j) * d + c] =
              nx::round_to(nx::Format::fp16, f32(in.k.at(b, h, j, c)) - f32(mean));
      }
      // Q: in each slice of 32 rows, rows i = i0 + t (mod 8) share a scale.
      for (int i0 = 0; i0 < nq; i0 += 32)
        for (int t = 0; t < 8; ++t) {
          float amax = 0;
          for (int i = i0 + t; i < std::min(nq, i0 + 32); i += 8)
            for (int c = 0; c < d; ++c) amax = std::max(amax, f32(std::fabs(in.q.at(b, h, i, c))));
          const float s = amax / 127.0f + 0.0000001f;
          for (int i = i0 + t; i < std::min(nq, i0 + 32); i += 8) {
            sq[static_cast<std::size_t>(i)] = s;
            for (int c = 0; c < d; ++c)
              q8[static_cast<std::size_t>(i) * d + c] = int8(f32(in.q.at(b, h, i, c)) / s);
          }
        }
      // K: in each block of 64 rows, rows 8j + 2t and 8j + 2t + 1 share scale t.
      for (int j0 = 0; j0 < nk; j0 += 64)
        for (int t = 0; t < 4; ++t) {
          std::vector<int> members;
          for (int j = j0; j < std::min(nk, j0 + 64); ++j)
            if ((j % 8) / 2 == t) members.push_back(j);
          float amax = 0;
          for (int j : members)
            for (int c = 0; c < d; ++c)
              amax = std::max(amax, f32(std::fabs(k[static_cast<std::size_t>(j) * d + c])));
          const float s = amax / 127.0f + 0.0000001f;
          for (int j : members) {
            sk[static_cast<std::size_t>(j)] = s;
            for (int c = 0; c < d; ++c)
              k8[static_cast<std::size_t>(j) * d + c] =
                  int8(f32(k[static_cast<std::size_t>(j) * d + c]) / s);
          }
        }
      for (int c = 0; c < d; ++c) {  // V per channel, amax / 448, x * (448 / amax)
        float amax = 0;
        for (int j = 0; j < nk; ++j) amax = std::max(amax, f32(std::fabs(in.v.at(b, h, j, c))));
        sv[static_cast<std::size_t>(c)] = amax / 448.0f;
        for (int j = 0; j < nk; ++j)
          v8[static_cast<std::size_t>(j) * d + c] =
              nx::round_to(nx::Format::fp8_e4m3, f32(in.v.at(b, h, j, c)) * (448.0f / amax),
                           nx::Overflow::saturate);
      }
      for (int i = 0; i < nq; ++i) {
        float m = -INFINITY, l = 0;
        std::vector<float> acc(static_cast<std::size_t>(d), 0.0f);
        for (int j0 = 0; j0 < nk; j0 += bc) {
          const int n = std::min(bc, nk - j0);
          std::vector<float> s(static_cast<std::size_t>(n)), e(s.size());
          float m_new = m;
          for (int j = 0; j < n; ++j) {
            double dot = 0;
            for (int c = 0; c < d; ++c)
              dot += q8[static_cast<std::size_t>(i) * d + c] *
                     k8[static_cast<std::size_t>(j0 + j) * d + c];
            s[j] = f32(dot);
            e[j] = sl2 * (f32(sq[i]) * f32(sk[j0 + j]));
            m_new = std::max(m_new, std::fma(s[j], e[j], -8.807f));
          }
          const float alpha = m == -INFINITY ? 0.0f : nx::exp2_f32(m - m_new);
          l = l * alpha;
          std::vector<double> p8(s.size());
          for (int j = 0; j < n; ++j) {
            const float p = nx::exp2_f32(std::fma(s[j], e[j], -m_new));
            l = l + p;
            p8[j] = nx::round_to(nx::Format::fp8_e4m3, p, nx::Overflow::saturate);
          }
          for (int c = 0; c < d; ++c) {
            float pv = 0;
            for (int j = 0; j < n; ++j)
              pv = std::fma(f32(p8[j]), f32(v8[static_cast<std::size_t>(j0 + j) * d + c]), pv);
            acc[c] = acc[c] * alpha + pv;
          }
          m = m_new;
        }
        for (int c = 0; c < d; ++c)
          o.at(b, h, i, c) = nx::round_to(nx::Format::fp16, (acc[c] * (1.0f / l)) * f32(sv[c]));
      }
    }
  return o;
}

}  // namespace

TEST_CASE("sage2-8b without a tensor-core profile equals an independent scalar reference",
          "[quant]") {
  int compared = 0;
  for (const Shape& s : {Shape{1, 2, 75, 113, 64}, Shape{1, 1, 130, 70, 32}}) {
    const Inputs in = outlier_inputs(s, 7 + compared, nx::Format::fp16);
    Options opt;
    opt.block_r = 32;
    opt.block_c = 64;
    const Output got = run(Algorithm::sage2_8b, preset("kernel-fp16"), in, opt);
    const Tensor want = sage2_reference(in, 64);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < want.data.size(); ++i)
      differ += !same_bits(got.o.data[i], want.data[i]);
    INFO("N " << s.seq_q << " N_kv " << s.seq_kv);
    CHECK(differ == 0);
    ++compared;
  }
  CHECK(compared == 2);
}

TEST_CASE("quantized recipes: what a profile or a shape cannot run is named", "[quant]") {
  using nx::mma::Arch;
  const Shape s{1, 1, 128, 128, 64};
  CHECK_THAT(unsupported_reason(Algorithm::sage3, with_mma("kernel-fp16", Arch::sm90), s),
             Catch::Contains("sm90 does not have") && Catch::Contains("sm100"));
  CHECK_THAT(unsupported_reason(Algorithm::mxfp8, with_mma("kernel-fp16", Arch::sm89), s),
             Catch::Contains("kind::mxf8f6f4"));
  CHECK_THAT(unsupported_reason(Algorithm::sage2_4b, with_mma("kernel-fp16", Arch::sm100), s),
             Catch::Contains("int4"));
  CHECK(unsupported_reason(Algorithm::sage2_4b, with_mma("kernel-fp16", Arch::sm89), s).empty());
  const Shape d48{1, 1, 128, 128, 48};
  CHECK_THAT(unsupported_reason(Algorithm::mxfp8, preset("kernel-fp16"), d48),
             Catch::Contains("cannot tile d = 48"));
  CHECK_THAT(unsupported_reason(Algorithm::fa3_fp8_paper, preset("kernel-fp16"), d48),
             Catch::Contains("power of two"));
  CHECK_THAT(unsupported_reason(Algorithm::mxfp8, preset("kernel-fp16"), s, 64, 48),
             Catch::Contains("block_c 48"));
  for (Algorithm a : kQuantAlgorithms)
    CHECK(unsupported_reason(a, preset("kernel-fp16"), s).empty());
  const Inputs in = random_inputs(d48, 1, nx::Format::fp16);
  CHECK_THROWS_WITH(run(Algorithm::mxfp8, preset("kernel-fp16"), in, Options{}),
                    Catch::Contains("cannot tile d = 48"));
}

TEST_CASE("quantized recipes stay near the golden and report their stages", "[quant]") {
  using nx::mma::Arch;
  const Shape s{1, 2, 128, 128, 64};
  const Inputs in = random_inputs(s, 3, nx::Format::fp16);
  Options opt;
  const Output gold = golden(in, opt);
  int compared = 0;
  for (Algorithm a : kQuantAlgorithms)
    for (Arch arch : {Arch::none, Arch::sm89, Arch::sm90, Arch::sm100}) {
      const nx::PrecisionPolicy pol = with_mma("kernel-fp16", arch);
      if (!unsupported_reason(a, pol, s).empty()) continue;
      const Output out = run(a, pol, in, opt);
      double err = 0, ref = 0;
      for (std::size_t i = 0; i < out.o.data.size(); ++i) {
        err += std::pow(out.o.data[i] - gold.o.data[i], 2);
        ref += std::pow(gold.o.data[i], 2);
      }
      // 4-bit recipes keep about 1 significant bit per element; 8-bit ones about 4.
      const bool four_bit = a == Algorithm::sage2_4b || a == Algorithm::sage3;
      INFO(algorithm_name(a) << " on " << nx::mma::arch_name(arch));
      CHECK(std::sqrt(err / ref) < (four_bit ? 0.5 : 0.1));
      CHECK(out.quant.size() >= 3);
      CHECK(out.quant.back().stage == "p");
      for (const QuantStageReport& r : out.quant) CHECK(r.nonfinite_scales == 0);
      ++compared;
    }
  CHECK(compared >= 30);
}

TEST_CASE("sage2-4b's Q smoothing adds dS to the dequantized scores: channel-biased Q and K",
          "[quant]") {
  // SageAttention2's Algorithm 1: S = dequant(Q_int K_int^T) + dS, then the softmax scale. Q and
  // K with a per-channel offset (SageAttention's channel bias, std 5 against tokens of std 1) make
  // dS large; added to the integer dot instead, dS is multiplied by s_q s_k too and the output
  // is about as far from the golden as it is large (relative L1 0.97 measured that way).
  using nx::mma::Arch;
  const Shape s{1, 2, 256, 256, 64};
  const attndev::inputs::Distribution channel{attndev::inputs::Distribution::Kind::channel, 1.0,
                                              5.0};
  const Inputs in = attndev::inputs::make_inputs(s, channel, 7, nx::Format::fp16);
  const Output gold = golden(in, Options{});
  for (Arch arch : {Arch::none, Arch::sm89}) {
    const Output out = run(Algorithm::sage2_4b, with_mma("kernel-fp16", arch), in, Options{});
    double err = 0, ref = 0;
    for (std::size_t i = 0; i < out.o.data.size(); ++i) {
      err += std::abs(out.o.data[i] - gold.o.data[i]);
      ref += std::abs(gold.o.data[i]);
    }
    INFO("sage2-4b on " << nx::mma::arch_name(arch) << ": relative L1 " << err / ref);
    CHECK(err / ref < 0.2);  // 4-bit QK: about 0.06-0.1 with dS where it belongs
  }
}

TEST_CASE("the sm90 fp8 accumulator truncates: fp8 P V on sm90 differs from sm100",
          "[quant][mma]") {
  using nx::mma::Arch;
  const Shape s{1, 1, 64, 256, 64};
  const Inputs in = random_inputs(s, 11, nx::Format::fp16);
  for (Algorithm a : {Algorithm::fa3_fp8, Algorithm::sage2_8b}) {
    const Output hopper = run(a, with_mma("kernel-fp16", Arch::sm90), in, Options{});
    const Output blackwell = run(a, with_mma("kernel-fp16", Arch::sm100), in, Options{});
    INFO(algorithm_name(a));
    CHECK(bit_differences(hopper, blackwell) > 0);
  }
}
