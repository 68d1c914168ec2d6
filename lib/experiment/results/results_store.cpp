#include "experiment/results/results_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "experiment/results/result_row.hpp"
#include "experiment/run/status.hpp"
#include "io/atomic_file.hpp"
#include "io/json_strict.hpp"
#include "io/jsonl.hpp"
#include "io/safe_open.hpp"
#include "experiment/spec/stable_hash.hpp"

namespace attndev::experiment {

namespace fs = std::filesystem;
using io::Json;

fs::path manifest_path(const fs::path& dir) {
  return dir / "run.json";
}

std::string shard_file_name(std::size_t index, std::size_t count) {
  if (count <= 1) return "results.jsonl";
  return "results.shard-" + std::to_string(index) + "-of-" + std::to_string(count) + ".jsonl";
}

bool parse_shard_file_name(const std::string& name, std::size_t& index, std::size_t& count) {
  unsigned long i = 0, n = 0;
  char tail[8] = {};
  if (std::sscanf(name.c_str(), "results.shard-%lu-of-%lu.%7s", &i, &n, tail) != 3) return false;
  if (std::string(tail) != "jsonl" || n == 0 || i >= n) return false;
  if (name != shard_file_name(i, n)) return false;
  index = i;
  count = n;
  return true;
}

namespace {

// merge and report read manifests too and have no --force: name the command that has it.
std::string start_over_hint(const fs::path& dir) {
  return "move the folder away, or start the run over with `attndev run CONFIG -o " + dir.string() +
         " --force` (it deletes the folder's results)";
}

Json read_manifest_json(const fs::path& dir) {
  const fs::path path = manifest_path(dir);
  std::error_code ec;
  if (fs::symlink_status(path, ec).type() == fs::file_type::not_found)
    throw OutputDirError(dir.string() +
                         " has no run.json: it is not an attndev results folder "
                         "(or the run never started)");
  std::string text;
  try {
    text = io::read_regular_file(path);
  } catch (const std::runtime_error& e) {
    throw OutputDirError(e.what());
  }
  if (const auto deep = io::json_text_error(text))
    throw OutputDirError(path.string() + " is " + *deep + ": not a valid attndev manifest; " +
                         start_over_hint(dir));
  Json manifest = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.is_object() || !manifest.contains("config_hash") ||
      !manifest.contains("config") || !manifest["config_hash"].is_string())
    throw OutputDirError(path.string() + " is not a valid attndev manifest; " +
                         start_over_hint(dir));
  return manifest;
}

// Said when a manifest's hash is the one an older attndev computed: the folder is not refused
// for nothing, and the user learns why and what to do.
std::string legacy_note(const Json& manifest, const fs::path& dir) {
  if (!manifest.is_object() || !manifest.contains("config") || !manifest.contains("config_hash") ||
      !manifest["config_hash"].is_string() ||
      legacy_config_hash(manifest["config"]) != manifest["config_hash"].get<std::string>())
    return {};
  return ". It was written by an older attndev, whose config hash also covered keys that cannot "
         "change a row (description, metrics, dump); its rows are not taken as this config's "
         "without a check. Rerun into a new folder, or recompute here with `attndev run CONFIG "
         "-o " +
         dir.string() + " --force` (deletes its results); the older attndev still reads it";
}

bool is_results_jsonl(const std::string& name) {
  std::size_t i = 0, n = 0;
  return name == "results.jsonl" || parse_shard_file_name(name, i, n);
}

}  // namespace

Config read_manifest_config(const fs::path& dir) {
  const Json manifest = read_manifest_json(dir);
  try {
    Config config = parse_config(manifest["config"].dump());
    if (config.hash != manifest["config_hash"].get<std::string>()) {
      const std::string legacy = legacy_note(manifest, dir);
      throw OutputDirError(
          manifest_path(dir).string() + ": config hash " +
          manifest["config_hash"].get<std::string>() + " does not match its config (hash " +
          config.hash + ")" +
          (legacy.empty() ? "; the manifest was edited or written by another version" : legacy));
    }
    return config;
  } catch (const ConfigError& e) {
    throw OutputDirError(manifest_path(dir).string() +
                         ": stored config no longer validates: " + e.what());
  }
}

namespace {

fs::path folder_lock_path(const fs::path& dir) {
  return dir / ".attndev.lock";
}

fs::path file_lock_path(const fs::path& dir, const std::string& results_file) {
  return dir / ("." + results_file + ".lock");
}

// Creates DIR; an OutputDirError says why it cannot be (a file in the way, no permission).
void create_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw OutputDirError("cannot create the output folder " + dir.string() + ": " +
                         (ec ? ec.message() : std::string("a file of that name is in the way")) +
                         "; choose another -o folder");
}

