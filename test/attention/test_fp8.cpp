// fp8 quantization, incoherent processing and the fp8 algorithms (flash3-fp8, baseline-fp8).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "attention/fp8_quant.hpp"
#include "attention/helpers.hpp"
#include "numerics/arith.hpp"
#include "numerics/round.hpp"

using namespace attndev::attention;
using namespace attndev::attention::testing;
namespace nx = attndev::numerics;

namespace {

// FA-3 Table 3's inputs: N(0,1) + N(0, 10^2) * Bernoulli(0.001), rounded to `f`; one tensor of
// the generator's q (stream 0), k (1) or v (2) stream.
Tensor outlier_tensor(int b, int h, int n, int d, std::uint64_t seed, std::uint64_t stream,
                      nx::Format f) {
  return attndev::inputs::make_tensor(b, h, n, d, outlier(), seed,
                                      static_cast<attndev::inputs::TensorId>(stream), f);
}

// FA-3's fp8 policy with fp16 inputs (the format Q, K, V are stored in before quantization).
nx::PrecisionPolicy fp8_policy() {
  nx::PrecisionPolicy p = preset("fp8-e4m3");
  p.input = nx::Format::fp16;
  return p;
}

}  // namespace

TEST_CASE("e4m3 quantization: values on the grid, amax at 448, error within half an ulp",
          "[fp8][quant]") {
  const std::uint64_t seed = 17;
  INFO("seed=" << seed);
  const Tensor x = outlier_tensor(2, 3, 50, 16, seed, 0, nx::Format::fp16);
  for (int block : {1, 7, 16, 50}) {
    INFO("block_rows=" << block);
    const fp8::ScaledTensor q = fp8::quantize_blocks(x, block);
    REQUIRE(q.blocks_per_head == (50 + block - 1) / block);
    std::size_t off_grid = 0, worse_than_half_ulp = 0;
    std::vector<double> block_amax(q.scales.size(), 0.0);  // (B, H, blocks_per_head)
    for (int b = 0; b < 2; ++b)
      for (int h = 0; h < 3; ++h)
        for (int n = 0; n < 50; ++n)
          for (int c = 0; c < 16; ++c) {
            const double v = q.values.at(b, h, n, c);
            off_grid += !nx::representable(fp8::kFp8Format, v);
            double& amax = block_amax[(std::size_t(b) * 3 + h) * q.blocks_per_head + n / block];
            amax = std::max(amax, std::fabs(v));
            const double s = q.scale(b, h, n);
            // |x - v s| <= ulp_e4m3(v)/2 * s, plus fp32 division slack; the subnormal quantum
            // 2^-9 bounds the ulp from below.
            const double ulp =
                std::max(std::ldexp(1.0, std::ilogb(std::max(std::fabs(v), 0x1p-6)) - 3), 0x1p-9);
            worse_than_half_ulp +=
                std::fabs(x.at(b, h, n, c) - v * s) > (0.5 * ulp + 448 * 0x1p-23) * s;
          }
    CHECK(off_grid == 0);
    CHECK(worse_than_half_ulp == 0);
    // Every block's largest element maps to exactly +-448: x / s lands within an fp32 rounding of
    // 448, far closer to it than to the next e4m3 value below (416). Counted exactly, not bounded:
    // saturation at 448 would hide a scale that is too small, and a scale too large lands below.
    std::size_t at_top = 0;
    for (double amax : block_amax) at_top += amax == 448.0;
    CHECK(at_top == block_amax.size());
  }
  const fp8::ScaledTensor t = fp8::quantize_per_tensor(x);
  for (double s : t.scales) CHECK(s == t.scales[0]);
  CHECK(fp8::scale_for(0.0) == 1.0);
}

