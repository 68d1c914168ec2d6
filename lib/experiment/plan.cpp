#include "experiment/plan.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <unordered_map>

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

// Every axis value prepared once, so that expanding a combination builds no JSON: its canonical
// text (exactly what json::dump writes, so point ids do not change) and its typed value.
struct PreparedAxis {
  const AxisValues* axis = nullptr;
  std::size_t dim = 0;                      // the Dimension whose digit selects the value
  std::string key;                          // "\"seq_len\":"
  std::vector<std::string> texts;           // value.dump() per value
  std::vector<long long> integers;          // integer value (booleans as 0/1), else 0
  std::vector<bool> alias_seq_len;          // seq_len_kv: the value "seq_len" (resolved per point)
  std::vector<Distribution> distributions;  // distribution axis: parsed once per value
  bool tile = false;                        // block_r / block_c: not part of the input key
};

struct Prepared {
  std::vector<PreparedAxis> axes;  // in key order (sorted by name, as the JSON object sorts them)
  std::map<std::string, std::size_t> by_name;
  // Indices into axes of the axes a point reads (looked up once, not per point).
  std::size_t batch = 0, heads = 0, seq_len = 0, seq_len_kv = 0, head_dim = 0, distribution = 0,
              causal = 0, scale_placement = 0, block_r = 0, block_c = 0;
};

Prepared prepare(const std::vector<Dimension>& dims) {
  Prepared p;
  for (std::size_t d = 0; d < dims.size(); ++d)
    for (const AxisValues* a : dims[d].axes) {
      PreparedAxis x;
      x.axis = a;
      x.dim = d;
      x.key = json(a->name).dump() + ":";
      x.tile = a->name == "block_r" || a->name == "block_c";
      for (const json& v : a->values) {
        x.texts.push_back(v.dump());
        x.integers.push_back(v.is_number_integer() ? v.get<long long>()
                             : v.is_boolean()      ? static_cast<long long>(v.get<bool>())
                                                   : 0);
        x.alias_seq_len.push_back(a->name == "seq_len_kv" && v.is_string());
        if (a->name == "distribution") {
          Distribution dist;
          std::string error;
          if (!parse_distribution(v.get<std::string>(), dist, error))
            throw std::logic_error("canonical distribution does not parse: " + error);
          x.distributions.push_back(dist);
        }
      }
      p.axes.push_back(std::move(x));
    }
  std::sort(p.axes.begin(), p.axes.end(), [](const PreparedAxis& a, const PreparedAxis& b) {
    return a.axis->name < b.axis->name;
  });
  for (std::size_t i = 0; i < p.axes.size(); ++i) p.by_name[p.axes[i].axis->name] = i;
  for (auto [field, name] : {std::pair{&p.batch, "batch"},
                             {&p.heads, "heads"},
                             {&p.seq_len, "seq_len"},
                             {&p.seq_len_kv, "seq_len_kv"},
                             {&p.head_dim, "head_dim"},
                             {&p.distribution, "distribution"},
                             {&p.causal, "causal"},
                             {&p.scale_placement, "scale_placement"},
                             {&p.block_r, "block_r"},
                             {&p.block_c, "block_c"}})
    *field = p.by_name.at(name);
  return p;
}

// One combination of axis values: the value index of each prepared axis, seq_len_kv resolved.
struct Combination {
  const Prepared& prepared;
  std::vector<std::size_t> index;   // per prepared axis
  std::vector<std::size_t> source;  // per prepared axis: whose texts/integers (seq_len_kv alias)

  const std::string& text(std::size_t a) const { return prepared.axes[source[a]].texts[index[a]]; }
  long long integer(std::size_t a) const { return prepared.axes[source[a]].integers[index[a]]; }
};

void select(Combination& c, const std::vector<std::size_t>& digit) {
  for (std::size_t a = 0; a < c.prepared.axes.size(); ++a) {
    const PreparedAxis& x = c.prepared.axes[a];
    c.index[a] = digit[x.dim];
    c.source[a] = a;
    if (x.alias_seq_len[c.index[a]]) {
      c.source[a] = c.prepared.seq_len;
      c.index[a] = digit[c.prepared.axes[c.prepared.seq_len].dim];
    }
  }
}

// {"batch":1,"block_c":64,...}: the canonical text of the combination into `out`; without the
// tile axes when `tiles` is false (the input set's text).
void axes_text(const Combination& c, bool tiles, std::string& out) {
  out = "{";
  for (std::size_t a = 0; a < c.prepared.axes.size(); ++a) {
    if (!tiles && c.prepared.axes[a].tile) continue;
    if (out.size() > 1) out += ',';
    out += c.prepared.axes[a].key;
    out += c.text(a);
  }
  out += '}';
}

std::string axes_text(const Combination& c) {
  std::string out;
  axes_text(c, /*tiles=*/true, out);
  return out;
}

// A constraint with its axis operands resolved to prepared-axis indices once.
struct ResolvedConstraint {
  const Constraint* constraint = nullptr;
  std::optional<std::size_t> lhs, rhs;  // empty: the literal
};

long long operand(const Combination& c, const std::optional<std::size_t>& axis, long long literal) {
  return axis ? c.integer(*axis) : literal;
}