std::optional<io::FileLock> try_lock(const fs::path& path, io::FileLock::Mode mode) {
  try {
    return io::FileLock::try_lock(path, mode);
  } catch (const std::runtime_error& e) {
    throw OutputDirError(std::string(e.what()) + "; choose another -o folder");
  }
}

// Who writes results files in DIR now (their lock files name them).
std::string writers_of(const fs::path& dir) {
  std::string out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 6 && name.front() == '.' && name.ends_with(".jsonl.lock") &&
        io::exclusively_locked(entry.path()))
      out += (out.empty() ? "" : "; ") + io::lock_holder(entry.path());
  }
  return out.empty() ? io::lock_holder(folder_lock_path(dir)) : out;
}

}  // namespace

OutputLock lock_results_file(const fs::path& dir, const std::string& results_file, bool force_new,
                             const std::string& what) {
  create_dir(dir);
  OutputLock lock;
  lock.dir_ = dir;
  const fs::path folder = folder_lock_path(dir);
  lock.folder_ =
      try_lock(folder, force_new ? io::FileLock::Mode::exclusive : io::FileLock::Mode::shared);
  if (!lock.folder_)
    throw OutputDirError(
        dir.string() + " is in use by another attndev process (" +
        (force_new ? writers_of(dir) : io::lock_holder(folder)) + "); " +
        (force_new ? "--force would delete the rows it is writing. " : "it rewrites the folder. ") +
        "Wait for it to finish, or use another -o folder");
  if (force_new) lock.folder_->write_owner(what + " (--force)");
  const fs::path file = file_lock_path(dir, results_file);
  lock.file_ = try_lock(file, io::FileLock::Mode::exclusive);
  if (!lock.file_)
    throw OutputDirError((dir / results_file).string() +
                         " is being written by another attndev run (" + io::lock_holder(file) +
                         "); a second writer would run its points again and write every row "
                         "twice. Wait for it to finish, or use another -o folder");
  lock.file_->write_owner(what);
  return lock;
}

void OutputLock::share_folder() {
  if (folder_ && !folder_->convert(io::FileLock::Mode::shared))
    throw OutputDirError(dir_.string() + " was taken by another attndev process (" +
                         io::lock_holder(folder_lock_path(dir_)) +
                         ") while this run prepared it; rerun the command");
}

OutputLock lock_folder(const fs::path& dir, const std::string& what) {
  OutputLock lock;
  lock.dir_ = dir;
  if (!fs::is_directory(dir)) return lock;  // nothing to protect; the caller reports the folder
  lock.folder_ = try_lock(folder_lock_path(dir), io::FileLock::Mode::exclusive);
  if (!lock.folder_)
    throw OutputDirError(dir.string() + " is being written by another attndev process (" +
                         writers_of(dir) +
                         "); its tables would be replaced under it. Wait for it to finish");
  lock.folder_->write_owner(what);
  // Nobody else writes the folder now: every temporary file in it is a killed writer's.
  io::remove_stale_temporaries(dir);
  return lock;
}

void prepare_output_dir(const fs::path& dir, const Config& config, bool force_new) {
  const fs::path path = manifest_path(dir);
  std::error_code ec;
  if (fs::symlink_status(path, ec).type() != fs::file_type::not_found) {
    std::string old_hash = "?", old_name = "?";
    std::string text;
    try {
      text = io::read_regular_file(path);
    } catch (const std::runtime_error& e) {
      throw OutputDirError(e.what());
    }
    Json manifest = io::json_text_error(text)
                        ? Json()
                        : Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (manifest.is_object() && manifest.contains("config_hash") &&
        manifest["config_hash"].is_string()) {
      old_hash = manifest["config_hash"].get<std::string>();
      if (manifest.contains("config_name") && manifest["config_name"].is_string())
        old_name = manifest["config_name"].get<std::string>();
    }
    if (old_hash == config.hash) {
      // Same rows, other presentation keys (metrics, description): the manifest takes the new
      // ones, so the tables show what the config now asks for.
      if (manifest.contains("config") && manifest["config"] != Json(config.effective)) {
        manifest["config"] = config.effective;
        io::write_regular_file_atomic(path, manifest.dump(2) + "\n");
      }
      return;
    }
    if (!force_new)
      throw OutputDirError(dir.string() + " holds results of another config (\"" + old_name +
                           "\", hash " + old_hash + "); this config (\"" + config.name +
                           "\", -a overrides included) has hash " + config.hash +
                           ". Use another -o folder, or --force to delete the old results" +
                           legacy_note(manifest, dir));
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (is_results_jsonl(name) || name == "results.csv" || name == "results.json" ||
          name == "summary.md" || name == "run.json")
        fs::remove(entry.path());
    }
  }
  create_dir(dir);
  Json manifest = {{"schema", "attndev.run"},
                   {"schema_version", kResultsSchemaVersion},
                   {"config_name", config.name},
                   {"config_hash", config.hash},
                   {"config", Json(config.effective)}};
  // Created only if still absent: a writer of another config that created it in the meantime
  // (both found the folder empty) is then compared against like any existing manifest.
  if (!io::write_file_exclusive(path, manifest.dump(2) + "\n"))
    prepare_output_dir(dir, config, /*force_new=*/false);
}

