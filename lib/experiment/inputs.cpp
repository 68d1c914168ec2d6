#include "experiment/inputs.hpp"

#include <charconv>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <vector>

#include "experiment/philox.hpp"
#include "config/suggest.hpp"
#include "numerics/round.hpp"

namespace attndev::experiment {

namespace {

using config::did_you_mean;
using config::join_names;

// Counter layout: (col, row, h, b | tensor << 24 | draw << 28). Every coordinate has its own bits,
// so no two (tensor, b, h, row, col, draw) tuples share a counter, and the layout does not depend
// on the tensor's shape: the value at a coordinate is the same in a 4x4 and a 100x100 tensor.
constexpr int kBatchBits = 24;
constexpr std::uint32_t kMaxBatch = 1u << kBatchBits;
constexpr std::uint32_t kMaxTensor = 16;

// Independent streams of one element: draw 0 feeds every distribution's main value (and the
// outlier's Bernoulli from its upper words), draw 1 the outlier's extra normal.
enum Draw : std::uint32_t { kDrawMain = 0, kDrawOutlier = 1 };

PhiloxCounter draw_block(std::uint64_t seed, TensorId tensor, int b, int h, int row, int col,
                         Draw draw) {
  const auto t = static_cast<std::uint32_t>(tensor);
  if (b < 0 || h < 0 || row < 0 || col < 0 || static_cast<std::uint32_t>(b) >= kMaxBatch ||
      t >= kMaxTensor)
    throw std::invalid_argument("inputs: coordinate out of range (b=" + std::to_string(b) +
                                ", h=" + std::to_string(h) + ", row=" + std::to_string(row) +
                                ", col=" + std::to_string(col) + "); batch must be < 2^24");
  const PhiloxCounter counter = {static_cast<std::uint32_t>(col), static_cast<std::uint32_t>(row),
                                 static_cast<std::uint32_t>(h),
                                 static_cast<std::uint32_t>(b) | (t << kBatchBits) |
                                     (static_cast<std::uint32_t>(draw) << (kBatchBits + 4))};
  const PhiloxKey key = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  return philox4x32_10(counter, key);
}

// (0, 1) exclusive at both ends, so log() below never sees 0: (w + 1/2) / 2^32.
double open_unit(std::uint32_t w) {
  return (static_cast<double>(w) + 0.5) * 0x1p-32;
}

// [0, 1) with all 53 bits of a double's significand: 27 bits of w0, 26 of w1.
double unit53(std::uint32_t w0, std::uint32_t w1) {
  const std::uint64_t bits = (std::uint64_t{w0 >> 5} << 26) | (w1 >> 6);
  return static_cast<double>(bits) * 0x1p-53;
}

// Box-Muller, cosine branch. The radius is at most sqrt(-2 ln 2^-33) ~ 6.8: the tail beyond is
// cut, which no attention input study resolves (probability ~1e-11 per element).
double standard_normal(std::uint32_t w0, std::uint32_t w1) {
  const double radius = std::sqrt(-2.0 * std::log(open_unit(w0)));
  const double angle = 2.0 * std::numbers::pi * (static_cast<double>(w1) * 0x1p-32);
  return radius * std::cos(angle);
}

std::string number_text(double x) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, x);  // shortest round-trip form
  return std::string(buf, res.ptr);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

struct KindSpec {
  std::string_view name;
  Distribution::Kind kind;
  std::string_view params[2];
  std::string_view usage;
};

constexpr KindSpec kKinds[] = {
    {"normal", Distribution::Kind::normal, {"mean", "std"}, "normal(mean,std)"},
    {"uniform", Distribution::Kind::uniform, {"lo", "hi"}, "uniform(lo,hi)"},
    {"outlier", Distribution::Kind::outlier, {"std", "p"}, "outlier(std,p)"},
};

constexpr std::string_view kKindNames[] = {"normal", "uniform", "outlier"};

std::string valid_forms() {
  std::string s;
  for (const KindSpec& k : kKinds) s += (s.empty() ? "" : ", ") + std::string(k.usage);
  return s;
}

bool parse_number(std::string_view text, double& out) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  const auto res = std::from_chars(text.data(), text.data() + text.size(), out);
  return res.ec == std::errc() && res.ptr == text.data() + text.size();
}

