#include "train/study.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "experiment/policy_json.hpp"
#include "io/atomic_file.hpp"
#include "io/csv.hpp"
#include "io/safetensors.hpp"
#include "metrics/wasserstein.hpp"

namespace attndev::train {

std::vector<WeightDistance> compare_weights(const std::vector<io::NamedTensor>& a,
                                            const std::vector<io::NamedTensor>& b) {
  std::map<std::string, const io::NamedTensor*> by_name;
  for (const io::NamedTensor& t : b) by_name[t.name] = &t;
  if (a.size() != b.size())
    throw std::invalid_argument("compare_weights: " + std::to_string(a.size()) + " vs " +
                                std::to_string(b.size()) + " tensors");
  std::vector<WeightDistance> rows;
  std::vector<double> all_a, all_b;
  double all_max = 0;
  for (const io::NamedTensor& ta : a) {
    const auto it = by_name.find(ta.name);
    if (it == by_name.end() || it->second->shape != ta.shape)
      throw std::invalid_argument("compare_weights: tensor " + ta.name +
                                  " is missing or has another shape on the other side");
    const io::NamedTensor& tb = *it->second;
    const metrics::TensorDistance d =
        metrics::tensor_distance(ta.values, tb.values, /*same_shape=*/true);
    rows.push_back({ta.name, d.w1, d.max_abs, d.count_a});
    all_a.insert(all_a.end(), ta.values.begin(), ta.values.end());
    all_b.insert(all_b.end(), tb.values.begin(), tb.values.end());
    all_max = std::isnan(d.max_abs) || std::isnan(all_max) ? NAN : std::max(all_max, d.max_abs);
  }
  rows.push_back({"all", metrics::wasserstein1(all_a, all_b), all_max,
                  static_cast<std::int64_t>(all_a.size())});
  return rows;
}

namespace {

std::string fmt(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

nlohmann::json run_json(const TrainConfig& cfg, const RunResult& r, const Corpus& corpus) {
  nlohmann::json j;
  j["config"] = cfg.source;
  j["name"] = cfg.name;
  j["precision"] = precision_name(cfg.precision);
  j["algorithm"] = attention::algorithm_name(cfg.algorithm);
  j["policy"] = experiment::policy_stages_json(cfg.policy);
  j["corpus"] = corpus.source;
  j["corpus_chars"] = corpus.tokens.size();
  j["steps"] = cfg.steps;
  j["snapshot_steps"] = r.snapshot_steps;
  j["skipped_steps"] = r.skipped_steps;
  j["first_loss"] = r.log.empty() ? 0.0 : r.log.front().loss;
  j["final_loss"] = r.log.empty() ? 0.0 : r.log.back().loss;
  j["seconds"] = r.seconds;
  return j;
}

// Mean loss of the last `k` steps (less noisy than one batch).
double tail_loss(const RunResult& r, std::size_t k) {
  if (r.log.empty()) return NAN;
  k = std::min(k, r.log.size());
  double s = 0;
  for (std::size_t i = r.log.size() - k; i < r.log.size(); ++i) s += r.log[i].loss;
  return s / double(k);
}

}  // namespace

RunResult run_single(const TrainConfig& cfg, const Corpus& corpus, const StudyOptions& options,
                     const std::filesystem::path& out_dir) {
  RunOptions ro;
  ro.out_dir = out_dir;
  ro.threads = options.threads;
  if (options.progress) ro.progress = [&](const StepLog& l) { options.progress(cfg.name, l); };
  RunResult r = train_run(cfg, corpus, ro);
  io::write_file_atomic(out_dir / "run.json", run_json(cfg, r, corpus).dump(2) + "\n");
  return r;
}

StudyResult run_study(const StudyConfig& study, const StudyOptions& options) {
  StudyResult result;
  std::map<std::string, RunResult> runs;
  std::map<std::string, const TrainConfig*> configs;
  std::map<std::string, Corpus> corpora;  // by text path: load each once
  for (const TrainConfig& cfg : study.runs) {
    const std::string text = options.text.empty() ? cfg.text : options.text;
    if (!corpora.count(text)) corpora.emplace(text, load_corpus(text));
  }
  for (const TrainConfig& cfg : study.runs) {
    const std::string text = options.text.empty() ? cfg.text : options.text;
    spdlog::info("study {}: training run {} ({}, {} attention, policy {}, seed {})", study.name,
                 cfg.name, precision_name(cfg.precision), attention::algorithm_name(cfg.algorithm),
                 experiment::policy_label(cfg.policy), cfg.seed);
    runs[cfg.name] = run_single(cfg, corpora.at(text), options, options.out_dir / cfg.name);
    configs[cfg.name] = &cfg;
    result.files.push_back(cfg.name + "/loss.csv");
    result.files.push_back(cfg.name + "/run.json");
  }

  // Distances at every step that both runs of a pair snapshotted, read back from the files.
  std::string csv =
      io::csv_record({"step", "pair", "kind", "run_a", "run_b", "tensor", "w1", "max_abs_diff"});
  std::map<std::string, std::map<int, std::vector<WeightDistance>>>
      by_pair;  // pair -> step -> rows
  for (const PairSpec& p : study.pairs) {
    const RunResult& ra = runs.at(p.a);
    const RunResult& rb = runs.at(p.b);
    const std::set<int> steps_b(rb.snapshot_steps.begin(), rb.snapshot_steps.end());
    for (int step : ra.snapshot_steps) {
      if (!steps_b.count(step)) continue;
      const auto ta =
          io::read_safetensors(options.out_dir / p.a / "snapshots" / snapshot_name(step));
      const auto tb =
          io::read_safetensors(options.out_dir / p.b / "snapshots" / snapshot_name(step));
      std::vector<WeightDistance> rows = compare_weights(ta.tensors, tb.tensors);
      for (const WeightDistance& d : rows) {
        csv += io::csv_record(
            {std::to_string(step), p.name, p.kind, p.a, p.b, d.tensor, fmt(d.w1), fmt(d.max_abs)});
        ++result.compared_rows;
      }
      by_pair[p.name][step] = std::move(rows);
    }
  }
  io::write_file_atomic(options.out_dir / "weights_comparison.csv", csv);
  result.files.push_back("weights_comparison.csv");

  std::string ratios =
      io::csv_record({"step", "ratio_name", "tensor", "numerator_w1", "denominator_w1", "ratio"});
  std::ostringstream md;
  md << "# Weight-deviation study: " << study.name << "\n\n";
  if (!study.description.empty()) md << study.description << "\n\n";
  md << "Command: `" << options.command_line << "`\n\n## Runs\n\n"
     << "| run | precision | attention | policy | seed | steps | first loss | final loss (mean of "
        "last 10) | skipped | seconds |\n"
     << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const TrainConfig& cfg : study.runs) {
    const RunResult& r = runs.at(cfg.name);
    md << "| " << cfg.name << " | " << precision_name(cfg.precision) << " | "
       << attention::algorithm_name(cfg.algorithm) << " | " << experiment::policy_label(cfg.policy)
       << " | " << cfg.seed << " | " << cfg.steps << " | " << fmt(r.log.front().loss) << " | "
       << fmt(tail_loss(r, 10)) << " | " << r.skipped_steps << " | " << fmt(r.seconds) << " |\n";
  }
  md << "\n## W1 of all weights pooled, per snapshot step\n\n| step |";
  for (const PairSpec& p : study.pairs) md << " " << p.name << " (" << p.kind << ") |";
  for (const RatioSpec& r : study.ratios) md << " " << r.name << " |";
  md << "\n|---|";
  for (std::size_t i = 0; i < study.pairs.size() + study.ratios.size(); ++i) md << "---|";
  md << "\n";
  std::set<int> all_steps;
  for (const auto& [name, steps] : by_pair)
    for (const auto& [step, rows] : steps) all_steps.insert(step);
  for (int step : all_steps) {
    md << "| " << step << " |";
    for (const PairSpec& p : study.pairs) {
      const auto& steps = by_pair[p.name];
      md << " " << (steps.count(step) ? fmt(steps.at(step).back().w1) : "-") << " |";
    }
    for (const RatioSpec& r : study.ratios) {
      const auto& num = by_pair[r.numerator];
      const auto& den = by_pair[r.denominator];
      if (!num.count(step) || !den.count(step)) {
        md << " - |";
        continue;
      }
      // Per tensor, and pooled ("all", last row). 0/0 at step 0 (identical inits) is reported as
      // nan.
      for (std::size_t t = 0; t < num.at(step).size(); ++t) {
        const double n = num.at(step)[t].w1, d = den.at(step)[t].w1;
        const double ratio = d == 0.0 ? (n == 0.0 ? NAN : INFINITY) : n / d;
        ratios += io::csv_record(
            {std::to_string(step), r.name, num.at(step)[t].tensor, fmt(n), fmt(d), fmt(ratio)});
      }
      const double n = num.at(step).back().w1, d = den.at(step).back().w1;
      md << " " << fmt(d == 0.0 ? (n == 0.0 ? NAN : INFINITY) : n / d) << " |";
    }
    md << "\n";
  }
  if (!all_steps.empty()) {
    const int last = *all_steps.rbegin();
    md << "\n## Per tensor at step " << last << ": W1 / max|diff|\n\n| tensor |";
    for (const PairSpec& p : study.pairs) md << " " << p.name << " |";
    md << "\n|---|";
    for (std::size_t i = 0; i < study.pairs.size(); ++i) md << "---|";
    md << "\n";
    const auto& first = by_pair[study.pairs.front().name];
    if (first.count(last)) {
      for (std::size_t t = 0; t < first.at(last).size(); ++t) {
        md << "| " << first.at(last)[t].tensor << " |";
        for (const PairSpec& p : study.pairs) {
          const auto& steps = by_pair[p.name];
          if (!steps.count(last)) {
            md << " - |";
            continue;
          }
          md << " " << fmt(steps.at(last)[t].w1) << " / " << fmt(steps.at(last)[t].max_abs) << " |";
        }
        md << "\n";
      }
    }
  }
  io::write_file_atomic(options.out_dir / "ratios.csv", ratios);
  io::write_file_atomic(options.out_dir / "summary.md", md.str());
  result.files.push_back("ratios.csv");
  result.files.push_back("summary.md");
  return result;
}

}  // namespace attndev::train
