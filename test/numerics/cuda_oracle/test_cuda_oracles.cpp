// The CUDA toolkit's host-callable conversions as a third oracle (built only when the toolkit is
// found; compiled by the host compiler against the toolkit headers, no GPU needed):
//   __float2half_rn, __double2half, __float2bfloat16_rn, __double2bfloat16,
//   __nv_cvt_float_to_fp8 / __nv_cvt_double_to_fp8 (E4M3/E5M2 x NOSAT/SATFINITE),
// and the reverse conversions __half2float, __bfloat162float, __nv_cvt_fp8_to_halfraw.
// NOSAT maps to our default overflow (e4m3: NaN, e5m2: inf); SATFINITE to Overflow::saturate.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <random>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "numerics/encode.hpp"
#include "numerics/oracle.hpp"

namespace nt = attndev::numerics::testing;
using namespace attndev::numerics;

namespace {

template <typename T>
std::uint16_t raw16(T v) {
  std::uint16_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
__half half_from_bits(std::uint16_t b) {
  __half_raw r;
  r.x = b;
  return __half(r);
}
__nv_bfloat16 bf16_from_bits(std::uint16_t b) {
  __nv_bfloat16_raw r;
  r.x = b;
  return __nv_bfloat16(r);
}

struct Tally {
  long long compared = 0;
  int bad = 0;
  // Equal patterns, or both NaN (payload conventions differ: CUDA returns canonical NaNs).
  void check(const char* what, Format f, double x, std::uint64_t cuda, std::uint64_t ours) {
    ++compared;
    const bool ok = cuda == ours || (is_nan_encoding(f, cuda) && is_nan_encoding(f, ours));
    if (!ok && ++bad <= 8) {
      UNSCOPED_INFO(what << " x=" << nt::hex(x) << " cuda=0x" << std::hex << cuda << " ours=0x"
                         << ours);
    }
  }
};

void check_one(Tally& t, double x, bool from_float) {
  if (from_float) {
    const float xf = static_cast<float>(x);
    t.check("__float2half_rn", Format::fp16, x, raw16(__float2half_rn(xf)), encode_fp16(x));
    t.check("__float2bfloat16_rn", Format::bf16, x, raw16(__float2bfloat16_rn(xf)), encode_bf16(x));
    for (auto sat : {__NV_NOSAT, __NV_SATFINITE}) {
      const Overflow o4 = sat == __NV_SATFINITE ? Overflow::saturate : Overflow::to_nan;
      const Overflow o5 = sat == __NV_SATFINITE ? Overflow::saturate : Overflow::to_inf;
      t.check("__nv_cvt_float_to_fp8 e4m3", Format::fp8_e4m3, x,
              __nv_cvt_float_to_fp8(xf, sat, __NV_E4M3), encode_e4m3(x, o4));
      t.check("__nv_cvt_float_to_fp8 e5m2", Format::fp8_e5m2, x,
              __nv_cvt_float_to_fp8(xf, sat, __NV_E5M2), encode_e5m2(x, o5));
    }
    return;
  }
  t.check("__double2half", Format::fp16, x, raw16(__double2half(x)), encode_fp16(x));
  t.check("__double2bfloat16", Format::bf16, x, raw16(__double2bfloat16(x)), encode_bf16(x));
  for (auto sat : {__NV_NOSAT, __NV_SATFINITE}) {
    const Overflow o4 = sat == __NV_SATFINITE ? Overflow::saturate : Overflow::to_nan;
    const Overflow o5 = sat == __NV_SATFINITE ? Overflow::saturate : Overflow::to_inf;
    t.check("__nv_cvt_double_to_fp8 e4m3", Format::fp8_e4m3, x,
            __nv_cvt_double_to_fp8(x, sat, __NV_E4M3), encode_e4m3(x, o4));
    t.check("__nv_cvt_double_to_fp8 e5m2", Format::fp8_e5m2, x,
            __nv_cvt_double_to_fp8(x, sat, __NV_E5M2), encode_e5m2(x, o5));
  }
}

}  // namespace

TEST_CASE("CUDA float -> fp16/bf16/fp8 conversions, strided over all floats", "[cuda_oracle]") {
  Tally t;
  for (std::uint64_t b = 0; b < (1ull << 32); b += 509) {
    check_one(t, static_cast<double>(float_from_bits(static_cast<std::uint32_t>(b))), true);
  }
  INFO(t.compared << " conversions compared");
  CHECK(t.bad == 0);
  REQUIRE(t.compared > 40'000'000);
}

TEST_CASE("CUDA double -> fp16/bf16/fp8 conversions on random doubles and ties", "[cuda_oracle]") {
  std::mt19937_64 rng(nt::test_seed("cuda oracle doubles", 0x5eed0006));
  Tally t;
  for (int i = 0; i < 2'000'000; ++i) {
    const double x =
        i % 2 ? nt::log_uniform_double(rng, -30, 20) : nt::log_uniform_double(rng, -140, 130);
    check_one(t, x, false);
  }
  // Every fp16 / bf16 / fp8 halfway point and its double neighbours.
  for (Format f : {Format::fp16, Format::bf16, Format::fp8_e4m3, Format::fp8_e5m2}) {
    const std::uint32_t n = 1u << traits(f).storage_bits;
    for (std::uint32_t b = 0; b + 1 < n / 2; ++b) {
      const double lo = decode(f, b), hi = decode(f, b + 1);
      if (!std::isfinite(hi)) break;
      const double mid = lo + (hi - lo) / 2;
      for (double x : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e300)}) {
        check_one(t, x, false);
        check_one(t, -x, false);
      }
    }
  }
  INFO(t.compared << " conversions compared");
  CHECK(t.bad == 0);
  REQUIRE(t.compared > 12'000'000);
}

TEST_CASE("CUDA fp16/bf16/fp8 -> float conversions, every pattern", "[cuda_oracle]") {
  Tally t;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const double h = __half2float(half_from_bits(bits));
    const double bf = __bfloat162float(bf16_from_bits(bits));
    t.check("__half2float", Format::fp64, h, bits_of(h), bits_of(decode_fp16(bits)));
    t.check("__bfloat162float", Format::fp64, bf, bits_of(bf), bits_of(decode_bf16(bits)));
  }
  for (std::uint32_t b = 0; b < 256; ++b) {
    const auto bits = static_cast<__nv_fp8_storage_t>(b);
    const double v4 = __half2float(__half(__nv_cvt_fp8_to_halfraw(bits, __NV_E4M3)));
    const double v5 = __half2float(__half(__nv_cvt_fp8_to_halfraw(bits, __NV_E5M2)));
    t.check("fp8 e4m3 -> half", Format::fp64, v4, bits_of(v4), bits_of(decode_e4m3(bits)));
    t.check("fp8 e5m2 -> half", Format::fp64, v5, bits_of(v5), bits_of(decode_e5m2(bits)));
  }
  INFO(t.compared << " conversions compared");
  CHECK(t.bad == 0);
  REQUIRE(t.compared == 2 * 65536 + 2 * 256);
}