// Validates ranges; empty string when fine.
std::string check_values(const Distribution& d) {
  switch (d.kind) {
    case Distribution::Kind::normal:
      if (!std::isfinite(d.a)) return "mean must be finite";
      if (!std::isfinite(d.b) || !(d.b > 0)) return "std must be finite and > 0";
      break;
    case Distribution::Kind::uniform:
      if (!std::isfinite(d.a) || !std::isfinite(d.b)) return "lo and hi must be finite";
      if (!(d.a < d.b)) return "lo must be < hi";
      if (!std::isfinite(d.b - d.a)) return "hi - lo overflows a double";
      break;
    case Distribution::Kind::outlier:
      if (!std::isfinite(d.outlier_std) || d.outlier_std < 0)
        return "std (of the outliers) must be finite and >= 0";
      if (!(d.outlier_prob >= 0 && d.outlier_prob <= 1)) return "p must be in [0, 1]";
      break;
  }
  return {};
}

}  // namespace

std::string Distribution::describe() const {
  switch (kind) {
    case Kind::normal:
      return "normal(" + number_text(a) + "," + number_text(b) + ")";
    case Kind::uniform:
      return "uniform(" + number_text(a) + "," + number_text(b) + ")";
    case Kind::outlier:
      return "outlier(std=" + number_text(outlier_std) + ",p=" + number_text(outlier_prob) + ")";
  }
  return "?";
}

