#include "experiment/plan.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

#include "experiment/stable_hash.hpp"

namespace attndev::experiment {

using nlohmann::json;

namespace {

// One dimension of the product: a single axis, or a zip group whose axes advance together.
struct Dimension {
  std::vector<const AxisValues*> axes;
  std::size_t size = 0;
};

std::vector<Dimension> dimensions(const Config& config) {
  std::vector<Dimension> dims;
  std::set<std::string> zipped;
  for (const auto& group : config.zip) zipped.insert(group.begin(), group.end());
  for (const AxisValues& a : config.axes) {
    if (!zipped.count(a.name)) {
      dims.push_back({{&a}, a.values.size()});
      continue;
    }
    // A zip group sits where its first axis (in canonical order) sits.
    for (const auto& group : config.zip) {
      if (std::find(group.begin(), group.end(), a.name) == group.end()) continue;
      const bool first = std::none_of(dims.begin(), dims.end(), [&](const Dimension& d) {
        return std::any_of(d.axes.begin(), d.axes.end(), [&](const AxisValues* x) {
          return std::find(group.begin(), group.end(), x->name) != group.end();
        });
      });
      if (first) {
        Dimension d;
        for (const std::string& name : group) d.axes.push_back(&config.axis(name));
        d.size = a.values.size();
        dims.push_back(std::move(d));
      }
    }
  }
  return dims;
}

long long operand(const json& axes, const std::string& axis, long long literal) {
  return axis.empty() ? literal : axes.at(axis).get<long long>();
}

bool holds(const Constraint& c, const json& axes) {
  const long long a = operand(axes, c.lhs, c.lhs_literal);
  const long long b = operand(axes, c.rhs, c.rhs_literal);
  switch (c.op) {
    case CompareOp::lt:
      return a < b;
    case CompareOp::le:
      return a <= b;
    case CompareOp::gt:
      return a > b;
    case CompareOp::ge:
      return a >= b;
    case CompareOp::eq:
      return a == b;
    case CompareOp::ne:
      return a != b;
  }
  return false;
}

Point make_point(const json& axes, std::uint64_t seed, std::size_t trial) {
  Point p;
  p.axes = axes;
  p.seed = seed;
  p.trial = trial;
  p.shape.batch = axes.at("batch").get<int>();
  p.shape.heads = axes.at("heads").get<int>();
  p.shape.seq_q = axes.at("seq_len").get<int>();
  p.shape.seq_kv = axes.at("seq_len_kv").get<int>();
  p.shape.head_dim = axes.at("head_dim").get<int>();
  std::string error;
  if (!parse_distribution(axes.at("distribution").get<std::string>(), p.distribution, error))
    throw std::logic_error("canonical distribution does not parse: " + error);
  p.options.causal = axes.at("causal").get<bool>();
  p.options.scale_placement = axes.at("scale_placement").get<std::string>() == "query"
                                  ? attention::ScalePlacement::query
                                  : attention::ScalePlacement::scores;
  p.options.block_r = axes.at("block_r").get<int>();
  p.options.block_c = axes.at("block_c").get<int>();
  p.id = stable_hash_hex(json{{"axes", axes}, {"seed", seed}}.dump());
  json input_axes = axes;
  input_axes.erase("block_r");
  input_axes.erase("block_c");
  p.input_key = stable_hash_hex(json{{"axes", input_axes}, {"seed", seed}}.dump());
  return p;
}

}  // namespace

std::string Point::describe() const {
  std::string out;
  for (const auto& [key, value] : axes.items()) {
    if (!out.empty()) out += ' ';
    out += key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return out + " seed=" + std::to_string(seed);
}

double plan_size_bound(const Config& config) {
  double n = static_cast<double>(config.seeds.size());
  for (const Dimension& d : dimensions(config)) n *= static_cast<double>(d.size);
  return n;
}

Plan make_plan(const Config& config) {
  const double bound = plan_size_bound(config);
  if (bound > kMaxPlanPoints) {
    char count[32];
    std::snprintf(count, sizeof count, "%.3g", bound);
    throw ConfigError("axes", std::string("the axes and trials multiply to ") + count +
                                  " points, more than " +
                                  std::to_string(static_cast<long long>(kMaxPlanPoints)) +
                                  "; use zip groups or split the experiment into several configs");
  }
  Plan plan;
  for (const AxisValues& a : config.axes)
    if (a.values.size() > 1) plan.varying_axes.push_back(a.name);

  const std::vector<Dimension> dims = dimensions(config);
  std::vector<json> combos;
  std::vector<std::size_t> digit(dims.size(), 0);
  for (bool done = false; !done;) {
    json axes = json::object();
    for (std::size_t d = 0; d < dims.size(); ++d)
      for (const AxisValues* a : dims[d].axes) axes[a->name] = a->values[digit[d]];
    if (axes["seq_len_kv"].is_string()) axes["seq_len_kv"] = axes["seq_len"];
    auto violated = std::find_if(config.constraints.begin(), config.constraints.end(),
                                 [&](const Constraint& c) { return !holds(c, axes); });
    if (violated != config.constraints.end()) {
      plan.skipped.push_back({axes, violated->reason});
    } else if (std::find(combos.begin(), combos.end(), axes) != combos.end()) {
      // e.g. seq_len_kv: ["seq_len", 512] with seq_len 512 names one point twice.
      plan.skipped.push_back({axes, "same axis values as an earlier point"});
    } else {
      combos.push_back(std::move(axes));
    }
    // Odometer, last dimension fastest.
    std::size_t d = dims.size();
    for (;;) {
      if (d == 0) {
        done = true;
        break;
      }
      --d;
      if (++digit[d] < dims[d].size) break;
      digit[d] = 0;
    }
  }
  if (combos.empty()) {
    std::string reasons;
    std::map<std::string, int> counts;
    for (const SkippedPoint& s : plan.skipped) ++counts[s.reason];
    for (const auto& [reason, n] : counts)
      reasons += (reasons.empty() ? "" : "; ") + reason + " (" + std::to_string(n) + ")";
    throw ConfigError("constraints",
                      "the constraints exclude every point, so nothing would run: " + reasons +
                          ". Check that they do not contradict each other or the axes");
  }
  // Trials outermost: a run stopped early has covered every configuration at the first seed.
  for (std::size_t t = 0; t < config.seeds.size(); ++t)
    for (const json& axes : combos) {
      Point p = make_point(axes, config.seeds[t], t);
      p.index = plan.points.size();
      plan.points.push_back(std::move(p));
    }
  return plan;
}

std::size_t shard_of(const Point& point, std::size_t count) {
  std::uint64_t v = 0;
  parse_hex16(point.id, v);
  return static_cast<std::size_t>(v % count);
}

double point_flops(const Point& point) {
  return attention::forward_flops(point.shape, point.options.causal);
}

}  // namespace attndev::experiment
