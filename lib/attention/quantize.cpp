#include "attention/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "numerics/round.hpp"

namespace attndev::attention::quant {

namespace {

using numerics::Format;
namespace nq = numerics::quant;

// fp32 operations on fp32 values: one IEEE float operation each (correctly rounded; the build
// never contracts or reassociates).
inline float f32(double x) {
  return static_cast<float>(x);
}

// The torchao / OCP constants: e4m3's smallest normal (torch.finfo(float8_e4m3fn).tiny) and the
// product of the two largest values that two-level NVFP4 divides the tensor amax by.
constexpr double kE4m3Tiny = 0x1p-6;
constexpr float kNvfp4TensorDivisor = 448.0f * 6.0f;
constexpr float kSageEps = 0.0000001f;

}  // namespace

const char* granularity_name(Granularity g) {
  switch (g) {
    case Granularity::per_tensor:
      return "per-tensor";
    case Granularity::per_head:
      return "per-head";
    case Granularity::row_blocks:
      return "row-blocks";
    case Granularity::per_token:
      return "per-token";
    case Granularity::per_channel:
      return "per-channel";
    case Granularity::row_groups:
      return "row-groups";
    case Granularity::col_groups:
      return "col-groups";
    case Granularity::sage2_q_thread:
      return "sage2-q-thread";
    case Granularity::sage2_k_thread:
      return "sage2-k-thread";
  }
  return "?";
}

const char* scale_rule_name(ScaleRule r) {
  switch (r) {
    case ScaleRule::amax:
      return "amax";
    case ScaleRule::amax_recip:
      return "amax-recip";
    case ScaleRule::amax_eps:
      return "amax-eps";
    case ScaleRule::amax_div:
      return "amax-div";
    case ScaleRule::ocp_floor:
      return "ocp-floor";
    case ScaleRule::nv_rceil:
      return "nv-rceil";
    case ScaleRule::nvfp4:
      return "nvfp4";
    case ScaleRule::ue4m3_recip:
      return "ue4m3-recip";
  }
  return "?";
}

double Spec::max_value() const {
  return qmax > 0.0 ? qmax : numerics::traits(element).max_finite;
}

double Stats::rel_rmse() const {
  return ref_sq > 0.0 ? std::sqrt(err_sq / ref_sq) : 0.0;
}

void Stats::add(const Stats& o) {
  elements += o.elements;
  saturated += o.saturated;
  groups += o.groups;
  zero_scales += o.zero_scales;
  nonfinite_scales += o.nonfinite_scales;
  err_sq += o.err_sq;
  ref_sq += o.ref_sq;
  max_abs_err = std::max(max_abs_err, o.max_abs_err);
}

std::size_t Quantized::group(int b, int h, int r, int c) const {
  const std::size_t bh = static_cast<std::size_t>(b) * values.heads + h;
  const std::size_t head = bh * groups_per_head;
  const int n = values.rows, d = values.cols;
  switch (spec.granularity) {
    case Granularity::per_tensor:
      return 0;
    case Granularity::per_head:
      return bh;
    case Granularity::row_blocks:
      return head + static_cast<std::size_t>(r / spec.rows);
    case Granularity::per_token:
      return head + static_cast<std::size_t>(r);
    case Granularity::per_channel:
      return head + static_cast<std::size_t>(c);
    case Granularity::row_groups:
      return head + static_cast<std::size_t>(r) * (d / spec.cols) + c / spec.cols;
    case Granularity::col_groups:
      return head + static_cast<std::size_t>(r / spec.rows) * d + c;
    case Granularity::sage2_q_thread:
      return head + static_cast<std::size_t>(r / spec.rows) * 8 + r % 8;
    case Granularity::sage2_k_thread:
      return head + static_cast<std::size_t>(r / spec.rows) * 4 + (r % 8) / 2;
  }
  (void)n;
  return 0;
}

double Quantized::scale(int b, int h, int r, int c) const {
  return scales[group(b, h, r, c)] * tensor_scale;
}

double Quantized::dequantized(int b, int h, int r, int c) const {
  // element x block scale x tensor scale: at most 11 x 24 x 24 significant bits for the rules
  // here, exact in double except nvfp4's (2 x 4 x 24 bits: exact too).
  return values.at(b, h, r, c) * scales[group(b, h, r, c)] * tensor_scale;
}

Tensor Quantized::dequantized() const {
  Tensor t = values;
  for (int b = 0; b < t.batch; ++b)
    for (int h = 0; h < t.heads; ++h)
      for (int r = 0; r < t.rows; ++r)
        for (int c = 0; c < t.cols; ++c) t.at(b, h, r, c) = dequantized(b, h, r, c);
  return t;
}

namespace {

std::size_t groups_per_head(const Spec& s, int n, int d) {
  const std::size_t blocks = s.rows > 0 ? static_cast<std::size_t>((n + s.rows - 1) / s.rows) : 0;
  switch (s.granularity) {
    case Granularity::per_tensor:
    case Granularity::per_head:
      return 1;
    case Granularity::row_blocks:
      return blocks;
    case Granularity::per_token:
      return static_cast<std::size_t>(n);
    case Granularity::per_channel:
      return static_cast<std::size_t>(d);
    case Granularity::row_groups:
      return static_cast<std::size_t>(n) * static_cast<std::size_t>(d / s.cols);
    case Granularity::col_groups:
      return blocks * static_cast<std::size_t>(d);
    case Granularity::sage2_q_thread:
      return blocks * 8;
    case Granularity::sage2_k_thread:
      return blocks * 4;
  }
  return 1;
}

std::size_t group_count(const Spec& s, const Tensor& x) {
  if (s.granularity == Granularity::per_tensor) return 1;
  return static_cast<std::size_t>(x.batch) * x.heads * groups_per_head(s, x.rows, x.cols);
}

// The scale of a group of amax `amax` under `rule` (nvfp4: the e4m3 s8, given the tensor scale).
double scale_of(const Spec& s, double amax, double tensor_scale) {
  const double qmax = s.max_value();
  switch (s.rule) {
    case ScaleRule::amax: {
      if (!(amax > 0.0)) return amax == 0.0 ? 1.0 : NAN;
      const float v = f32(amax) / f32(qmax);
      return v > 0.0f ? v : 1.0;  // below 448 * 2^-149: numerically zero (fp8_quant's rule)
    }
    case ScaleRule::amax_recip:
      return f32(std::max(amax, static_cast<double>(kSageEps))) / f32(qmax);
    case ScaleRule::amax_eps:
      return f32(amax) / f32(qmax) + kSageEps;
    case ScaleRule::amax_div:
      return f32(amax) / f32(qmax);
    case ScaleRule::ocp_floor: {
      const int e = nq::ocp_exponent(amax, nq::emax_elem(s.element));
      return nq::exponent_overflows(e) || amax != amax ? NAN : std::ldexp(1.0, e);
    }
    case ScaleRule::nv_rceil: {
      const int e = nq::rceil_exponent(f32(amax) / f32(qmax));
      return nq::exponent_overflows(e) || amax != amax ? NAN : std::ldexp(1.0, e);
    }
    case ScaleRule::nvfp4: {
      const float block = f32(amax) / 6.0f;
      float scaled = block / f32(tensor_scale);  // 0 / 0 = NaN for an all-zero tensor
      scaled =
          scaled != scaled ? scaled : std::clamp(scaled, static_cast<float>(kE4m3Tiny), 448.0f);
      return numerics::round_to(Format::fp8_e4m3, scaled, numerics::Overflow::saturate);
    }
    case ScaleRule::ue4m3_recip:
      return numerics::round_to(Format::fp8_e4m3, f32(amax) / 6.0f, numerics::Overflow::saturate);
  }
  return NAN;
}

// x / scale as the rule computes it, before the element rounding.
double scaled_value(const Spec& s, double x, double scale, double amax, double tensor_scale) {
  switch (s.rule) {
    case ScaleRule::amax:
    case ScaleRule::amax_eps:
    case ScaleRule::amax_div:
      return scale == 0.0 ? 0.0 : f32(x) / f32(scale);
    case ScaleRule::amax_recip: {
      const float recip = f32(s.max_value()) / f32(std::max(amax, static_cast<double>(kSageEps)));
      return f32(x) * recip;
    }
    case ScaleRule::ocp_floor:
    case ScaleRule::nv_rceil:
      return x / scale;  // a power of two: exact
    case ScaleRule::nvfp4: {
      const float total = f32(tensor_scale) * f32(scale);
      const float v = f32(x) / total;
      return v != v ? v : std::clamp(v, -6.0f, 6.0f);
    }
    case ScaleRule::ue4m3_recip:
      return scale == 0.0 ? 0.0 : f32(x) * (1.0f / f32(scale));
  }
  return NAN;
}

}  // namespace

std::string tiling_error(const Spec& s, int rows, int cols) {
  const bool needs_rows =
      s.granularity == Granularity::row_blocks || s.granularity == Granularity::col_groups ||
      s.granularity == Granularity::sage2_q_thread || s.granularity == Granularity::sage2_k_thread;
  if (needs_rows && s.rows < 1)
    return std::string(granularity_name(s.granularity)) + " needs a block of >= 1 rows";
  if (s.granularity == Granularity::sage2_q_thread && s.rows % 8 != 0)
    return "sage2-q-thread slices must hold a multiple of 8 tokens (got " + std::to_string(s.rows) +
           ")";
  if (s.granularity == Granularity::sage2_k_thread && s.rows % 8 != 0)
    return "sage2-k-thread blocks must hold a multiple of 8 tokens (got " + std::to_string(s.rows) +
           ")";
  if (s.granularity == Granularity::row_groups && (s.cols < 1 || cols % s.cols != 0))
    return "blocks of " + std::to_string(s.cols) +
           " along the head dimension cannot tile d = " + std::to_string(cols) + " (" +
           numerics::format_name(s.element) + " blocks need d a multiple of " +
           std::to_string(s.cols) + ")";
  (void)rows;
  return {};
}

Quantized quantize(const Tensor& x, const Spec& spec) {
  if (const std::string e = tiling_error(spec, x.rows, x.cols); !e.empty())
    throw std::invalid_argument(e);
  Quantized q;
  q.spec = spec;
  q.values = x;
  q.groups_per_head = groups_per_head(spec, x.rows, x.cols);
  const std::size_t groups = group_count(spec, x);
  std::vector<double> amax(groups, 0.0);
  double tensor_amax = 0.0;
  for (int b = 0; b < x.batch; ++b)
    for (int h = 0; h < x.heads; ++h)
      for (int r = 0; r < x.rows; ++r)
        for (int c = 0; c < x.cols; ++c) {
          const double a = std::fabs(x.at(b, h, r, c));
          double& m = amax[q.group(b, h, r, c)];
          // A NaN element makes its group's amax NaN (fmaxf would skip it: counted below).
          m = a != a ? a : (m != m ? m : std::max(m, a));
          tensor_amax =
              a != a ? a : (tensor_amax != tensor_amax ? tensor_amax : std::max(tensor_amax, a));
        }
  if (spec.rule == ScaleRule::nvfp4) q.tensor_scale = f32(tensor_amax) / kNvfp4TensorDivisor;
  q.scales.resize(groups);
  for (std::size_t g = 0; g < groups; ++g) {
    q.scales[g] = scale_of(spec, amax[g], q.tensor_scale);
    q.stats.zero_scales += q.scales[g] == 0.0;
    q.stats.nonfinite_scales += !std::isfinite(q.scales[g]);
  }
  q.stats.groups = groups;
  for (int b = 0; b < x.batch; ++b)
    for (int h = 0; h < x.heads; ++h)
      for (int r = 0; r < x.rows; ++r)
        for (int c = 0; c < x.cols; ++c) {
          const std::size_t g = q.group(b, h, r, c);
          const double v = x.at(b, h, r, c);
          const double y = scaled_value(spec, v, q.scales[g], amax[g], q.tensor_scale);
          q.stats.saturated += nq::saturates(spec.element, y);
          q.values.at(b, h, r, c) = nq::round_element(spec.element, y, spec.rounding);
          const double err = q.dequantized(b, h, r, c) - v;
          q.stats.err_sq += err * err;
          q.stats.ref_sq += v * v;
          q.stats.max_abs_err = std::max(q.stats.max_abs_err, std::fabs(err));
        }
  q.stats.elements = x.data.size();
  return q;
}

}  // namespace attndev::attention::quant
