#include "experiment/runner.hpp"

#include "io/log.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>

#include "experiment/dump.hpp"
#include "experiment/inputs_file.hpp"
#include "experiment/result_row.hpp"
#include "experiment/result_tables.hpp"
#include "experiment/results_store.hpp"
#include "experiment/tensor_io.hpp"
#include "experiment/variant_runner.hpp"
#include "io/jsonl.hpp"

namespace attndev::experiment {

using io::Json;

namespace {

// One variant at one point: its outcome (output kept until the point's rows are written, for
// variant-vs-variant comparison and dumps) and its deviation from the golden.
struct Evaluated {
  VariantOutcome outcome;
  std::optional<metrics::Deviation> deviation;
};

// What an input set (the points sharing Q, K, V) computes once: the inputs and golden per input
// format, the inputs file external commands read, and the results of tile-independent variants.
struct InputSetCache {
  struct Reference {
    attention::Inputs inputs;
    attention::Output golden;
    double max_abs_golden = 0;
    std::filesystem::path file;  // inputs written for external commands ("" until needed)
  };
  std::optional<attention::Inputs> from_file;  // the file's values, before any rounding
  std::map<numerics::Format, Reference> by_format;
  std::unordered_map<std::size_t, Evaluated> shared;
  std::filesystem::path work_dir;  // external commands' files for this input set
};

InputSetCache::Reference& reference_for(InputSetCache& cache, const Point& point,
                                        numerics::Format input_format, int threads) {
  auto it = cache.by_format.find(input_format);
  if (it != cache.by_format.end()) return it->second;
  InputSetCache::Reference ref;
  if (point.axes.from_file()) {
    if (!cache.from_file) cache.from_file = read_inputs_file(point.axes.inputs.path);
    ref.inputs = round_inputs(*cache.from_file, input_format);
  } else {
    ref.inputs = make_inputs(point.shape(), point.axes.distribution, point.seed, input_format);
  }
  attention::Options options = point.options();
  options.threads = threads;
  ref.golden = attention::golden(ref.inputs, options);
  for (double x : ref.golden.o.data)
    ref.max_abs_golden = std::max(ref.max_abs_golden, std::fabs(x));
  return cache.by_format.emplace(input_format, std::move(ref)).first->second;
}

io::TensorMetadata point_metadata(const Point& point, const Json& provenance) {
  return {{"point_id", point.id},
          {"seed", std::to_string(point.seed)},
          {"axes", point.axes.to_json().dump()},
          {"provenance", provenance.dump()}};
}

Evaluated evaluate(const Variant& variant, const Point& point, InputSetCache& cache,
                   const RunOptions& options) {
  InputSetCache::Reference& ref =
      reference_for(cache, point, variant.policy.input, options.threads);
  attention::Options run_options = point.options();
  run_options.threads = options.threads;
  run_options.block_r = variant.block_r.value_or(run_options.block_r);
  run_options.block_c = variant.block_c.value_or(run_options.block_c);
  Evaluated e;
  if (variant.external) {
    ExternalContext context;
    context.axes = point.axes.to_json();
    context.stop_requested = options.stop_requested;
    context.work_dir = cache.work_dir / dump_file_stem(variant.name);
    std::filesystem::create_directories(context.work_dir);
    if (ref.file.empty()) {
      ref.file =
          cache.work_dir /
          ("inputs-" + std::string(numerics::format_name(variant.policy.input)) + ".safetensors");
      write_inputs_file(ref.file, ref.inputs, variant.policy.input,
                        point_metadata(point, io::to_json(options.provenance)));
    }
    context.inputs_file = ref.file;
    e.outcome = run_variant(variant, ref.inputs, run_options, &context);
  } else {
    e.outcome = run_variant(variant, ref.inputs, run_options);
  }
  // An output is measured when there is one of the right size: every ok row, and an external
  // command's output that holds NaN/inf (failed, but its nan_count is the finding).
  if (e.outcome.output.o.data.size() == ref.golden.o.data.size()) {
    try {
      e.deviation = metrics::compare(e.outcome.output.o.data, ref.golden.o.data,
                                     max_rel_floor(variant.policy.output, ref.max_abs_golden));
    } catch (const std::exception& ex) {
      e.outcome.status = Status::failed(std::string("comparing to the golden: ") + ex.what());
    }
  }
  return e;
}

// |O - O_ref| and ulps of O against the reference variant's output, both measured.
std::optional<ReferenceComparison> compare_to_reference(const Variant& variant,
                                                        const Evaluated& self,
                                                        const Variant& reference,
                                                        const Evaluated& ref) {
  const auto& x = self.outcome.output.o.data;
  const auto& r = ref.outcome.output.o.data;
  if (x.empty() || r.empty() || x.size() != r.size()) return std::nullopt;
  ReferenceComparison c;
  c.reference = reference.name;
  c.difference = metrics::compare(x, r, /*max_rel_floor=*/0.0);
  c.ulps = metrics::compare_ulps(x, r, variant.policy.output);
  return c;
}

}  // namespace

RunReport run_experiment(const Config& config, const Plan& plan, const RunOptions& options) {
  RunReport report;
  const std::size_t shard_count = std::max<std::size_t>(options.shard_count, 1);
  const std::string file_name = shard_file_name(options.shard_index, shard_count);
  // Held until the tables are written: one writer per results file, nobody rewriting the folder.
  OutputLock lock = lock_results_file(options.dir, file_name, options.force_new,
                                      options.provenance.command_line.empty()
                                          ? "attndev run " + config.name + " " + file_name
                                          : options.provenance.command_line);
  prepare_output_dir(options.dir, config, options.force_new);
  if (options.force_new) lock.share_folder();
  report.results_file = options.dir / file_name;
  const RepairReport repair = repair_results_file(report.results_file, config, plan);
  report.repaired_records = repair.dropped;
  // A damaged row is named (first few), not only counted: the user may want to know what broke.
  for (std::size_t i = 0; i < repair.problems.size() && i < 10; ++i)
    log::warn("{}/{}: dropped; its point is rerun", options.dir.string(), repair.problems[i]);
  if (repair.problems.size() > 10)
    log::warn("... and {} more damaged record(s)", repair.problems.size() - 10);
  if (report.repaired_records)
    log::warn("{}: dropped {} torn, partial or damaged record(s); their points are rerun",
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
    log::info("resuming: {} of {} points already in {}", report.already_done, report.shard_points,
              options.dir.string());

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

  // External commands' files: private to this shard, removed when it ends (and, left over from
  // a killed run, when the shard starts again).
  const bool any_external = std::any_of(config.variants.begin(), config.variants.end(),
                                        [](const Variant& v) { return v.external.has_value(); });
  const std::filesystem::path work_root =
      options.dir /
      (".external." + std::to_string(options.shard_index) + "-of-" + std::to_string(shard_count));
  if (any_external) std::filesystem::remove_all(work_root);
  const Json provenance = io::to_json(options.provenance);

  auto stop = [&] { return options.stop_requested && options.stop_requested(); };
  std::size_t done = report.already_done;
  if (options.on_progress) options.on_progress(done, report.shard_points);
  for (const auto& group : groups) {
    if (report.interrupted) break;
    InputSetCache cache;
    cache.work_dir = work_root / group.front()->input_key;
    for (const Point* point : group) {
      std::vector<Evaluated> results(config.variants.size());
      for (std::size_t v = 0; v < config.variants.size() && !report.interrupted; ++v) {
        if (stop()) {
          report.interrupted = true;
          break;
        }
        const Variant& variant = config.variants[v];
        if (tile_independent(variant)) {
          auto it = cache.shared.find(v);
          if (it == cache.shared.end())
            it = cache.shared.emplace(v, evaluate(variant, *point, cache, options)).first;
          results[v] = it->second;
        } else {
          results[v] = evaluate(variant, *point, cache, options);
        }
        // An external command killed because of the signal must not land as a failed row.
        if (variant.external && stop()) report.interrupted = true;
        if (!results[v].outcome.status.is_ok())
          log::debug("{} at {}: {}", variant.name, point->describe(),
                     results[v].outcome.status.text());
      }
      if (report.interrupted) break;  // the point in flight is not written: a rerun redoes it

      if (config.dump) {
        DumpWriter dump;
        dump.dir = options.dir / "dump" / point->id;
        dump.base = point_metadata(*point, provenance);
        for (const auto& [format, ref] : cache.by_format) {
          dump.inputs(ref.inputs, format);
          dump.golden(ref.golden.o, format);
        }
        for (std::size_t v = 0; v < config.variants.size(); ++v)
          if (!results[v].outcome.output.o.data.empty())
            dump.variant(config.variants[v], results[v].outcome.status,
                         results[v].outcome.output.o);
      }

      std::vector<Json> rows;
      for (std::size_t v = 0; v < config.variants.size(); ++v) {
        std::optional<ReferenceComparison> ref;
        const int r = config.output_reference(v);
        if (r >= 0)
          ref = compare_to_reference(config.variants[v], results[v],
                                     config.variants[static_cast<std::size_t>(r)],
                                     results[static_cast<std::size_t>(r)]);
        rows.push_back(make_row(*point, config.variants[v], results[v].outcome,
                                results[v].deviation ? &*results[v].deviation : nullptr,
                                ref ? &*ref : nullptr));
      }
      fill_ratios(rows, config);
      out.append(rows);
      ++report.ran;
      ++done;
      if (options.on_progress) options.on_progress(done, report.shard_points);
    }
    if (any_external) std::filesystem::remove_all(cache.work_dir);
  }
  out.close();
  if (any_external) std::filesystem::remove_all(work_root);

  const StoredResults now = load_results(options.dir, config, plan);
  for (const Json& row : now.rows) {
    const Point& p = plan.points[row["point_index"].get<std::size_t>()];
    if (shard_of(p, shard_count) != options.shard_index) continue;
    switch (row_status(row).kind) {
      case StatusKind::ok:
        ++report.rows_ok;
        break;
      case StatusKind::skipped:
        ++report.rows_skipped;
        break;
      case StatusKind::failed:
        ++report.rows_failed;
        break;
    }
  }
  if (shard_count == 1) {
    try {
      write_result_tables(options.dir, config, plan, now, options.provenance);
      report.tables_written = true;
    } catch (const TablesWouldShrink& e) {
      // The rows are safe in the JSONL; the old tables stay as they are (e.g. an interrupted
      // rerun of a folder whose results.jsonl was lost).
      log::warn("tables not rewritten: {}", e.what());
    }
  }
  return report;
}

}  // namespace attndev::experiment