namespace {

// Why a row of the plan cannot be used; empty when it can. Checks what the tables, the resume and
// compare read from a row, with the types the runner writes, so that a row edited by hand,
// written by a broken tool or damaged on disk is rerun instead of being reported as measured.
std::optional<std::string> row_problem(const Json& row, const Point& point) {
  const auto index = row.find("point_index");
  if (index == row.end() || !index->is_number_unsigned() ||
      index->get<std::size_t>() != point.index)
    return "point_index " + (index == row.end() ? std::string("missing") : index->dump()) +
           " contradicts its point_id (index " + std::to_string(point.index) + ")";
  const auto seed = row.find("seed");
  if (seed == row.end() || !seed->is_number_unsigned() || seed->get<std::uint64_t>() != point.seed)
    return "seed " + (seed == row.end() ? std::string("missing") : seed->dump()) +
           " contradicts its point_id (seed " + std::to_string(point.seed) + ")";
  const auto status = row.find("status");
  Status parsed;
  if (status == row.end() || !status->is_string() ||
      !parse_status(status->get<std::string>(), parsed))
    return "status " + (status == row.end() ? std::string("missing") : status->dump()) +
           " is not ok, skipped: <reason> or failed: <reason>";
  if (!parsed.is_ok()) return std::nullopt;
  for (std::string_view metric : kDeviationMetrics) {
    const auto m = row.find(std::string(metric));
    double value = 0;
    if (m == row.end()) return "status ok but no " + std::string(metric);
    if (!io::json_to_double(*m, value))
      return "status ok but " + std::string(metric) + " is " + m->dump() + ", not a number";
  }
  return std::nullopt;
}

}  // namespace

std::string file_content_hash(const fs::path& path) {
  const int fd = io::open_regular_file(path, O_RDONLY);
  std::uint64_t h = kFnv1a64Offset;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      throw std::runtime_error("cannot read " + path.string() + ": " + std::strerror(saved));
    }
    if (n == 0) break;
    h = fnv1a64(std::string_view(buffer, static_cast<std::size_t>(n)), h);
  }
  ::close(fd);
  return hex16(splitmix64_finalize(h));
}

Json inputs_content_hashes(const Config& config) {
  Json out = Json::object();
  for (const AxisValue& value : config.axis("inputs").values)
    if (const auto* file = std::get_if<InputsFile>(&value); file && !file->path.empty())
      out[file->path] = file_content_hash(file->path);
  return out;
}

namespace {

// A run record of another config (a shard run with another policy, rows left after run.json was
// deleted), or one whose inputs files held other contents than an earlier record's, is refused:
// mixing them would report rows of two experiments as one.
void check_run_record(const Json& record, const Config& config, const fs::path& file,
                      std::size_t line, Json& inputs_hashes) {
  const std::string where = file.string() + ":" + std::to_string(line);
  const auto hash = record.find("config_hash");
  if (hash != record.end() && hash->is_string() && hash->get<std::string>() != config.hash)
    throw OutputDirError(where + ": rows written for config hash " + hash->get<std::string>() +
                         ", but the folder's config has hash " + config.hash +
                         "; they belong to another config and are not mixed in. Move the file "
                         "away, or start over with `attndev run CONFIG -o " +
                         file.parent_path().string() + " --force`");
  const auto inputs = record.find("inputs_hashes");
  if (inputs == record.end() || !inputs->is_object()) return;
  for (const auto& [path, content] : inputs->items()) {
    if (!content.is_string()) continue;
    if (!inputs_hashes.contains(path)) {
      inputs_hashes[path] = content;
    } else if (inputs_hashes[path].get<std::string>() != content.get<std::string>()) {
      throw OutputDirError(where + ": inputs file " + path + " had content hash " +
                           content.get<std::string>() + " for these rows but " +
                           inputs_hashes[path].get<std::string>() +
                           " for earlier ones: the file changed between runs or shards. Put "
                           "the original file back, or start over with --force");
    }
  }
}

}  // namespace

