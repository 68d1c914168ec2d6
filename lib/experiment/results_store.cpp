#include "experiment/results_store.hpp"

#include <algorithm>
#include <unordered_map>

#include "io/atomic_file.hpp"
#include "io/json_depth.hpp"
#include "io/jsonl.hpp"

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

// merge and report read manifests too and have no --force-new: name the command that has it.
std::string start_over_hint(const fs::path& dir) {
  return "move the folder away, or start the run over with `attndev run CONFIG -o " + dir.string() +
         " --force-new` (it deletes the folder's results)";
}

Json read_manifest_json(const fs::path& dir) {
  const fs::path path = manifest_path(dir);
  if (!fs::exists(path))
    throw OutputDirError(dir.string() +
                         " has no run.json: it is not an attndev results folder "
                         "(or the run never started)");
  const std::string text = io::read_file(path);
  if (const auto deep = io::json_depth_error(text))
    throw OutputDirError(path.string() + " is " + *deep + ": not a valid attndev manifest; " +
                         start_over_hint(dir));
  Json manifest = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.is_object() || !manifest.contains("config_hash") ||
      !manifest.contains("config") || !manifest["config_hash"].is_string())
    throw OutputDirError(path.string() + " is not a valid attndev manifest; " +
                         start_over_hint(dir));
  return manifest;
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
    if (config.hash != manifest["config_hash"].get<std::string>())
      throw OutputDirError(manifest_path(dir).string() + ": config hash " +
                           manifest["config_hash"].get<std::string>() +
                           " does not match its config (hash " + config.hash +
                           "); the manifest was edited or written by another version");
    return config;
  } catch (const ConfigError& e) {
    throw OutputDirError(manifest_path(dir).string() +
                         ": stored config no longer validates: " + e.what());
  }
}

void prepare_output_dir(const fs::path& dir, const Config& config, bool force_new) {
  const fs::path path = manifest_path(dir);
  if (fs::exists(path)) {
    std::string old_hash = "?", old_name = "?";
    const std::string text = io::read_file(path);
    Json manifest = io::json_depth_error(text)
                        ? Json()
                        : Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (manifest.is_object() && manifest.contains("config_hash") &&
        manifest["config_hash"].is_string()) {
      old_hash = manifest["config_hash"].get<std::string>();
      if (manifest.contains("config_name") && manifest["config_name"].is_string())
        old_name = manifest["config_name"].get<std::string>();
    }
    if (old_hash == config.hash) return;
    if (!force_new)
      throw OutputDirError(dir.string() + " holds results of another config (\"" + old_name +
                           "\", hash " + old_hash + "); this config (\"" + config.name +
                           "\", -a overrides included) has hash " + config.hash +
                           ". Use another -o folder, or --force-new to delete the old results");
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (is_results_jsonl(name) || name == "results.csv" || name == "results.json" ||
          name == "summary.md" || name == "run.json")
        fs::remove(entry.path());
    }
  }
  fs::create_directories(dir);
  Json manifest = {{"schema", "attndev.run"},
                   {"schema_version", kResultsSchemaVersion},
                   {"config_name", config.name},
                   {"config_hash", config.hash},
                   {"config", Json::parse(config.effective.dump())}};
  io::write_file_atomic(path, manifest.dump(2) + "\n");
}

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
    for (const Json& record : contents.records) {
      const std::string kind = record.value("record", "");
      if (kind == "run") {
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
      std::vector<Json>& slots = by_point[p->second];
      slots.resize(config.variants.size());
      if (!slots[v->second].is_null()) {
        ++out.duplicate_rows;
        continue;
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

std::size_t repair_results_file(const fs::path& file, const Config& config, const Plan& plan) {
  if (!fs::exists(file)) return 0;
  const io::JsonlContents contents = io::read_jsonl(file);
  const StoredResults kept =
      load_results(file.parent_path(), config, plan, file.filename().string());
  const std::size_t total =
      contents.records.size() + contents.bad_lines + (contents.torn_tail ? 1 : 0);
  const std::size_t keep = kept.rows.size() + kept.runs.size();
  if (keep == total) return 0;
  std::string text;
  for (const Json& r : kept.runs) text += io::jsonl_line(r) + "\n";
  for (const Json& r : kept.rows) text += io::jsonl_line(r) + "\n";
  io::write_file_atomic(file, text);
  return total - keep;
}

}  // namespace attndev::experiment
