#include "experiment/runner.hpp"

#include "io/log.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "experiment/run/device_backend.hpp"
#include "experiment/run/dump.hpp"
#include "experiment/run/external.hpp"
#include "experiment/spec/inputs_file.hpp"
#include "experiment/results/result_row.hpp"
#include "experiment/results/result_tables.hpp"
#include "experiment/results/results_store.hpp"
#include "experiment/run/tensor_io.hpp"
#include "experiment/run/variant_runner.hpp"
#include "io/jsonl.hpp"
#include "io/safe_open.hpp"
#include "measure/measure.hpp"

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
// format, the inputs files external commands read, and the results of tile-independent variants.
struct InputSetCache {
  measure::References references;
  std::map<numerics::Format, std::filesystem::path> files;  // written for external commands
  std::unordered_map<std::size_t, Evaluated> shared;        // by variant index
  std::filesystem::path work_dir;  // external commands' files for this input set
};

// The golden's options are the first point's: the points of a set differ only in tile sizes,
// which the golden does not have. Under the cuda backend drawn inputs and the golden come from
// the device (experiment/run/device_backend.hpp); inputs read from a file are rounded here.
InputSetCache make_input_set_cache(const Point& point, int threads,
                                   const std::filesystem::path& work_dir, Backend backend) {
  const bool on_device = backend == Backend::cuda;
  measure::InputSource source;
  if (point.axes.from_file()) {
    const std::filesystem::path path = point.axes.inputs.path;
    source = measure::rounded_from([path] { return read_inputs_file(path); });
  } else if (on_device) {
    source = device_drawn(point.shape(), point.axes.distribution, point.seed);
  } else {
    source = measure::drawn(point.shape(), point.axes.distribution, point.seed);
  }
  attention::Options options = point.options();
  options.threads = threads;
  return {measure::References(std::move(source), options,
                              on_device ? device_golden() : measure::GoldenFn{}),
          {},
          {},
          work_dir};
}

io::TensorMetadata point_metadata(const Point& point, const Json& provenance) {
  return {{"point_id", point.id},
          {"seed", std::to_string(point.seed)},
          {"axes", point.axes.to_json().dump()},
          {"provenance", provenance.dump()}};
}

// An external command reads the inputs from a file: written once per input format and set.
ExternalContext external_context(const Variant& variant, const Point& point,
                                 const measure::References::Reference& ref, InputSetCache& cache,
                                 const RunOptions& options) {
  ExternalContext context;
  context.axes = point.axes.to_json();
  context.stop_requested = options.stop_requested;
  context.work_dir = cache.work_dir / dump_file_stem(variant.name);
  std::filesystem::create_directories(context.work_dir);
  std::filesystem::path& file = cache.files[variant.policy.input];
  if (file.empty()) {
    file = cache.work_dir /
           ("inputs-" + std::string(numerics::format_name(variant.policy.input)) + ".safetensors");
    write_inputs_file(file, ref.inputs, variant.policy.input,
                      point_metadata(point, io::to_json(options.provenance)));
  }
  context.inputs_file = file;
  return context;
}

