#include "experiment/results/result_row.hpp"

#include <cmath>

#include "numerics/format.hpp"

namespace attndev::experiment {

using io::Json;

const std::vector<std::string>& result_columns() {
  static const std::vector<std::string> kColumns = [] {
    std::vector<std::string> c = {"point_id", "point_index", "trial", "seed"};
    for (std::string_view axis : kAxisNames) c.emplace_back(axis);
    for (const char* s : {"variant", "algorithm", "policy", "backend", "baseline", "status"})
      c.emplace_back(s);
    for (std::string_view m : kDeviationMetrics) c.emplace_back(m);
    c.emplace_back("worst_index");
    c.emplace_back("count");
    c.emplace_back("ratio_to");
    for (std::string_view m : kRatioMetrics) c.push_back("ratio_" + std::string(m));
    for (std::string_view m : kReferenceColumns) c.emplace_back(m);
    for (std::string_view m : kQuantColumns) c.emplace_back(m);
    c.emplace_back("runtime_ms");
    c.emplace_back("gflops");
    c.emplace_back("tflops");
    c.emplace_back("flops");
    c.emplace_back("ran_on");
    return c;
  }();
  return kColumns;
}

Json make_row(const Point& point, const Variant& variant, const VariantOutcome& outcome,
              const metrics::Deviation* d, const ReferenceComparison* reference,
              const RanOn* ran_on) {
  Json row;
  row["record"] = "row";
  row["point_id"] = point.id;
  row["point_index"] = point.index;
  row["trial"] = point.trial;
  row["seed"] = point.seed;
  // Typed axes to JSON once, here; an axis the canonical form leaves out (inputs when drawn,
  // distribution when read from a file) has no cell.
  const nlohmann::json axes = point.axes.to_json();
  for (std::string_view axis : kAxisNames) {
    const auto it = axes.find(std::string(axis));
    if (it != axes.end()) row[std::string(axis)] = Json(*it);
  }
  // A variant with its own tiles ran with them, not with the point's: the row says which.
  if (variant.block_r) row["block_r"] = *variant.block_r;
  if (variant.block_c) row["block_c"] = *variant.block_c;
  row["variant"] = variant.name;
  row["algorithm"] = variant_algorithm_name(variant);
  row["policy"] = variant.policy_label;
  row["backend"] = backend_name(variant.backend);
  row["baseline"] = variant.baseline;
  row["status"] = outcome.status.text();
  if (d) {
    row["max_abs"] = io::number_json(d->max_abs);
    row["mean_abs"] = io::number_json(d->mean_abs);
    row["std_abs"] = io::number_json(d->std_abs);
    row["rmse"] = io::number_json(d->rmse);
    row["rel_l2"] = io::number_json(d->rel_l2);
    row["rel_l1"] = io::number_json(d->rel_l1);
    row["max_rel"] = io::number_json(d->max_rel);
    row["cos_sim"] = io::number_json(d->cos_sim);
    row["nan_count"] = d->nan_count;
    row["inf_count"] = d->inf_count;
    row["worst_index"] = d->worst_index;
    row["count"] = d->count;
  }
  if (reference) {
    row["reference"] = reference->reference;
    row["ref_max_abs"] = io::number_json(reference->measured.difference.max_abs);
    row["ref_mean_abs"] = io::number_json(reference->measured.difference.mean_abs);
    row["identical_fraction"] = io::number_json(reference->measured.ulps.identical_fraction);
    row["max_ulp"] = reference->measured.ulps.max_ulp;
    row["mean_ulp"] = io::number_json(reference->measured.ulps.mean_ulp);
    row["ulp_histogram"] = reference->measured.ulps.histogram_text();
  }
  if (outcome.status.is_ok() && !outcome.output.quant.empty()) {
    std::size_t zero = 0, nonfinite = 0;
    for (const attention::QuantStageReport& q : outcome.output.quant) {
      const double share = q.elements > 0 ? static_cast<double>(q.saturated) / q.elements : 0.0;
      row["saturated_" + q.stage] = io::number_json(share);
      row["quant_err_" + q.stage] = io::number_json(q.rel_rmse);
      zero += q.zero_scales;
      nonfinite += q.nonfinite_scales;
    }
    row["zero_scales"] = zero;
    row["nonfinite_scales"] = nonfinite;
  }
  const double flops = point_flops(point);
  if (outcome.status.is_ok()) {
    row["runtime_ms"] = io::number_json(outcome.runtime_ms);
    row["gflops"] =
        io::number_json(outcome.runtime_ms > 0 ? flops / (outcome.runtime_ms * 1e6) : 0.0);
    // A GPU kernel's rate, from CUDA events around the launches alone (median of the repeats,
    // cold L2; docs/cuda.md): only cuda rows have one. A CPU row's runtime is the wall time of
    // the whole call and its gflops says so; the two are not to be put side by side.
    if (variant.backend == Backend::cuda && outcome.runtime_ms > 0)
      row["tflops"] = io::number_json(flops / (outcome.runtime_ms * 1e9));
  }
  row["flops"] = io::number_json(flops);
  if (ran_on) row["ran_on"] = ran_on->to_json();
  return row;
}

void fill_ratios(std::vector<Json>& rows, const Config& config) {
  for (std::size_t v = 0; v < rows.size(); ++v) {
    const int ref = config.ratio_reference(v);
    if (ref < 0) continue;
    rows[v]["ratio_to"] = config.variants[static_cast<std::size_t>(ref)].name;
    const Json& base = rows[static_cast<std::size_t>(ref)];
    if (!row_status(rows[v]).is_ok() || !row_status(base).is_ok()) continue;
    for (std::string_view m : kRatioMetrics) {
      const std::string key(m);
      double a = 0, b = 0;
      if (!io::json_to_double(rows[v][key], a) || !io::json_to_double(base[key], b)) continue;
      // 0/0 (both exact) is a ratio of 1: the variant is as good as its baseline.
      rows[v]["ratio_" + key] = io::number_json(a == 0 && b == 0 ? 1.0 : a / b);
    }
  }
  // Keep the column order of result_columns(): ratio keys were appended after timing keys.
  for (Json& row : rows) {
    Json ordered;
    for (const std::string& c : result_columns())
      if (row.contains(c)) ordered[c] = row[c];
    Json with_record;
    with_record["record"] = row["record"];
    for (auto& [k, v] : ordered.items()) with_record[k] = v;
    row = std::move(with_record);
  }
}

Status row_status(const Json& row) {
  const auto it = row.find("status");
  if (it == row.end() || !it->is_string()) return Status::failed("row without a status");
  Status s;
  if (!parse_status(it->get<std::string>(), s))
    return Status::failed("unrecognized status \"" + it->get<std::string>() + "\"");
  return s;
}

}  // namespace attndev::experiment