bool parse_distribution(std::string_view text, Distribution& out, std::string& error) {
  const std::string quoted = "distribution \"" + std::string(text) + "\": ";
  const std::string_view whole = trim(text);
  if (whole.empty()) {
    error = "empty distribution; expected one of " + valid_forms();
    return false;
  }
  const std::size_t open = whole.find('(');
  const std::string_view name = trim(whole.substr(0, open));
  const KindSpec* spec = nullptr;
  for (const KindSpec& k : kKinds)
    if (k.name == name) spec = &k;
  if (!spec) {
    error = quoted + "unknown kind \"" + std::string(name) + "\"" + did_you_mean(name, kKindNames) +
            "; valid: " + valid_forms();
    return false;
  }
  Distribution d;
  d.kind = spec->kind;  // defaults: normal(0,1), uniform(0,1), outlier(std=10,p=0.001)
  if (open != std::string_view::npos) {
    if (whole.back() != ')') {
      error = quoted + "expected ')' at the end, as in " + std::string(spec->usage);
      return false;
    }
    const std::string_view inside = whole.substr(open + 1, whole.size() - open - 2);
    std::vector<std::string_view> args;
    for (std::size_t start = 0;;) {
      const std::size_t comma = inside.find(',', start);
      args.push_back(trim(inside.substr(start, comma - start)));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (args.size() == 1 && args[0].empty()) args.clear();  // "normal()" means the defaults
    double* slots[2] = {&d.a, &d.b};
    if (d.kind == Distribution::Kind::outlier)
      slots[0] = &d.outlier_std, slots[1] = &d.outlier_prob;
    const bool named = !args.empty() && args[0].find('=') != std::string_view::npos;
    if (!named && !args.empty() && args.size() != 2) {
      error = quoted + std::string(spec->name) + " takes 2 parameters, " +
              std::string(spec->usage) + ", got " + std::to_string(args.size());
      return false;
    }
    bool seen[2] = {false, false};
    for (std::size_t i = 0; i < args.size(); ++i) {
      std::string_view value = args[i];
      std::size_t slot = i;
      const std::size_t eq = value.find('=');
      if (named != (eq != std::string_view::npos)) {
        error = quoted + "mix of named and positional parameters; write " +
                std::string(spec->usage) + " or name every parameter";
        return false;
      }
      if (named) {
        const std::string_view key = trim(value.substr(0, eq));
        value = value.substr(eq + 1);
        if (key == spec->params[0]) {
          slot = 0;
        } else if (key == spec->params[1]) {
          slot = 1;
        } else {
          error = quoted + "unknown parameter \"" + std::string(key) + "\"" +
                  did_you_mean(key, spec->params) + "; " + std::string(spec->name) + " takes " +
                  join_names(spec->params);
          return false;
        }
        if (seen[slot]) {
          error = quoted + "parameter \"" + std::string(key) + "\" given twice";
          return false;
        }
      }
      seen[slot] = true;
      if (!parse_number(value, *slots[slot])) {
        error = quoted + "parameter " + std::string(spec->params[slot]) + ": \"" +
                std::string(trim(value)) + "\" is not a number";
        return false;
      }
    }
  }
  if (const std::string bad = check_values(d); !bad.empty()) {
    error = quoted + bad;
    return false;
  }
  out = d;
  return true;
}

double sample(const Distribution& dist, std::uint64_t seed, TensorId tensor, int b, int h, int row,
              int col) {
  const PhiloxCounter w = draw_block(seed, tensor, b, h, row, col, kDrawMain);
  switch (dist.kind) {
    case Distribution::Kind::normal:
      return dist.a + dist.b * standard_normal(w[0], w[1]);
    case Distribution::Kind::uniform: {
      const double x = dist.a + (dist.b - dist.a) * unit53(w[0], w[1]);
      // lo + (hi-lo)*u can round up to hi itself when u is within an ulp of 1.
      return x < dist.b ? x : std::nextafter(dist.b, dist.a);
    }
    case Distribution::Kind::outlier: {
      const double base = standard_normal(w[0], w[1]);
      if (!(unit53(w[2], w[3]) < dist.outlier_prob)) return base;
      const PhiloxCounter o = draw_block(seed, tensor, b, h, row, col, kDrawOutlier);
      return base + dist.outlier_std * standard_normal(o[0], o[1]);
    }
  }
  return 0.0;
}

attention::Inputs make_inputs(const attention::Shape& shape, const Distribution& dist,
                              std::uint64_t seed, numerics::Format input_format) {
  if (shape.batch < 1 || shape.heads < 1 || shape.seq_q < 1 || shape.seq_kv < 1 ||
      shape.head_dim < 1)
    throw std::invalid_argument(
        "make_inputs: every dimension must be >= 1 (batch=" + std::to_string(shape.batch) +
        ", heads=" + std::to_string(shape.heads) + ", seq_q=" + std::to_string(shape.seq_q) +
        ", seq_kv=" + std::to_string(shape.seq_kv) +
        ", head_dim=" + std::to_string(shape.head_dim) + ")");
  // fp8 inputs saturate (as FA-3's casts do): an outlier beyond 448 must not become NaN/inf.
  const bool is_fp8 =
      input_format == numerics::Format::fp8_e4m3 || input_format == numerics::Format::fp8_e5m2;
  const numerics::Overflow overflow =
      is_fp8 ? numerics::Overflow::saturate : numerics::default_overflow(input_format);

  attention::Inputs in;
  in.q =
      attention::Tensor(shape.batch, shape.heads, shape.seq_q, shape.head_dim);  // (B, H, N_q, d)
  in.k =
      attention::Tensor(shape.batch, shape.heads, shape.seq_kv, shape.head_dim);  // (B, H, N_kv, d)
  in.v =
      attention::Tensor(shape.batch, shape.heads, shape.seq_kv, shape.head_dim);  // (B, H, N_kv, d)
  const auto fill = [&](attention::Tensor& t, TensorId id) {
    for (int b = 0; b < t.batch; ++b)
      for (int h = 0; h < t.heads; ++h)
        for (int r = 0; r < t.rows; ++r)
          for (int c = 0; c < t.cols; ++c)
            t.at(b, h, r, c) =
                numerics::round_to(input_format, sample(dist, seed, id, b, h, r, c), overflow);
  };
  fill(in.q, TensorId::q);
  fill(in.k, TensorId::k);
  fill(in.v, TensorId::v);
  return in;
}

}  // namespace attndev::experiment