Evaluated evaluate(const Variant& variant, const Point& point, InputSetCache& cache,
                   const RunOptions& options, Backend backend) {
  const measure::References::Reference& ref = cache.references.for_format(variant.policy.input);
  if (const auto& why = ref.unmeasurable) {
    Evaluated e;
    e.outcome.status = Status::skipped(*why);
    return e;
  }
  attention::Options run_options = point.options();
  run_options.threads = options.threads;
  run_options.block_r = variant.block_r.value_or(run_options.block_r);
  run_options.block_c = variant.block_c.value_or(run_options.block_c);
  Evaluated e;
  if (variant.external) {
    const ExternalContext context = external_context(variant, point, ref, cache, options);
    e.outcome = run_variant(variant, ref.inputs, run_options, &context);
  } else if (backend == Backend::cuda && variant.backend == Backend::cpu) {
    e.outcome = run_twin_variant(variant, ref.inputs, run_options);
  } else {
    e.outcome = run_variant(variant, ref.inputs, run_options);
  }
  // An output is measured when there is one of the right size: every ok row, and an external
  // command's output that holds NaN/inf (failed, but its nan_count is the finding).
  if (e.outcome.output.o.data.size() == ref.golden.output.o.data.size()) {
    try {
      e.deviation = measure::deviation(e.outcome.output.o.data, ref.golden, variant.policy.output);
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
  return ReferenceComparison{reference.name, measure::compare_outputs(x, r, variant.policy.output)};
}

// Opens the results file for this shard: the locks, the manifest, and the repair of what a
// killed run left (each damaged record named, the first few, then counted).
OutputLock open_results(const Config& config, const RunOptions& options,
                        const std::string& file_name, RunReport& report) {
  OutputLock lock = lock_results_file(options.dir, file_name, options.force_new,
                                      options.provenance.command_line.empty()
                                          ? "attndev run " + config.name + " " + file_name
                                          : options.provenance.command_line);
  prepare_output_dir(options.dir, config, options.force_new);
  if (options.force_new) lock.share_folder();
  report.results_file = options.dir / file_name;
  // Temporary files of a killed writer of what this run alone writes (its results file; the
  // tables and manifest too when unsharded, which no other writer holds while it runs).
  if (file_name == "results.jsonl")
    io::remove_stale_temporaries(
        options.dir, {file_name, "results.csv", "results.json", "summary.md", "run.json"});
  else
    io::remove_stale_temporaries(options.dir, {file_name});
  return lock;
}

void repair_results(const Config& config, const Plan& plan, const RunOptions& options,
                    RunReport& report) {
  const RepairReport repair = repair_results_file(report.results_file, config, plan);
  report.repaired_records = repair.dropped;
  for (std::size_t i = 0; i < repair.problems.size() && i < 10; ++i)
    log::warn("{}/{}: dropped; its point is rerun", options.dir.string(), repair.problems[i]);
  if (repair.problems.size() > 10)
    log::warn("... and {} more damaged record(s)", repair.problems.size() - 10);
  const std::size_t damaged = repair.dropped - std::min(repair.dropped, repair.superseded);
  if (damaged)
    log::warn("{}: dropped {} torn, partial or damaged record(s); their points are rerun",
              report.results_file.string(), damaged);
  if (repair.superseded)
    log::info("{}: dropped {} row(s) repeated or superseded by a retry",
              report.results_file.string(), repair.superseded);
}

// A point of this shard with work left: the variants to compute (a row missing, of an edited
// variant, or failed when options.retry_failed) and the rows kept for the others, which the new
// rows' ratios are taken against.
struct PendingPoint {
  const Point* point = nullptr;
  std::vector<bool> compute;  // per variant
  std::vector<Json> kept;     // per variant; null where computed
};

// This shard's points with work left, in plan order.
std::vector<PendingPoint> pending_points(const Config& config, const Plan& plan,
                                         const RunOptions& options, std::size_t shard_count,
                                         const Json& inputs_hashes, RunReport& report) {
  StoredResults stored = load_results(options.dir, config, plan);
  for (std::size_t i = 0; i < stored.conflicting_rows.size() && i < 10; ++i)
    log::warn("{}/{}: contradictory row dropped", options.dir.string(), stored.conflicting_rows[i]);
  if (stored.conflicting_rows.size() > 10)
    log::warn("... and {} more contradictory row(s)", stored.conflicting_rows.size() - 10);
  if (stored.stale_rows)
    log::info("{} row(s) of edited variants are recomputed", stored.stale_rows);
  // Rows measured on other contents of an inputs file are never resumed as these.
  for (const auto& [path, hash] : inputs_hashes.items())
    if (stored.inputs_hashes.contains(path) &&
        stored.inputs_hashes[path].get<std::string>() != hash.get<std::string>())
      throw OutputDirError("inputs file " + path + " has content hash " + hash.get<std::string>() +
                           " now, but the rows in " + options.dir.string() +
                           " were measured with content hash " +
                           stored.inputs_hashes[path].get<std::string>() +
                           ": the file changed. Put the original back, or start over with "
                           "--force (or another -o folder)");
  // Every stored row by point, one slot per variant (complete points' rows, then partial ones).
  std::map<std::string, std::vector<Json>> slots = std::move(stored.partial);
  std::map<std::string, std::size_t> variant_index;
  for (std::size_t v = 0; v < config.variants.size(); ++v)
    variant_index[config.variants[v].name] = v;
  for (Json& row : stored.rows) {
    // Both looked up before the row is moved: the assignment's right side is evaluated first.
    const std::size_t v = variant_index.at(row["variant"].get<std::string>());
    std::vector<Json>& s = slots[row["point_id"].get<std::string>()];
    s.resize(config.variants.size());
    s[v] = std::move(row);
  }
  std::vector<PendingPoint> pending;
  const std::vector<std::uint32_t> shards = assign_shards(plan, shard_count);
  for (const Point& p : plan.points) {
    if (shards[p.index] != options.shard_index) continue;
    ++report.shard_points;
    PendingPoint todo{&p, std::vector<bool>(config.variants.size(), true),
                      std::vector<Json>(config.variants.size())};
    const auto found = slots.find(p.id);
    bool any_failed = false;
    if (found != slots.end()) {
      for (std::size_t v = 0; v < config.variants.size(); ++v) {
        const Json& row = found->second[v];
        if (row.is_null()) continue;
        const bool failed = row_status(row).kind == StatusKind::failed;
        any_failed = any_failed || failed;
        if (failed && options.retry_failed) continue;
        todo.compute[v] = false;
        todo.kept[v] = row;
      }
    }
    if (std::none_of(todo.compute.begin(), todo.compute.end(), [](bool c) { return c; })) {
      ++report.already_done;
      continue;
    }
    if (stored.done_points.count(p.id) && any_failed) ++report.retried;
    pending.push_back(std::move(todo));
  }
  if (report.already_done)
    log::info("resuming: {} of {} points already in {}", report.already_done, report.shard_points,
              options.dir.string());
  if (report.retried)
    log::info("retrying {} point(s) with a failed row (--no-retry keeps them)", report.retried);
  return pending;
}

// The folder's identity when the run opened it. Rows go to an open descriptor: in a folder
// deleted or replaced mid-run they would land in an unlinked file, and the tables would be made
// from whatever the new folder holds, so that is an error, never a clean exit.
struct FolderIdentity {
  dev_t device = 0;
  ino_t inode = 0;
};

FolderIdentity folder_identity(const std::filesystem::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw std::runtime_error("the output folder " + dir.string() + " is gone");
  return {st.st_dev, st.st_ino};
}

void check_folder(const std::filesystem::path& dir, const FolderIdentity& expected) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == expected.device &&
      st.st_ino == expected.inode)
    return;
  throw std::runtime_error(
      "the output folder " + dir.string() +
      " was deleted or replaced while this run wrote into it; the rows written since are lost. "
      "Rerun the same command to compute them again (into a folder nothing else removes)");
}

