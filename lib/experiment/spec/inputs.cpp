#include "experiment/spec/inputs.hpp"

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "config/suggest.hpp"

namespace attndev::experiment {

namespace {

using config::did_you_mean;
using config::join_names;

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
    {"channel", Distribution::Kind::channel, {"std", "bias"}, "channel(std,bias)"},
};

constexpr std::string_view kKindNames[] = {"normal", "uniform", "outlier", "channel"};

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
    case Distribution::Kind::channel:
      if (!std::isfinite(d.a) || !(d.a > 0)) return "std (of the tokens) must be finite and > 0";
      if (!std::isfinite(d.b) || d.b < 0) return "bias (the channels' std) must be finite and >= 0";
      break;
  }
  return {};
}

}  // namespace

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
  if (d.kind == Distribution::Kind::channel) d.a = 1.0, d.b = 5.0;  // channel(std=1,bias=5)
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

}  // namespace attndev::experiment
