#include "experiment/spec/plan.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <variant>

#include "experiment/spec/inputs_file.hpp"
#include "experiment/spec/stable_hash.hpp"

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

// A constraint's operands resolved once to members of PointAxes (no lookup by name per point).
struct ResolvedConstraint {
  const Constraint* constraint = nullptr;
  int PointAxes::*lhs = nullptr;  // null: the literal
  int PointAxes::*rhs = nullptr;
};

int PointAxes::*integer_member(const std::string& axis) {
  if (axis == "batch") return &PointAxes::batch;
  if (axis == "heads") return &PointAxes::heads;
  if (axis == "seq_len") return &PointAxes::seq_len;
  if (axis == "seq_len_kv") return &PointAxes::seq_len_kv;
  if (axis == "head_dim") return &PointAxes::head_dim;
  if (axis == "block_r") return &PointAxes::block_r;
  if (axis == "block_c") return &PointAxes::block_c;
  throw std::logic_error("not an integer axis: " + axis);
}

long long operand(const PointAxes& axes, int PointAxes::*member, long long literal) {
  return member ? axes.*member : literal;
}

bool holds(const ResolvedConstraint& r, const PointAxes& axes) {
  const Constraint& c = *r.constraint;
  const long long a = operand(axes, r.lhs, c.lhs_literal);
  const long long b = operand(axes, r.rhs, c.rhs_literal);
  return compare(a, c.op, b);
}

// The id hashes json{{"axes", axes}, {"seed", seed}}.dump(), i.e. {"axes":<canonical>,"seed":N}:
// the FNV state after the axes part is kept, so each trial costs only its seed's digits.
std::uint64_t axes_prefix(const std::string& canonical) {
  return fnv1a64(canonical, fnv1a64("{\"axes\":"));
}

std::string with_seed(std::uint64_t prefix, std::uint64_t seed) {
  const std::string tail = ",\"seed\":" + std::to_string(seed) + "}";
  return hex16(splitmix64_finalize(fnv1a64(tail, prefix)));
}

// The shapes of an inputs file, read once per file of the axis.
class FileShapes {
 public:
  explicit FileShapes(const Config& config) : axis_(config.axis("inputs")) {}
  const attention::Shape& shape_of(const std::string& path) {
    auto it = shapes_.find(path);
    if (it != shapes_.end()) return it->second;
    std::size_t i = 0;
    while (i < axis_.values.size() && std::get<InputsFile>(axis_.values[i]).path != path) ++i;
    const std::string where =
        axis_.values.size() > 1 ? axis_.path + "[" + std::to_string(i) + "]" : axis_.path;
    try {
      return shapes_.emplace(path, inputs_file_shape(path)).first->second;
    } catch (const std::exception& e) {
      throw ConfigError(where, e.what());
    }
  }

 private:
  const AxisValues& axis_;
  std::map<std::string, attention::Shape> shapes_;
};

}  // namespace

attention::Options Point::options() const {
  attention::Options o;
  o.causal = axes.causal;
  o.scale_placement = axes.scale_placement;
  o.block_r = axes.block_r;
  o.block_c = axes.block_c;
  return o;
}