// External commands' templates, checked before anything is written: one that quotes a
// placeholder would fail every row of the sweep.
void check_external_templates(const Config& config) {
  for (std::size_t v = 0; v < config.variants.size(); ++v)
    // A worker's command has no placeholders (config validation refuses them): nothing of a
    // point is ever pasted into it, so there is nothing to check, and its JSON-looking text
    // must not be mistaken for placeholders.
    if (config.variants[v].external && !config.variants[v].external->worker)
      if (const auto problem = external_template_problem(config.variants[v].external->command))
        throw ConfigError("variants[" + std::to_string(v) + "].external", *problem);
}

Json run_record(const Config& config, const RunOptions& options, std::size_t shard_count,
                std::size_t pending, const Json& inputs_hashes) {
  Json record;
  record["record"] = "run";
  record["provenance"] = io::to_json(options.provenance);
  record["shard"] = std::to_string(options.shard_index) + "/" + std::to_string(shard_count);
  record["config_hash"] = config.hash;
  record["points_hash"] = config.points_hash;
  record["config_text"] = options.config_text;
  record["pending_points"] = pending;
  if (!inputs_hashes.empty()) record["inputs_hashes"] = inputs_hashes;
  return record;
}

// Points grouped by input set, each set in the plan order of its first point.
std::vector<std::vector<const PendingPoint*>> input_sets(const std::vector<PendingPoint>& pending) {
  std::vector<std::vector<const PendingPoint*>> groups;
  std::unordered_map<std::string, std::size_t> group_of;
  for (const PendingPoint& p : pending) {
    auto [it, inserted] = group_of.emplace(p.point->input_key, groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(&p);
  }
  return groups;
}

// The variants of one point that `todo` computes, and the output references their ref_* columns
// compare with; nullopt when a stop was requested before the last one finished (the point in
// flight is then not written, and a rerun redoes it).
std::optional<std::vector<Evaluated>> evaluate_point(const Config& config, const PendingPoint& todo,
                                                     InputSetCache& cache,
                                                     const RunOptions& options) {
  const Point& point = *todo.point;
  auto stop = [&] { return options.stop_requested && options.stop_requested(); };
  std::vector<bool> needed = todo.compute;
  for (std::size_t v = 0; v < config.variants.size(); ++v)
    if (todo.compute[v] && config.output_reference(v) >= 0)
      needed[static_cast<std::size_t>(config.output_reference(v))] = true;
  std::vector<Evaluated> results(config.variants.size());
  for (std::size_t v = 0; v < config.variants.size(); ++v) {
    if (!needed[v]) continue;
    if (stop()) return std::nullopt;
    const Variant& variant = config.variants[v];
    if (tile_independent(variant)) {
      auto it = cache.shared.find(v);
      if (it == cache.shared.end())
        it =
            cache.shared.emplace(v, evaluate(variant, point, cache, options, config.backend)).first;
      results[v] = it->second;
    } else {
      results[v] = evaluate(variant, point, cache, options, config.backend);
    }
    // An external command killed because of the signal must not land as a failed row.
    if (variant.external && stop()) return std::nullopt;
    if (!results[v].outcome.status.is_ok())
      log::debug("{} at {}: {}", variant.name, point.describe(), results[v].outcome.status.text());
  }
  return results;
}

void dump_point(const Config& config, const Point& point, const InputSetCache& cache,
                const std::vector<Evaluated>& results, const RunOptions& options) {
  DumpWriter dump;
  dump.dir = options.dir / "dump" / point.id;
  dump.owned_from = options.dir;
  dump.base = point_metadata(point, io::to_json(options.provenance));
  for (const auto& [format, ref] : cache.references.computed()) {
    dump.inputs(ref.inputs, format);
    dump.golden(ref.golden.output.o, format);
  }
  for (std::size_t v = 0; v < config.variants.size(); ++v)
    if (!results[v].outcome.output.o.data.empty())
      dump.variant(config.variants[v], results[v].outcome.status, results[v].outcome.output.o);
}

// The rows `todo` computes, with their ratios taken against the variants' rows at this point
// (computed now or kept), each carrying its variant's key.
std::vector<Json> point_rows(const Config& config, const PendingPoint& todo,
                             const std::vector<Evaluated>& results) {
  std::vector<Json> rows(config.variants.size());
  for (std::size_t v = 0; v < config.variants.size(); ++v) {
    if (!todo.compute[v]) {
      rows[v] = todo.kept[v];
      continue;
    }
    std::optional<ReferenceComparison> ref;
    const int r = config.output_reference(v);
    if (r >= 0)
      ref = compare_to_reference(config.variants[v], results[v],
                                 config.variants[static_cast<std::size_t>(r)],
                                 results[static_cast<std::size_t>(r)]);
    const RanOn where = ran_on(config.backend, config.variants[v], todo.point->axes.from_file());
    rows[v] = make_row(*todo.point, config.variants[v], results[v].outcome,
                       results[v].deviation ? &*results[v].deviation : nullptr,
                       ref ? &*ref : nullptr, &where);
  }
  fill_ratios(rows, config);
  std::vector<Json> computed;
  for (std::size_t v = 0; v < config.variants.size(); ++v) {
    if (!todo.compute[v]) continue;
    rows[v]["variant_key"] = config.variant_keys[v];
    computed.push_back(std::move(rows[v]));
  }
  return computed;
}

// Rows of this shard's points now on disk (resumed ones included), by status; then the tables of
// an unsharded run.
void finish(const Config& config, const Plan& plan, const RunOptions& options,
            std::size_t shard_count, RunReport& report) {
  const StoredResults now = load_results(options.dir, config, plan);
  const std::vector<std::uint32_t> shards = assign_shards(plan, shard_count);
  for (const Json& row : now.rows) {
    if (shards[row["point_index"].get<std::size_t>()] != options.shard_index) continue;
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
  if (shard_count != 1) return;
  try {
    write_result_tables(options.dir, config, plan, now, options.provenance);
    report.tables_written = true;
  } catch (const TablesWouldShrink& e) {
    // The rows are safe in the JSONL; the old tables stay as they are (e.g. an interrupted
    // rerun of a folder whose results.jsonl was lost).
    log::warn("tables not rewritten: {}", e.what());
  }
}

}  // namespace

RunReport run_experiment(const Config& config, const Plan& plan, const RunOptions& options) {
  RunReport report;
  check_external_templates(config);
  const std::size_t shard_count = std::max<std::size_t>(options.shard_count, 1);
  // The device, its twins and its memory, before the folder is touched.
  require_cuda_backend(config, plan, options.shard_index, shard_count);
  // Held until the tables are written: one writer per results file, nobody rewriting the folder.
  const OutputLock lock =
      open_results(config, options, shard_file_name(options.shard_index, shard_count), report);
  const FolderIdentity folder = folder_identity(options.dir);
  repair_results(config, plan, options, report);
  const Json inputs_hashes = inputs_content_hashes(config);
  const std::vector<PendingPoint> pending =
      pending_points(config, plan, options, shard_count, inputs_hashes, report);
  io::JsonlAppender out(report.results_file);
  out.append({run_record(config, options, shard_count, pending.size(), inputs_hashes)});

  // External commands' files: private to this shard, removed when it ends (and, left over from
  // a killed run, when the shard starts again).
  const bool any_external = std::any_of(config.variants.begin(), config.variants.end(),
                                        [](const Variant& v) { return v.external.has_value(); });
  const std::filesystem::path work_root =
      options.dir /
      (".external." + std::to_string(options.shard_index) + "-of-" + std::to_string(shard_count));
  if (any_external) std::filesystem::remove_all(work_root);

  std::size_t done = report.already_done;
  if (options.on_progress) options.on_progress(done, report.shard_points);
  for (const auto& group : input_sets(pending)) {
    const Point& first = *group.front()->point;
    InputSetCache cache =
        make_input_set_cache(first, options.threads, work_root / first.input_key, config.backend);
    for (const PendingPoint* todo : group) {
      const Point* point = todo->point;
      const std::optional<std::vector<Evaluated>> results =
          evaluate_point(config, *todo, cache, options);
      if (!results) {
        report.interrupted = true;
        break;
      }
      if (config.dump) dump_point(config, *point, cache, *results, options);
      out.append(point_rows(config, *todo, *results));
      check_folder(options.dir, folder);
      ++report.ran;
      ++done;
      if (options.on_progress) options.on_progress(done, report.shard_points);
    }
    if (any_external) std::filesystem::remove_all(cache.work_dir);
    if (report.interrupted) break;
  }
  out.close();
  check_folder(options.dir, folder);
  if (any_external) std::filesystem::remove_all(work_root);
  finish(config, plan, options, shard_count, report);
  return report;
}

}  // namespace attndev::experiment
