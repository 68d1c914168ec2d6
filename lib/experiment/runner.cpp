#include "experiment/runner.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>

#include "experiment/inputs.hpp"
#include "experiment/result_row.hpp"
#include "experiment/result_tables.hpp"
#include "experiment/results_store.hpp"
#include "experiment/variant_runner.hpp"
#include "io/jsonl.hpp"

namespace attndev::experiment {

using io::Json;

namespace {

// What an input set computes once: inputs and golden per input format, and the rows of
// tile-independent variants.
struct InputSetCache {
  struct Reference {
    attention::Inputs inputs;
    attention::Output golden;
    double max_abs_golden = 0;
  };
  std::map<numerics::Format, Reference> by_format;
  std::unordered_map<std::size_t, std::pair<VariantOutcome, std::optional<metrics::Deviation>>>
      shared;
};

const InputSetCache::Reference& reference_for(InputSetCache& cache, const Point& point,
                                              numerics::Format input_format, int threads) {
  auto it = cache.by_format.find(input_format);
  if (it != cache.by_format.end()) return it->second;
  InputSetCache::Reference ref;
  ref.inputs = make_inputs(point.shape, point.distribution, point.seed, input_format);
  attention::Options options = point.options;
  options.threads = threads;
  ref.golden = attention::golden(ref.inputs, options);
  for (double x : ref.golden.o.data)
    ref.max_abs_golden = std::max(ref.max_abs_golden, std::fabs(x));
  return cache.by_format.emplace(input_format, std::move(ref)).first->second;
}

std::pair<VariantOutcome, std::optional<metrics::Deviation>> evaluate(const Variant& variant,
                                                                      const Point& point,
                                                                      InputSetCache& cache,
                                                                      int threads) {
  const InputSetCache::Reference& ref = reference_for(cache, point, variant.policy.input, threads);
  attention::Options options = point.options;
  options.threads = threads;
  VariantOutcome outcome = run_variant(variant, ref.inputs, options);
  std::optional<metrics::Deviation> deviation;
  if (outcome.status == "ok") {
    try {
      deviation = metrics::compare(outcome.output.o.data, ref.golden.o.data,
                                   max_rel_floor(variant.policy.output, ref.max_abs_golden));
    } catch (const std::exception& e) {
      outcome.status = std::string("failed: comparing to the golden: ") + e.what();
    }
  }
  outcome.output = {};  // rows keep metrics, not tensors
  return {std::move(outcome), deviation};
}

}  // namespace

RunReport run_experiment(const Config& config, const Plan& plan, const RunOptions& options) {
  RunReport report;
  const std::size_t shard_count = std::max<std::size_t>(options.shard_count, 1);
  prepare_output_dir(options.dir, config, options.force_new);
  report.results_file = options.dir / shard_file_name(options.shard_index, shard_count);
  report.repaired_records = repair_results_file(report.results_file, config, plan);
  if (report.repaired_records)
    spdlog::warn(
        "{}: dropped {} torn or partial record(s) of an interrupted run; their points are rerun",
        report.results_file.string(), report.repaired_records);

  const StoredResults stored = load_results(options.dir, config, plan);
  std::vector<const Point*> pending;
  for (const Point& p : plan.points) {
    if (shard_of(p, shard_count) != options.shard_index) continue;
    ++report.shard_points;
    if (stored.done_points.count(p.id)) {
      ++report.already_done;
    } else {
      pending.push_back(&p);
    }
  }
  if (report.already_done)
    spdlog::info("resuming: {} of {} points already in {}", report.already_done,
                 report.shard_points, options.dir.string());

  io::JsonlAppender out(report.results_file);
  Json run_record;
  run_record["record"] = "run";
  run_record["provenance"] = io::to_json(options.provenance);
  run_record["shard"] = std::to_string(options.shard_index) + "/" + std::to_string(shard_count);
  run_record["config_hash"] = config.hash;
  run_record["config_text"] = options.config_text;
  run_record["pending_points"] = pending.size();
  out.append({run_record});

  // Group by input set, keeping plan order of each set's first point.
  std::vector<std::vector<const Point*>> groups;
  std::unordered_map<std::string, std::size_t> group_of;
  for (const Point* p : pending) {
    auto [it, inserted] = group_of.emplace(p->input_key, groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(p);
  }

  auto stop = [&] { return options.stop_requested && options.stop_requested(); };
  std::size_t done = report.already_done;
  if (options.on_progress) options.on_progress(done, report.shard_points);
  for (const auto& group : groups) {
    if (report.interrupted) break;
    InputSetCache cache;
    for (const Point* point : group) {
      std::vector<Json> rows;
      for (std::size_t v = 0; v < config.variants.size(); ++v) {
        if (stop()) {
          report.interrupted = true;
          break;
        }
        const Variant& variant = config.variants[v];
        std::pair<VariantOutcome, std::optional<metrics::Deviation>> result;
        if (tile_independent(variant)) {
          auto it = cache.shared.find(v);
          if (it == cache.shared.end())
            it = cache.shared.emplace(v, evaluate(variant, *point, cache, options.threads)).first;
          result = it->second;
        } else {
          result = evaluate(variant, *point, cache, options.threads);
        }
        if (result.first.status != "ok")
          spdlog::debug("{} at {}: {}", variant.name, point->describe(), result.first.status);
        rows.push_back(
            make_row(*point, variant, result.first, result.second ? &*result.second : nullptr));
      }
      if (report.interrupted) break;  // the point in flight is not written: a rerun redoes it
      fill_ratios(rows, config);
      out.append(rows);
      ++report.ran;
      ++done;
      if (options.on_progress) options.on_progress(done, report.shard_points);
    }
  }
  out.close();

  const StoredResults now = load_results(options.dir, config, plan);
  for (const Json& row : now.rows) {
    const Point& p = plan.points[row["point_index"].get<std::size_t>()];
    if (shard_of(p, shard_count) != options.shard_index) continue;
    const std::string kind = status_kind(row);
    (kind == "ok"        ? report.rows_ok
     : kind == "skipped" ? report.rows_skipped
                         : report.rows_failed) += 1;
  }
  if (shard_count == 1) {
    write_result_tables(options.dir, config, plan, now, options.provenance);
    report.tables_written = true;
  }
  return report;
}

}  // namespace attndev::experiment