std::string Point::describe() const {
  std::string out;
  const json canonical = axes.to_json();  // items() of a temporary would dangle
  for (const auto& [key, value] : canonical.items()) {
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

namespace {

void check_plan_size(const Config& config) {
  const double bound = plan_size_bound(config);
  if (bound > kMaxPlanPoints) {
    char count[32];
    std::snprintf(count, sizeof count, "%.3g", bound);
    throw ConfigError("axes", std::string("the axes and trials multiply to ") + count +
                                  " points, more than " +
                                  std::to_string(static_cast<long long>(kMaxPlanPoints)) +
                                  "; use zip groups or split the experiment into several configs");
  }
}

// The axes of the combination `digit` (one value index per dimension), resolved, with the
// shape of an inputs file filled in.
PointAxes combination_axes(const std::vector<Dimension>& dims,
                           const std::vector<std::size_t>& digit, FileShapes& files) {
  PointAxes axes;
  for (std::size_t d = 0; d < dims.size(); ++d)
    for (const AxisValues* a : dims[d].axes) set_axis(axes, a->name, a->values[digit[d]]);
  resolve_axes(axes);
  if (axes.from_file()) {
    const attention::Shape& shape = files.shape_of(axes.inputs.path);
    axes.batch = shape.batch;
    axes.heads = shape.heads;
    axes.seq_len = shape.seq_q;
    axes.seq_len_kv = shape.seq_kv;
    axes.head_dim = shape.head_dim;
  }
  return axes;
}

// Odometer, last dimension fastest; false after the last combination.
bool next_combination(const std::vector<Dimension>& dims, std::vector<std::size_t>& digit) {
  for (std::size_t d = dims.size(); d > 0; --d) {
    if (++digit[d - 1] < dims[d - 1].size) return true;
    digit[d - 1] = 0;
  }
  return false;
}

// Trial 0's points, built in place, one per kept combination; `prefixes` keeps what the other
// trials need to derive their ids.
class TrialZero {
 public:
  TrialZero(const Config& config, Plan& plan) : config_(config), plan_(plan) {
    for (const Constraint& c : config.constraints)
      constraints_.push_back({&c, c.lhs.empty() ? nullptr : integer_member(c.lhs),
                              c.rhs.empty() ? nullptr : integer_member(c.rhs)});
    const auto combinations =
        static_cast<std::size_t>(plan_size_bound(config)) / config.seeds.size();
    plan_.points.reserve(combinations);
    prefixes_.reserve(combinations);
    // Axis values are distinct within each axis (the config checks), so two combinations can
    // coincide only through seq_len_kv's "seq_len" beside explicit lengths. Then each is looked
    // up among the kept ones by the hash of its canonical text (a search through all earlier
    // ones made expansion quadratic: 10^6 points never finished).
    const AxisValues& kv = config.axis("seq_len_kv");
    const auto same = [](const AxisValue& v) { return std::holds_alternative<SameAsSeqLen>(v); };
    may_repeat_ = std::any_of(kv.values.begin(), kv.values.end(), same) &&
                  !std::all_of(kv.values.begin(), kv.values.end(), same);
  }

  // One combination: skipped (a constraint, or a repeat) or kept as the next point.
  void add(PointAxes axes) {
    const auto violated =
        std::find_if(constraints_.begin(), constraints_.end(),
                     [&](const ResolvedConstraint& c) { return !holds(c, axes); });
    if (violated != constraints_.end()) {
      plan_.skipped.push_back({axes, violated->constraint->reason});
      return;
    }
    const std::uint64_t id_prefix = axes_prefix(axes.canonical_text(/*tiles=*/true));
    const auto [first, last] = seen_.equal_range(id_prefix);
    const bool repeat = may_repeat_ && std::any_of(first, last, [&](const auto& entry) {
                          return plan_.points[entry.second].axes == axes;
                        });
    if (repeat) {
      // e.g. seq_len_kv: ["seq_len", 512] with seq_len 512 names one point twice.
      plan_.skipped.push_back({axes, "same axis values as an earlier point"});
      return;
    }
    if (may_repeat_) seen_.emplace(id_prefix, plan_.points.size());
    Point p;
    p.axes = std::move(axes);
    p.seed = config_.seeds[0];
    p.trial = 0;
    p.index = plan_.points.size();
    const std::uint64_t input_prefix = axes_prefix(p.axes.canonical_text(/*tiles=*/false));
    p.id = with_seed(id_prefix, p.seed);
    p.input_key = with_seed(input_prefix, p.seed);
    plan_.points.push_back(std::move(p));
    prefixes_.emplace_back(id_prefix, input_prefix);
  }

  std::vector<std::pair<std::uint64_t, std::uint64_t>> take_prefixes() {
    return std::move(prefixes_);
  }

 private:
  const Config& config_;
  Plan& plan_;
  std::vector<ResolvedConstraint> constraints_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> prefixes_;  // (id, input key) per point
  bool may_repeat_ = false;
  std::unordered_multimap<std::uint64_t, std::size_t> seen_;  // id prefix -> point index
};

void check_not_empty(const Plan& plan) {
  if (!plan.points.empty()) return;
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
void add_trials(const Config& config,
                const std::vector<std::pair<std::uint64_t, std::uint64_t>>& prefixes, Plan& plan) {
  const std::size_t kept = plan.points.size();
  plan.points.reserve(kept * config.seeds.size());
  for (std::size_t t = 1; t < config.seeds.size(); ++t) {
    for (std::size_t k = 0; k < kept; ++k) {
      Point p = plan.points[k];
      p.seed = config.seeds[t];
      p.trial = t;
      p.id = with_seed(prefixes[k].first, p.seed);
      p.input_key = with_seed(prefixes[k].second, p.seed);
      p.index = plan.points.size();
      plan.points.push_back(std::move(p));
    }
  }
}

}  // namespace

Plan make_plan(const Config& config) {
  check_plan_size(config);
  Plan plan;
  for (const AxisValues& a : config.axes)
    if (a.values.size() > 1) plan.varying_axes.push_back(a.name);

  const std::vector<Dimension> dims = dimensions(config);
  FileShapes files(config);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> prefixes;
  {
    TrialZero trial_zero(config, plan);
    std::vector<std::size_t> digit(dims.size(), 0);
    do {
      trial_zero.add(combination_axes(dims, digit, files));
    } while (next_combination(dims, digit));
    prefixes = trial_zero.take_prefixes();
  }
  check_not_empty(plan);
  add_trials(config, prefixes, plan);
  return plan;
}

std::size_t shard_of(const Point& point, std::size_t count) {
  std::uint64_t v = 0;
  parse_hex16(point.id, v);
  return static_cast<std::size_t>(v % count);
}

double point_flops(const Point& point) {
  return attention::forward_flops(point.shape(), point.axes.causal);
}

}  // namespace attndev::experiment