StoredResults load_results(const fs::path& dir, const Config& config, const Plan& plan,
                           const std::string& only_file) {
  StoredResults out;
  std::vector<std::string> names;
  if (!only_file.empty()) {
    names.push_back(only_file);
  } else if (fs::is_directory(dir)) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (is_results_jsonl(name)) names.push_back(name);
    }
    // results.jsonl first (a merged file is the most complete), then shards in index order.
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
      std::size_t ai = 0, an = 0, bi = 0, bn = 0;
      const bool as = parse_shard_file_name(a, ai, an), bs = parse_shard_file_name(b, bi, bn);
      if (as != bs) return !as;
      return std::tie(an, ai) < std::tie(bn, bi);
    });
  }
  std::unordered_map<std::string, std::size_t> point_index;
  for (const Point& p : plan.points) point_index[p.id] = p.index;
  std::unordered_map<std::string, std::size_t> variant_index;
  for (std::size_t v = 0; v < config.variants.size(); ++v)
    variant_index[config.variants[v].name] = v;

  // (point index) -> one slot per variant
  std::unordered_map<std::size_t, std::vector<Json>> by_point;
  for (const std::string& name : names) {
    const io::JsonlContents contents = io::read_jsonl(dir / name);
    out.files.push_back(name);
    out.torn_lines += contents.bad_lines + (contents.torn_tail ? 1 : 0);
    for (std::size_t line : contents.bad_line_numbers)
      out.malformed_rows.push_back(name + ":" + std::to_string(line) +
                                   ": not a JSON object (a damaged or hand-edited line)");
    for (std::size_t r = 0; r < contents.records.size(); ++r) {
      const Json& record = contents.records[r];
      const std::string kind = record.value("record", "");
      if (kind == "run") {
        check_run_record(record, config, dir / name, contents.line_numbers[r], out.inputs_hashes);
        out.runs.push_back(record);
        continue;
      }
      if (kind != "row" || !record.contains("point_id") || !record.contains("variant") ||
          !record["point_id"].is_string() || !record["variant"].is_string()) {
        ++out.torn_lines;
        continue;
      }
      auto p = point_index.find(record["point_id"].get<std::string>());
      auto v = variant_index.find(record["variant"].get<std::string>());
      if (p == point_index.end() || v == variant_index.end()) {
        ++out.foreign_rows;
        continue;
      }
      if (const auto problem = row_problem(record, plan.points[p->second])) {
        out.malformed_rows.push_back(name + ":" + std::to_string(contents.line_numbers[r]) + ": " +
                                     *problem);
        continue;
      }
      std::vector<Json>& slots = by_point[p->second];
      slots.resize(config.variants.size());
      if (!slots[v->second].is_null()) {
        ++out.duplicate_rows;
        // A point with a failed row was run again (run retries it): its later copy supersedes
        // the whole earlier one, so a row never mixes with the ratios of another attempt.
        if (!std::any_of(slots.begin(), slots.end(), [](const Json& j) {
              return !j.is_null() && row_status(j).kind == StatusKind::failed;
            }))
          continue;
        out.duplicate_rows +=
            static_cast<std::size_t>(std::count_if(slots.begin(), slots.end(),
                                                   [](const Json& j) { return !j.is_null(); })) -
            1;
        for (Json& j : slots) j = nullptr;
      }
      slots[v->second] = record;
    }
  }
  std::vector<std::size_t> order;
  for (const auto& [index, slots] : by_point) order.push_back(index);
  std::sort(order.begin(), order.end());
  for (std::size_t index : order) {
    std::vector<Json>& slots = by_point[index];
    if (std::any_of(slots.begin(), slots.end(), [](const Json& j) { return j.is_null(); })) {
      ++out.incomplete_points;
      continue;
    }
    out.done_points.insert(plan.points[index].id);
    for (Json& row : slots) out.rows.push_back(std::move(row));
  }
  return out;
}

RepairReport repair_results_file(const fs::path& file, const Config& config, const Plan& plan) {
  RepairReport report;
  std::error_code ec;
  if (fs::symlink_status(file, ec).type() == fs::file_type::not_found) return report;
  const io::JsonlContents contents = io::read_jsonl(file);
  StoredResults kept = load_results(file.parent_path(), config, plan, file.filename().string());
  const std::size_t total =
      contents.records.size() + contents.bad_lines + (contents.torn_tail ? 1 : 0);
  const std::size_t keep = kept.rows.size() + kept.runs.size();
  report.problems = std::move(kept.malformed_rows);
  if (keep == total) return report;
  std::string text;
  for (const Json& r : kept.runs) text += io::jsonl_line(r) + "\n";
  for (const Json& r : kept.rows) text += io::jsonl_line(r) + "\n";
  io::write_regular_file_atomic(file, text);
  report.dropped = total - keep;
  report.superseded = kept.duplicate_rows;
  return report;
}

}  // namespace attndev::experiment