TEST_CASE("fast Walsh-Hadamard transform equals the Sylvester matrix product", "[fp8][hadamard]") {
  for (int n : {1, 2, 4, 8, 32}) {
    std::vector<double> x(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = (i * 7 % 5) - 2 + 0.25 * i;
    std::vector<double> y = x;
    fp8::fwht(y.data(), n, nx::Format::fp64);
    std::size_t wrong = 0;
    for (int r = 0; r < n; ++r) {
      double e = 0;  // H[r][c] = (-1)^popcount(r & c)
      for (int c = 0; c < n; ++c)
        e += (__builtin_popcount(r & c) % 2 ? -1.0 : 1.0) * x[static_cast<std::size_t>(c)];
      wrong += y[static_cast<std::size_t>(r)] != e;  // small dyadic values: exact
    }
    INFO("n=" << n);
    CHECK(wrong == 0);
  }
}

TEST_CASE("incoherent processing is orthogonal: QK^T preserved to round-off in fp64",
          "[fp8][hadamard]") {
  const std::uint64_t seed = 23;
  INFO("seed=" << seed);
  for (int d : {4, 16, 64, 128}) {
    const Tensor q = outlier_tensor(1, 2, 9, d, seed, 0, nx::Format::fp64);
    const Tensor k = outlier_tensor(1, 2, 11, d, seed, 1, nx::Format::fp64);
    Tensor qr = q, kr = k;
    const std::vector<double> signs = fp8::random_signs(d, /*seed=*/seed + d);
    int negatives = 0;
    for (double s : signs) negatives += s < 0;
    CHECK(negatives > 0);
    CHECK(negatives < d);
    fp8::rotate_rows(qr, signs, nx::Format::fp64, nx::Format::fp64);
    fp8::rotate_rows(kr, signs, nx::Format::fp64, nx::Format::fp64);
    double worst = 0, biggest = 0, row_norm_change = 0, amax_before = 0, amax_after = 0;
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 9; ++i) {
        double n0 = 0, n1 = 0;
        for (int t = 0; t < d; ++t) {
          n0 += q.at(0, h, i, t) * q.at(0, h, i, t);
          n1 += qr.at(0, h, i, t) * qr.at(0, h, i, t);
          amax_before = std::max(amax_before, std::fabs(q.at(0, h, i, t)));
          amax_after = std::max(amax_after, std::fabs(qr.at(0, h, i, t)));
        }
        row_norm_change = std::max(row_norm_change, std::fabs(n1 - n0) / n0);
        for (int j = 0; j < 11; ++j) {
          double a = 0, b = 0, mag = 0;
          for (int t = 0; t < d; ++t) {
            a += q.at(0, h, i, t) * k.at(0, h, j, t);
            b += qr.at(0, h, i, t) * kr.at(0, h, j, t);
            mag += std::fabs(q.at(0, h, i, t) * k.at(0, h, j, t));
          }
          worst = std::max(worst, std::fabs(a - b) / mag);
          biggest = std::max(biggest, std::fabs(a));
        }
      }
    INFO("d=" << d << " worst relative change of QK^T=" << worst
              << " norm change=" << row_norm_change);
    CHECK(biggest > 0);
    // log2(d) butterflies + the products: a few dozen ulps of the sum of |terms| at most.
    CHECK(worst <= 8 * (std::log2(d) + 2) * 0x1p-53);
    CHECK(row_norm_change <= 8 * (std::log2(d) + 2) * 0x1p-53);
  }
  Tensor odd(1, 1, 2, 12);
  CHECK_THROWS_AS(
      fp8::rotate_rows(odd, fp8::random_signs(12, 1), nx::Format::fp32, nx::Format::fp32),
      std::invalid_argument);
}

TEST_CASE("incoherent processing lowers the amax of rows that hold an outlier", "[fp8][hadamard]") {
  Tensor x(1, 1, 1, 64);
  for (int t = 0; t < 64; ++t) x.at(0, 0, 0, t) = (t % 3) - 1.0;
  x.at(0, 0, 0, 5) = 80.0;
  Tensor r = x;
  fp8::rotate_rows(r, fp8::random_signs(64, 5), nx::Format::fp32, nx::Format::fp16);
  double amax = 0;
  for (double v : r.data) amax = std::max(amax, std::fabs(v));
  INFO("amax after rotation " << amax);
  CHECK(amax < 80.0 / 4);  // 80 / sqrt(64) = 10, plus the spread of the small entries
}

TEST_CASE("fp8 algorithms: close to the golden, refuse fp8-stored inputs, deterministic",
          "[fp8][algorithm]") {
  const std::uint64_t seed = 31;
  INFO("seed=" << seed);
  const Shape s{1, 2, 96, 80, 64};
  const Inputs in = outlier_inputs(s, seed, nx::Format::fp16);
  Options opt;
  opt.block_r = 32;
  opt.block_c = 16;
  nx::PrecisionPolicy base_pol = fp8_policy();
  base_pol.score = base_pol.stats = base_pol.prob = nx::Format::fp16;
  for (Algorithm a : kFp8Algorithms) {
    const nx::PrecisionPolicy pol = a == Algorithm::baseline_fp8 ? base_pol : fp8_policy();
    for (bool causal : {false, true}) {
      opt.causal = causal;
      const Output gc = golden(in, opt);
      const double g_rms = rmse(gc.o, Tensor(1, 2, 96, 64));
      REQUIRE(g_rms > 0);
      opt.threads = 1;
      const Output r = run(a, pol, in, opt);
      opt.threads = 3;
      CHECK(bit_differences(r, run(a, pol, in, opt)) == 0);
      const double e = rmse(r.o, gc.o);
      INFO(algorithm_name(a) << " causal=" << causal << " rmse=" << e << " rms(golden)=" << g_rms);
      // e4m3 keeps 3 fraction bits (u = 2^-4): the error is a fraction of u relative to |O|,
      // and far from zero (fp8 was really applied).
      CHECK(e < 0.0625 * g_rms);
      CHECK(e > 1e-4 * g_rms);
      for (double x : r.o.data) REQUIRE(std::isfinite(x));
    }
  }
  CHECK(std::string(algorithm_name(Algorithm::flash3_fp8)) == "flash3-fp8");
  Algorithm parsed;
  REQUIRE(parse_algorithm("baseline-fp8", parsed));
  CHECK(parsed == Algorithm::baseline_fp8);
  // The fp8 algorithms take the SIMD fast path like the others (test_fast_path.cpp compares it).
  CHECK(std::string(kernel_path(Algorithm::flash3_fp8, preset("kernel-bf16"), Options{})) ==
        "fast-f32");
  CHECK_THROWS_AS(run(Algorithm::flash3_fp8, preset("fp8-e4m3"), in, opt), std::invalid_argument);
  const Inputs odd = outlier_inputs(Shape{1, 1, 8, 8, 12}, seed, nx::Format::fp16);
  CHECK_THROWS_AS(run(Algorithm::flash3_fp8, fp8_policy(), odd, opt), std::invalid_argument);
  CHECK_NOTHROW(run(Algorithm::flash3_fp8_no_hadamard, fp8_policy(), odd, opt));
}

