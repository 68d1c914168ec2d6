// The framework rounding model against a hand-written per-op reference.
//
// The reference below is written from scripts/external/torch_attention.py's op sequences (fa1,
// fa2, explicit), not from lib/attention: plain float arithmetic (each op one IEEE float op, as
// PyTorch's fp32 opmath computes inside a bf16/fp16 op) and an explicit rounding of every op's
// output to the tensor format (the op's output tensor). Rounding to bf16 is written here with bit
// operations and fp16 with the compiler's _Float16, so neither goes through lib/numerics. The one
// shared piece is exp: numerics' exp_f32 (the emulator's own fp32 exp; PyTorch uses Sleef's, which
// may differ from it in the last fp32 bit) — the test pins the op sequence and the roundings, not
// the exp polynomial. Sums run in increasing index order with fused multiply-adds (policy fma).
//
// The emulator must match the reference bit for bit on every element of O.
#include <cmath>
#if !defined(__FLT16_MAX__) && defined(__F16C__)
#include <immintrin.h>
#endif
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "numerics/math.hpp"

using namespace attndev::attention;
using namespace attndev::attention::testing;
namespace nx = attndev::numerics;

namespace {

float to_bf16(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;  // inf, NaN
  const std::uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;  // round to nearest, ties to even
  u &= 0xffff0000u;
  float r;
  std::memcpy(&r, &u, sizeof r);
  return r;
}

// The compiler's fp16 conversion where it has the type (GCC; clang 15 and later), else the CPU's
// F16C instruction (clang 14, the sanitizer build's compiler, has no _Float16 on x86): both are
// round-to-nearest-even, and neither is lib/numerics.
float to_fp16(float x) {
#if defined(__FLT16_MAX__)
  return static_cast<float>(static_cast<_Float16>(x));
#elif defined(__F16C__)
  return _cvtsh_ss(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT));
#else
#error "no independent fp16 conversion: build with a compiler that has _Float16, or with F16C"
#endif
}

// One op's output stored in the tensor format: the float result (fp32 opmath) rounded.
struct Tensors {
  bool bf16;
  float operator()(float x) const { return bf16 ? to_bf16(x) : to_fp16(x); }
};

float exp32(float x) {
  return nx::exp_f32(x);
}

struct Head {
  int n, d;
  std::vector<float> q, k, v;  // (n, d), values of the tensor format
};

Head head_of(const Inputs& in) {
  Head h{in.q.rows, in.q.cols, {}, {}, {}};
  for (double x : in.q.data) h.q.push_back(static_cast<float>(x));
  for (double x : in.k.data) h.k.push_back(static_cast<float>(x));
  for (double x : in.v.data) h.v.push_back(static_cast<float>(x));
  return h;
}

// A matmul's element: fp32 accumulation (fused), output stored.
float dot(const Tensors& R, const float* a, const float* b, int d) {
  float acc = 0.f;
  for (int t = 0; t < d; ++t) acc = std::fma(a[t], b[t], acc);
  return R(acc);
}

// S = (Q_i K_j^T) stored, then S * scale (an fp32 multiply) stored.
float score(const Tensors& R, const Head& h, int i, int j, float scale) {
  return R(R(dot(R, &h.q[i * h.d], &h.k[j * h.d], h.d)) * scale);
}