bool holds(const ResolvedConstraint& r, const Combination& c) {
  const Constraint& k = *r.constraint;
  const long long a = operand(c, r.lhs, k.lhs_literal);
  const long long b = operand(c, r.rhs, k.rhs_literal);
  switch (k.op) {
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

// A point of the combination without its trial: everything but index, trial, seed and the ids.
struct PointTemplate {
  Point point;
  std::uint64_t id_prefix = 0;     // FNV-1a state after {"axes":<axes_text>
  std::uint64_t input_prefix = 0;  // the same over the text without tiles
};

PointTemplate make_template(const Combination& c, std::string& scratch) {
  PointTemplate t;
  Point& p = t.point;
  const Prepared& x = c.prepared;
  p.shape.batch = static_cast<int>(c.integer(x.batch));
  p.shape.heads = static_cast<int>(c.integer(x.heads));
  p.shape.seq_q = static_cast<int>(c.integer(x.seq_len));
  p.shape.seq_kv = static_cast<int>(c.integer(x.seq_len_kv));
  p.shape.head_dim = static_cast<int>(c.integer(x.head_dim));
  p.distribution = x.axes[x.distribution].distributions[c.index[x.distribution]];
  p.options.causal = c.integer(x.causal) != 0;
  p.options.scale_placement = c.text(x.scale_placement) == "\"query\""
                                  ? attention::ScalePlacement::query
                                  : attention::ScalePlacement::scores;
  p.options.block_r = static_cast<int>(c.integer(x.block_r));
  p.options.block_c = static_cast<int>(c.integer(x.block_c));
  p.axes_text = axes_text(c);
  // The id hashes json{{"axes", axes}, {"seed", seed}}.dump(): {"axes":{...},"seed":N}.
  t.id_prefix = fnv1a64(p.axes_text, fnv1a64("{\"axes\":"));
  axes_text(c, /*tiles=*/false, scratch);
  t.input_prefix = fnv1a64(scratch, fnv1a64("{\"axes\":"));
  return t;
}

std::string with_seed(std::uint64_t prefix, std::uint64_t seed) {
  const std::string tail = ",\"seed\":" + std::to_string(seed) + "}";
  return hex16(splitmix64_finalize(fnv1a64(tail, prefix)));
}

}  // namespace

json Point::axes() const {
  return json::parse(axes_text);
}

json SkippedPoint::axes() const {
  return json::parse(axes_text);
}

std::string Point::describe() const {
  std::string out;
  const json values = axes();
  for (const auto& [key, value] : values.items()) {
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
  const Prepared prepared = prepare(dims);
  Combination combination{prepared, std::vector<std::size_t>(prepared.axes.size()),
                          std::vector<std::size_t>(prepared.axes.size())};
  // Trial 0's points are built in place, one per kept combination; `prefixes` keeps what the
  // other trials need to derive their ids.
  const std::size_t combinations =
      static_cast<std::size_t>(plan_size_bound(config)) / config.seeds.size();
  plan.points.reserve(combinations);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> prefixes;  // (id, input key) per point
  prefixes.reserve(combinations);
  // Axis values are distinct within each axis (the config checks), so two combinations can
  // coincide only through seq_len_kv's "seq_len" beside explicit lengths. Then each combination
  // is looked up among the kept ones by the hash of its text (a search through the earlier ones
  // made expansion quadratic: 10^6 points never finished); equal hashes compare the texts.
  const PreparedAxis& kv = prepared.axes[prepared.seq_len_kv];
  const bool may_repeat = std::count(kv.alias_seq_len.begin(), kv.alias_seq_len.end(), true) > 0 &&
                          std::count(kv.alias_seq_len.begin(), kv.alias_seq_len.end(), false) > 0;
  std::unordered_multimap<std::uint64_t, std::size_t> seen;  // id prefix -> point index
  const auto is_repeat = [&](const PointTemplate& t) {
    const auto [first, last] = seen.equal_range(t.id_prefix);
    return std::any_of(first, last, [&](const auto& entry) {
      return plan.points[entry.second].axes_text == t.point.axes_text;
    });
  };
  std::vector<ResolvedConstraint> constraints;
  for (const Constraint& c : config.constraints) {
    ResolvedConstraint r{&c, std::nullopt, std::nullopt};
    if (!c.lhs.empty()) r.lhs = prepared.by_name.at(c.lhs);
    if (!c.rhs.empty()) r.rhs = prepared.by_name.at(c.rhs);
    constraints.push_back(r);
  }
  std::string scratch;
  std::vector<std::size_t> digit(dims.size(), 0);
  for (bool done = false; !done;) {
    select(combination, digit);
    auto violated =
        std::find_if(constraints.begin(), constraints.end(),
                     [&](const ResolvedConstraint& c) { return !holds(c, combination); });
    if (violated != constraints.end()) {
      plan.skipped.push_back({axes_text(combination), violated->constraint->reason});
    } else {
      PointTemplate t = make_template(combination, scratch);
      if (may_repeat && is_repeat(t)) {
        // e.g. seq_len_kv: ["seq_len", 512] with seq_len 512 names one point twice.
        plan.skipped.push_back(
            {std::move(t.point.axes_text), "same axis values as an earlier point"});
      } else {
        if (may_repeat) seen.emplace(t.id_prefix, plan.points.size());
        t.point.seed = config.seeds[0];
        t.point.trial = 0;
        t.point.id = with_seed(t.id_prefix, t.point.seed);
        t.point.input_key = with_seed(t.input_prefix, t.point.seed);
        t.point.index = plan.points.size();
        plan.points.push_back(std::move(t.point));
        prefixes.emplace_back(t.id_prefix, t.input_prefix);
      }
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
  seen.clear();
  if (plan.points.empty()) {
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