TEST_CASE("ablation algorithms equal flash3-fp8 with the option switched off", "[fp8][algorithm]") {
  const Inputs in = outlier_inputs(Shape{1, 1, 40, 40, 16}, /*seed=*/5, nx::Format::bf16);
  Options opt;
  opt.block_r = 8;
  opt.block_c = 8;
  Options no_blocks = opt, no_rotation = opt;
  no_blocks.fp8.block_quantization = false;
  no_rotation.fp8.incoherent_processing = false;
  const nx::PrecisionPolicy pol = fp8_policy();
  const Output full = run(Algorithm::flash3_fp8, pol, in, opt);
  CHECK(bit_differences(run(Algorithm::flash3_fp8_per_tensor, pol, in, opt),
                        run(Algorithm::flash3_fp8, pol, in, no_blocks)) == 0);
  CHECK(bit_differences(run(Algorithm::flash3_fp8_no_hadamard, pol, in, opt),
                        run(Algorithm::flash3_fp8, pol, in, no_rotation)) == 0);
  CHECK(bit_differences(full, run(Algorithm::flash3_fp8, pol, in, no_rotation)) > 0);
  Options other_seed = opt;
  other_seed.fp8.hadamard_seed = 99;
  CHECK(bit_differences(full, run(Algorithm::flash3_fp8, pol, in, other_seed)) > 0);
}

// quantize_blocks/quantize_per_tensor and rotate_rows take a float path for float-valued tensors
// with fp32 arithmetic (the flash3-fp8 preset); it must equal the scalar definitions element by
// element: quantize_value(x, scale), and fwht in fp32 then round_to(store, mul_in(fp32, ...)).
TEST_CASE("fp8 preparation's float path equals the scalar definitions", "[fp8][hadamard]") {
  for (nx::Format in : {nx::Format::fp16, nx::Format::bf16, nx::Format::fp32}) {
    INFO(nx::format_name(in));
    const Inputs x = outlier_inputs(Shape{2, 1, 37, 37, 64}, /*seed=*/11, in);
    const fp8::ScaledTensor blocks = fp8::quantize_blocks(x.q, 8);
    const fp8::ScaledTensor whole = fp8::quantize_per_tensor(x.q);
    std::size_t differences = 0;
    for (int b = 0; b < x.q.batch; ++b)
      for (int n = 0; n < x.q.rows; ++n)
        for (int c = 0; c < x.q.cols; ++c) {
          const double v = x.q.at(b, 0, n, c);
          differences +=
              blocks.values.at(b, 0, n, c) != fp8::quantize_value(v, blocks.scale(b, 0, n));
          differences +=
              whole.values.at(b, 0, n, c) != fp8::quantize_value(v, whole.scale(b, 0, n));
        }
    CHECK(differences == 0);

    const std::vector<double> signs = fp8::random_signs(64, 3);
    Tensor rotated = x.k;
    fp8::rotate_rows(rotated, signs, nx::Format::fp32, in);
    const double inv_sqrt_d = nx::round_to(nx::Format::fp32, 1.0 / 8.0);
    differences = 0;
    for (int b = 0; b < x.k.batch; ++b)
      for (int n = 0; n < x.k.rows; ++n) {
        std::vector<double> row(64);
        for (int c = 0; c < 64; ++c) row[c] = x.k.at(b, 0, n, c) * signs[c];
        fp8::fwht(row.data(), 64, nx::Format::fp32);
        for (int c = 0; c < 64; ++c)
          differences += rotated.at(b, 0, n, c) !=
                         nx::round_to(in, nx::mul_in(nx::Format::fp32, row[c], inv_sqrt_d));
      }
    CHECK(differences == 0);
  }
}