// torch_attention.py fa1 for one row (rows never interact).
std::vector<float> fa1_row(const Tensors& R, const Head& h, int i, int bc, float scale) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> o(h.d, 0.f);
  float l = 0.f, m = -inf;
  for (int c0 = 0; c0 < h.n; c0 += bc) {
    const int nb = std::min(bc, h.n - c0);
    std::vector<float> p(nb);
    float mt = -inf;
    for (int j = 0; j < nb; ++j) mt = std::max(mt, p[j] = score(R, h, i, c0 + j, scale));
    for (int j = 0; j < nb; ++j) p[j] = R(exp32(R(p[j] - mt)));  // exp(s - mt)
    float lt = 0.f;
    for (int j = 0; j < nb; ++j) lt += p[j];
    lt = R(lt);  // p.sum(-1)
    const float m_new = std::max(m, mt);
    const float a = m == -inf ? 0.f : R(exp32(R(m - m_new)));  // exp(m_i - m_new)
    const float b = R(exp32(R(mt - m_new)));                   // exp(mt - m_new)
    const float l_new = R(R(a * l) + R(b * lt));               // a * l_i + b * lt
    const float c = R(l * a);                                  // l_i * a
    for (int t = 0; t < h.d; ++t) {
      float pv = 0.f;
      for (int j = 0; j < nb; ++j) pv = std::fma(p[j], h.v[(c0 + j) * h.d + t], pv);
      pv = R(pv);                                    // p @ v_j
      o[t] = R(R(R(c * o[t]) + R(b * pv)) / l_new);  // (l_i a O_i + b PV) / l_new
    }
    l = l_new;
    m = m_new;
  }
  return o;
}

// torch_attention.py fa2 for one row.
std::vector<float> fa2_row(const Tensors& R, const Head& h, int i, int bc, float scale) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> o(h.d, 0.f);
  float l = 0.f, m = -inf;
  for (int c0 = 0; c0 < h.n; c0 += bc) {
    const int nb = std::min(bc, h.n - c0);
    std::vector<float> p(nb);
    float m_new = m;
    for (int j = 0; j < nb; ++j) m_new = std::max(m_new, p[j] = score(R, h, i, c0 + j, scale));
    for (int j = 0; j < nb; ++j) p[j] = R(exp32(R(p[j] - m_new)));  // exp(s - m_new)
    const float a = m == -inf ? 0.f : R(exp32(R(m - m_new)));       // exp(m - m_new)
    float sum = 0.f;
    for (int j = 0; j < nb; ++j) sum += p[j];
    l = R(R(a * l) + R(sum));  // a * l + p.sum(-1)
    for (int t = 0; t < h.d; ++t) {
      float pv = 0.f;
      for (int j = 0; j < nb; ++j) pv = std::fma(p[j], h.v[(c0 + j) * h.d + t], pv);
      o[t] = R(R(a * o[t]) + R(pv));  // a * o + p @ v_j
    }
    m = m_new;
  }
  for (int t = 0; t < h.d; ++t) o[t] = R(o[t] / l);  // o / l
  return o;
}

// torch_attention.py explicit: (q @ k^T * scale).softmax(-1) @ v, softmax one op in fp32.
std::vector<float> explicit_row(const Tensors& R, const Head& h, int i, float scale) {
  std::vector<float> e(h.n);
  float m = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < h.n; ++j) m = std::max(m, e[j] = score(R, h, i, j, scale));
  float l = 0.f;
  for (int j = 0; j < h.n; ++j) l += e[j] = exp32(e[j] - m);
  for (int j = 0; j < h.n; ++j) e[j] = R(e[j] / l);  // P stored
  std::vector<float> o(h.d);
  for (int t = 0; t < h.d; ++t) {
    float acc = 0.f;
    for (int j = 0; j < h.n; ++j) acc = std::fma(e[j], h.v[j * h.d + t], acc);
    o[t] = R(acc);
  }
  return o;
}

}  // namespace

