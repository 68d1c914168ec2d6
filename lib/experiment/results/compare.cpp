#include "experiment/results/compare.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <utility>

#include "config/suggest.hpp"

#include "experiment/results/result_tables.hpp"
#include "experiment/results/results_store.hpp"
#include "io/markdown.hpp"
#include "io/text_escape.hpp"

namespace attndev::experiment {

using io::Json;

namespace {

struct Loaded {
  Config config;
  Plan plan;
  StoredResults results;
};

Loaded load(const std::filesystem::path& dir) {
  Loaded l{read_manifest_config(dir), {}, {}};
  l.plan = make_plan(l.config);
  l.results = load_results(dir, l.config, l.plan);
  return l;
}

bool same_value(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

}  // namespace

Comparison compare_results(const std::filesystem::path& a_dir, const std::filesystem::path& b_dir,
                           std::vector<std::string> metrics, std::size_t max_table_rows) {
  // Checked before anything is read: an unknown name compared nothing and still printed ratios
  // of 1.
  for (const std::string& m : metrics)
    if (std::find(std::begin(kSelectableMetrics), std::end(kSelectableMetrics), m) ==
        std::end(kSelectableMetrics))
      throw std::invalid_argument("--metric " + io::printable(m) + ": unknown metric" +
                                  config::did_you_mean(m, kSelectableMetrics) +
                                  "; valid: " + config::join_names(kSelectableMetrics));
  const Loaded a = load(a_dir), b = load(b_dir);
  if (metrics.empty()) metrics = a.config.metrics;
  std::map<std::pair<std::string, std::string>, const Json*> b_rows;
  for (const Json& r : b.results.rows)
    b_rows[{r["point_id"].get<std::string>(), r["variant"].get<std::string>()}] = &r;

  Comparison c;
  std::vector<std::pair<const Json*, const Json*>> pairs;
  for (const Json& r : a.results.rows) {
    auto it = b_rows.find({r["point_id"].get<std::string>(), r["variant"].get<std::string>()});
    if (it == b_rows.end()) {
      ++c.only_a;
      continue;
    }
    pairs.emplace_back(&r, it->second);
    b_rows.erase(it);
  }
  c.only_b = b_rows.size();
  c.matched = pairs.size();
  for (const auto& [ra, rb] : pairs)
    if ((*ra)["status"] != (*rb)["status"]) ++c.status_changes;

  for (const std::string& m : metrics) {
    MetricChange change;
    change.metric = m;
    double log_sum = 0;
    std::size_t logs = 0;
    bool first = true;
    for (const auto& [ra, rb] : pairs) {
      double x = 0, y = 0;
      if (!ra->contains(m) || !rb->contains(m) || !io::json_to_double((*ra)[m], x) ||
          !io::json_to_double((*rb)[m], y))
        continue;
      ++change.compared;
      if (same_value(x, y)) ++change.identical;
      if (x > 0 && y > 0 && std::isfinite(x) && std::isfinite(y)) {
        const double ratio = y / x;
        log_sum += std::log(ratio);
        ++logs;
        change.max_ratio = first ? ratio : std::max(change.max_ratio, ratio);
        change.min_ratio = first ? ratio : std::min(change.min_ratio, ratio);
        first = false;
      }
    }
    change.geomean_ratio = logs ? std::exp(log_sum / static_cast<double>(logs)) : NAN;
    if (logs == 0) change.min_ratio = change.max_ratio = NAN;  // no ratio, not a ratio of 1
    c.metrics.push_back(change);
  }

  if (!metrics.empty()) {
    const std::string& m = metrics.front();
    std::vector<std::vector<std::string>> lines;
    for (const auto& [ra, rb] : pairs) {
      if (lines.size() >= max_table_rows) break;
      std::string point;
      for (const std::string& axis : a.plan.varying_axes) {
        const Json& v = (*ra)[axis];
        point += (point.empty() ? "" : " ") + axis + "=" +
                 (v.is_string() ? v.get<std::string>() : v.dump());
      }
      point += " seed=" + (*ra)["seed"].dump();
      double x = NAN, y = NAN;
      const bool hx = ra->contains(m) && io::json_to_double((*ra)[m], x);
      const bool hy = rb->contains(m) && io::json_to_double((*rb)[m], y);
      lines.push_back({point, (*ra)["variant"].get<std::string>(),
                       hx ? short_number(x) : (*ra)["status"].get<std::string>(),
                       hy ? short_number(y) : (*rb)["status"].get<std::string>(),
                       hx && hy && x != 0 ? short_number(y / x) : "-"});
    }
    c.table = io::markdown_table({"point", "variant", m + " A", m + " B", "B/A"}, lines);
  }
  return c;
}

}  // namespace attndev::experiment