TEST_CASE("framework model matches a hand-written per-op reference of the PyTorch loops",
          "[attention][framework]") {
  for (const bool bf16 : {true, false}) {
    const Tensors R{bf16};
    const nx::Format f = bf16 ? nx::Format::bf16 : nx::Format::fp16;
    const nx::PrecisionPolicy policy = preset(bf16 ? "framework-bf16" : "framework-fp16");
    for (const int d : {8, 16}) {  // 1/sqrt(8) is not a power of two: the scale is rounded
      const Shape shape{1, 1, 37, 37, d};
      for (const bool uniform : {false, true}) {
        const Inputs in = uniform
                              ? attndev::inputs::make_inputs(
                                    shape, attndev::inputs::Distribution::uniform(0.0, 1.0), 11, f)
                              : random_inputs(shape, 7, f);
        const Head h = head_of(in);
        const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
        for (const int bc : {5, 16, 64}) {
          Options opt;
          opt.block_r = 8;
          opt.block_c = bc;
          opt.path = Options::Path::generic;
          INFO((bf16 ? "bf16" : "fp16")
               << " d=" << d << (uniform ? " U[0,1)" : " N(0,1)") << " Bc=" << bc);
          const Output o1 = run(Algorithm::flash1, policy, in, opt);
          const Output o2 = run(Algorithm::flash2, policy, in, opt);
          const Output ob = run(Algorithm::baseline, policy, in, opt);
          std::size_t diff1 = 0, diff2 = 0, diffb = 0;
          for (int i = 0; i < h.n; ++i) {
            const std::vector<float> r1 = fa1_row(R, h, i, bc, scale);
            const std::vector<float> r2 = fa2_row(R, h, i, bc, scale);
            const std::vector<float> rb = explicit_row(R, h, i, scale);
            for (int t = 0; t < d; ++t) {
              diff1 += !same_bits(o1.o.at(0, 0, i, t), static_cast<double>(r1[t]));
              diff2 += !same_bits(o2.o.at(0, 0, i, t), static_cast<double>(r2[t]));
              diffb += !same_bits(ob.o.at(0, 0, i, t), static_cast<double>(rb[t]));
            }
          }
          CHECK(diff1 == 0);
          CHECK(diff2 == 0);
          CHECK(diffb == 0);
        }
      }
    }
  }
}

// The reference is sensitive to the model: the kernel model's flash2 (fp32 state, exp2, one
// rounding per op) does not reproduce the framework loop, so the check above can fail.
TEST_CASE("the kernel model differs from the framework reference", "[attention][framework]") {
  const Shape shape{1, 1, 64, 64, 16};
  const Inputs in = random_inputs(shape, 3, nx::Format::bf16);
  const Head h = head_of(in);
  Options opt;
  opt.block_r = 16;
  opt.block_c = 16;
  const Output k = run(Algorithm::flash2, preset("kernel-bf16"), in, opt);
  std::size_t diff = 0;
  for (int i = 0; i < h.n; ++i) {
    const std::vector<float> r = fa2_row(Tensors{true}, h, i, 16, 0.25f);
    for (int t = 0; t < h.d; ++t) diff += !same_bits(k.o.at(0, 0, i, t), static_cast<double>(r[t]));
  }
  CHECK(diff > 0);
}

TEST_CASE("framework presets: every stage stored in the tensor format, opmath fp32",
          "[attention][framework]") {
  for (const char* name : {"framework-bf16", "framework-fp16", "framework-fp32"}) {
    const nx::PrecisionPolicy p = preset(name);
    CHECK(p.model == nx::Model::framework);
    for (nx::Stage s : nx::kAllStages) CHECK(p.compute(s) == nx::Format::fp32);
  }
  CHECK(preset("framework-fp64").compute(nx::Stage::stats) == nx::Format::fp64);
  // Under the kernel model a stage computes in its own format.
  CHECK(preset("working-bf16").compute(nx::Stage::stats) == nx::Format::bf16);
  CHECK(preset("kernel-bf16").compute(nx::Stage::prob) == nx::Format::bf16);
}

TEST_CASE("fp8 algorithms refuse the framework model", "[attention][framework]") {
  const Inputs in = random_inputs(Shape{1, 1, 8, 8, 8}, 1, nx::Format::bf16);
  nx::PrecisionPolicy p = preset("fp8-e4m3");
  p.model = nx::Model::framework;
  CHECK_THROWS_WITH(run(Algorithm::flash3_fp8, p, in, Options{}),
                    Catch::Contains("framework rounding model does not apply"));
}
