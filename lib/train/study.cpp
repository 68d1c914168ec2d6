#include "train/study.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "io/log.hpp"

#include "config/policy_json.hpp"
#include "io/atomic_file.hpp"
#include "io/csv.hpp"
#include "io/json_values.hpp"
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

ReplicateStats replicate_stats(std::span<const double> values) {
  ReplicateStats st;
  double sum = 0;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    st.min = st.n == 0 ? v : std::min(st.min, v);
    st.max = st.n == 0 ? v : std::max(st.max, v);
    sum += v;
    ++st.n;
  }
  if (st.n == 0) return st;
  st.mean = sum / st.n;
  if (st.n >= 2) {
    double ss = 0;  // two-pass: no cancellation between sum of squares and squared sum
    for (double v : values)
      if (std::isfinite(v)) ss += (v - st.mean) * (v - st.mean);
    st.std = std::sqrt(ss / (st.n - 1));
  }
  return st;
}

std::filesystem::path run_folder(const std::filesystem::path& out_dir, int replicates, int r,
                                 const std::string& run) {
  if (replicates <= 1) return out_dir / run;
  return out_dir / ("rep" + std::to_string(r)) / run;
}

namespace {

std::string fmt(double x) {
  return io::format_double(x, "%.6g");
}

std::string short_fmt(double x) {
  return io::format_double(x, "%.3g");
}

// "1.78", or "1.78 ± 0.21 [1.51, 2.02]" over several replicates.
std::string stats_cell(const ReplicateStats& st, bool range) {
  if (st.n == 0) return "nan";
  if (st.n == 1) return short_fmt(st.mean);
  std::string r = short_fmt(st.mean) + " ± " + short_fmt(st.std);
  if (range) r += " [" + short_fmt(st.min) + ", " + short_fmt(st.max) + "]";
  return r;
}

double ratio_of(double n, double d) {
  // 0/0 at step 0 (identical inits) is nan: no answer, not a ratio of 1.
  return d == 0.0 ? (n == 0.0 ? NAN : INFINITY) : n / d;
}

nlohmann::json run_json(const TrainConfig& cfg, const RunResult& r, const Corpus& corpus) {
  nlohmann::json j;
  j["config"] = cfg.source;
  j["name"] = cfg.name;
  j["replicate"] = cfg.replicate;
  j["seed"] = cfg.seed;
  j["data_seed"] = cfg.data_seed;
  j["precision"] = precision_name(cfg.precision);
  j["algorithm"] = attention::algorithm_name(cfg.algorithm);
  j["policy"] = config::policy_stages_json(cfg.policy);
  j["corpus"] = corpus.source;
  j["corpus_chars"] = corpus.tokens.size();
  j["steps"] = cfg.steps;
  j["snapshot_steps"] = r.snapshot_steps;
  j["skipped_steps"] = r.skipped_steps;
  // Non-finite losses as "nan"/"inf" strings (nlohmann would write null).
  j["first_loss"] = io::number_json(r.log.empty() ? 0.0 : r.log.front().loss);
  j["final_loss"] = io::number_json(r.log.empty() ? 0.0 : r.log.back().loss);
  j["status"] = r.failure.empty() ? "ok" : "failed: " + r.failure;
  j["seconds"] = r.seconds;
  if (!cfg.shadows.empty()) {
    nlohmann::json shadows = nlohmann::json::array();
    for (const ShadowSpec& s : cfg.shadows)
      shadows.push_back({{"name", s.name},
                         {"algorithm", attention::algorithm_name(s.algorithm)},
                         {"policy", config::policy_stages_json(s.policy)},
                         {"block_r", s.block_r},
                         {"block_c", s.block_c}});
    j["shadows"] = shadows;
    j["shadow_steps"] = cfg.shadow_steps;
    j["shadow_seconds"] = r.shadow_seconds;
  }
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

std::string read_text_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

Corpus load_run_corpus(const TrainConfig& cfg, const StudyOptions& options) {
  Corpus corpus = !options.text.empty()     ? load_corpus(options.text)
                  : !options.corpus.empty() ? load_corpus("", options.corpus)
                                            : load_corpus(cfg.text, cfg.corpus);
  // A batch draws context + 1 consecutive characters at a random start: a shorter text is bad
  // input, found here before any output folder exists (train_run checks it again).
  const std::size_t need = static_cast<std::size_t>(cfg.model.context) + 2;
  if (corpus.tokens.size() < need)
    throw CorpusError("corpus " + corpus.source + " has " + std::to_string(corpus.tokens.size()) +
                      " characters; run " + cfg.name + " needs at least model.context + 2 = " +
                      std::to_string(need) + ": give a longer text or a smaller model.context");
  return corpus;
}

RunResult run_single(const TrainConfig& cfg, const Corpus& corpus, const StudyOptions& options,
                     const std::filesystem::path& out_dir) {
  RunOptions ro;
  ro.out_dir = out_dir;
  ro.threads = options.threads;
  ro.capture_steps = options.capture_steps;
  if (options.progress) ro.progress = [&](const StepLog& l) { options.progress(cfg.name, l); };
  RunResult r = train_run(cfg, corpus, ro);
  io::write_file_atomic(out_dir / "run.json", run_json(cfg, r, corpus).dump(2) + "\n");
  if (!cfg.shadows.empty())
    io::write_file_atomic(out_dir / "in_model.md",
                          "# In-model deviation: " + cfg.name +
                              "\n\nDeviation of each attention variant from the FP64 golden on "
                              "the Q, K, V of every layer at the shadow steps (all heads; "
                              "per head in in_model.csv).\n\n" +
                              in_model_markdown(r.in_model));
  if (!r.failure.empty())
    throw TrainingFailed("run " + cfg.name + ": " + r.failure + " (files in " + out_dir.string() +
                         ")");
  return r;
}

namespace {

// A study's trained runs: runs[r][name] and configs[r][name] per replicate r.
struct StudyRuns {
  std::vector<std::map<std::string, RunResult>> runs;
  std::vector<std::map<std::string, TrainConfig>> configs;
  bool any_shadow = false;
};

// pair -> step -> replicate -> rows (per tensor, "all" last)
using PairDistances =
    std::map<std::string, std::map<int, std::map<int, std::vector<WeightDistance>>>>;
// name -> step -> the "all" row's statistics over replicates
using PooledStats = std::map<std::string, std::map<int, ReplicateStats>>;

// Every corpus the runs train on, by text path / corpus name: each loaded once.
std::string corpus_key(const TrainConfig& c, const StudyOptions& options) {
  if (!options.text.empty()) return "file:" + options.text;
  if (!options.corpus.empty()) return "corpus:" + options.corpus;
  return c.text.empty() ? "corpus:" + c.corpus : "file:" + c.text;
}

std::map<std::string, Corpus> load_corpora(const StudyConfig& study, const StudyOptions& options) {
  std::map<std::string, Corpus> corpora;
  for (const TrainConfig& cfg : study.runs)
    if (!corpora.count(corpus_key(cfg, options)))
      corpora.emplace(corpus_key(cfg, options), load_run_corpus(cfg, options));
  return corpora;
}

// Trains every run of every replicate into its folder; the files go into result.files.
StudyRuns train_runs(const StudyConfig& study, const StudyOptions& options, StudyResult& result) {
  const std::map<std::string, Corpus> corpora = load_corpora(study, options);
  const int reps = study.replicates;
  StudyRuns out;
  out.runs.resize(static_cast<std::size_t>(reps));
  out.configs.resize(static_cast<std::size_t>(reps));
  for (int r = 0; r < reps; ++r) {
    for (const TrainConfig& base : study.runs) {
      const TrainConfig cfg = replicate_of(base, r, study.replicate_seed_stride);
      const std::filesystem::path dir = run_folder(options.out_dir, reps, r, cfg.name);
      log::info("study {}: {}training run {} ({}, {} attention, policy {}, seed {}, data seed {})",
                study.name,
                reps > 1 ? "replicate " + std::to_string(r + 1) + "/" + std::to_string(reps) + ": "
                         : std::string(),
                cfg.name, precision_name(cfg.precision), attention::algorithm_name(cfg.algorithm),
                config::policy_label(cfg.policy), cfg.seed, cfg.data_seed);
      out.runs[r][cfg.name] = run_single(cfg, corpora.at(corpus_key(cfg, options)), options, dir);
      out.configs[r][cfg.name] = cfg;
      const std::string rel = std::filesystem::relative(dir, options.out_dir).generic_string();
      result.files.push_back(rel + "/loss.csv");
      result.files.push_back(rel + "/run.json");
      if (!cfg.shadows.empty()) {
        out.any_shadow = true;
        result.files.push_back(rel + "/in_model.csv");
        result.files.push_back(rel + "/in_model.md");
      }
    }
  }
  return out;
}

// Distances at every step that both runs of a pair snapshotted, read back from the files;
// writes weights_comparison.csv.
PairDistances compare_pairs(const StudyConfig& study, const StudyOptions& options,
                            const StudyRuns& trained, StudyResult& result) {
  const int reps = study.replicates;
  std::string csv = io::csv_record({"step", "replicate", "pair", "kind", "run_a", "run_b", "seed_a",
                                    "seed_b", "tensor", "w1", "max_abs_diff"});
  PairDistances by_pair;
  for (int r = 0; r < reps; ++r) {
    for (const PairSpec& p : study.pairs) {
      const RunResult& ra = trained.runs[r].at(p.a);
      const RunResult& rb = trained.runs[r].at(p.b);
      const std::set<int> steps_b(rb.snapshot_steps.begin(), rb.snapshot_steps.end());
      for (int step : ra.snapshot_steps) {
        if (!steps_b.count(step)) continue;
        const auto ta = io::read_safetensors(run_folder(options.out_dir, reps, r, p.a) /
                                             "snapshots" / snapshot_name(step));
        const auto tb = io::read_safetensors(run_folder(options.out_dir, reps, r, p.b) /
                                             "snapshots" / snapshot_name(step));
        std::vector<WeightDistance> rows = compare_weights(ta.tensors, tb.tensors);
        for (const WeightDistance& d : rows) {
          csv += io::csv_record({std::to_string(step), std::to_string(r), p.name, p.kind, p.a, p.b,
                                 std::to_string(trained.configs[r].at(p.a).seed),
                                 std::to_string(trained.configs[r].at(p.b).seed), d.tensor,
                                 fmt(d.w1), fmt(d.max_abs)});
          ++result.compared_rows;
        }
        by_pair[p.name][step][r] = std::move(rows);
      }
    }
  }
  io::write_file_atomic(options.out_dir / "weights_comparison.csv", csv);
  result.files.push_back("weights_comparison.csv");
  return by_pair;
}

// Pair W1 over replicates: pair_stats.csv's text; the "all" rows into `pooled`.
std::string pair_stats_csv(const StudyConfig& study, PairDistances& by_pair, PooledStats& pooled) {
  std::string csv = io::csv_record(
      {"step", "pair", "kind", "tensor", "replicates", "w1_mean", "w1_std", "w1_min", "w1_max"});
  for (const PairSpec& p : study.pairs) {
    for (const auto& [step, per_rep] : by_pair[p.name]) {
      const std::size_t tensors = per_rep.begin()->second.size();
      for (std::size_t t = 0; t < tensors; ++t) {
        std::vector<double> w1;
        for (const auto& [r, rows] : per_rep) w1.push_back(rows[t].w1);
        const ReplicateStats st = replicate_stats(w1);
        csv += io::csv_record({std::to_string(step), p.name, p.kind,
                               per_rep.begin()->second[t].tensor, std::to_string(st.n),
                               fmt(st.mean), fmt(st.std), fmt(st.min), fmt(st.max)});
        if (t + 1 == tensors) pooled[p.name][step] = st;
      }
    }
  }
  return csv;
}

struct RatioTables {
  std::string ratios;       // ratios.csv: per replicate
  std::string ratio_stats;  // ratio_stats.csv: over replicates
  PooledStats pooled;       // the "all" rows
};

// One ratio at one step: per replicate (both W1 from the same replicate), then over replicates.
void add_ratio_step(const RatioSpec& rs, int step, int reps, const PairDistances::mapped_type& num,
                    const PairDistances::mapped_type& den, RatioTables& out) {
  std::vector<std::vector<double>> per_tensor;  // tensor -> replicate values
  std::vector<std::string> names;
  for (int r = 0; r < reps; ++r) {
    if (!num.at(step).count(r) || !den.at(step).count(r)) continue;
    const auto& n_rows = num.at(step).at(r);
    const auto& d_rows = den.at(step).at(r);
    per_tensor.resize(n_rows.size());
    names.resize(n_rows.size());
    for (std::size_t t = 0; t < n_rows.size() && t < d_rows.size(); ++t) {
      const double ratio = ratio_of(n_rows[t].w1, d_rows[t].w1);
      out.ratios +=
          io::csv_record({std::to_string(step), std::to_string(r), rs.name, n_rows[t].tensor,
                          fmt(n_rows[t].w1), fmt(d_rows[t].w1), fmt(ratio)});
      per_tensor[t].push_back(ratio);
      names[t] = n_rows[t].tensor;
    }
  }
  for (std::size_t t = 0; t < per_tensor.size(); ++t) {
    const ReplicateStats st = replicate_stats(per_tensor[t]);
    out.ratio_stats +=
        io::csv_record({std::to_string(step), rs.name, names[t], std::to_string(st.n), fmt(st.mean),
                        fmt(st.std), fmt(st.min), fmt(st.max)});
    if (t + 1 == per_tensor.size()) out.pooled[rs.name][step] = st;
  }
}

RatioTables ratio_tables(const StudyConfig& study, PairDistances& by_pair,
                         const std::set<int>& all_steps) {
  RatioTables out;
  out.ratios = io::csv_record(
      {"step", "replicate", "ratio_name", "tensor", "numerator_w1", "denominator_w1", "ratio"});
  out.ratio_stats =
      io::csv_record({"step", "ratio_name", "tensor", "replicates", "mean", "std", "min", "max"});
  for (const RatioSpec& rs : study.ratios) {
    for (int step : all_steps) {
      const auto& num = by_pair[rs.numerator];
      const auto& den = by_pair[rs.denominator];
      if (!num.count(step) || !den.count(step)) continue;
      add_ratio_step(rs, step, study.replicates, num, den, out);
    }
  }
  return out;
}

// summary.md: the header and the table of runs.
void markdown_runs(std::ostringstream& md, const StudyConfig& study, const StudyOptions& options,
                   const StudyRuns& trained) {
  const int reps = study.replicates;
  md << "# Weight-deviation study: " << study.name << "\n\n";
  if (!study.description.empty()) md << study.description << "\n\n";
  md << "Command: `" << options.command_line << "`\n\n";
  if (reps > 1)
    md << "Replicates: " << reps << " (replicate r adds r x " << study.replicate_seed_stride
       << " to every run's seed and data seed). Cells over replicates read mean ± sample std "
          "[min, max]; a ratio is taken within each replicate, then summarized.\n\n";
  md << "## Runs\n\n"
     << "| run | replicate | precision | attention | policy | seed | data seed | steps | first "
        "loss | final loss (mean of last 10) | skipped | seconds |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (int r = 0; r < reps; ++r) {
    for (const TrainConfig& base : study.runs) {
      const TrainConfig& cfg = trained.configs[r].at(base.name);
      const RunResult& rr = trained.runs[r].at(base.name);
      md << "| " << cfg.name << " | " << r << " | " << precision_name(cfg.precision) << " | "
         << attention::algorithm_name(cfg.algorithm) << " | " << config::policy_label(cfg.policy)
         << " | " << cfg.seed << " | " << cfg.data_seed << " | " << cfg.steps << " | "
         << fmt(rr.log.front().loss) << " | " << fmt(tail_loss(rr, 10)) << " | " << rr.skipped_steps
         << " | " << fmt(rr.seconds) << " |\n";
    }
  }
}

// summary.md: pooled W1 of every pair and every ratio per snapshot step.
void markdown_pooled(std::ostringstream& md, const StudyConfig& study,
                     const std::set<int>& all_steps, PooledStats& pooled_pair,
                     PooledStats& pooled_ratio) {
  const int reps = study.replicates;
  md << "\n## W1 of all weights pooled, per snapshot step"
     << (reps > 1 ? " (over " + std::to_string(reps) + " replicates)" : std::string())
     << "\n\n| step |";
  for (const PairSpec& p : study.pairs) md << " " << p.name << " (" << p.kind << ") |";
  for (const RatioSpec& r : study.ratios) md << " " << r.name << " |";
  md << "\n|---|";
  for (std::size_t i = 0; i < study.pairs.size() + study.ratios.size(); ++i) md << "---|";
  md << "\n";
  for (int step : all_steps) {
    md << "| " << step << " |";
    for (const PairSpec& p : study.pairs) {
      const auto& steps = pooled_pair[p.name];
      md << " " << (steps.count(step) ? stats_cell(steps.at(step), /*range=*/false) : "-") << " |";
    }
    for (const RatioSpec& r : study.ratios) {
      const auto& steps = pooled_ratio[r.name];
      md << " " << (steps.count(step) ? stats_cell(steps.at(step), /*range=*/true) : "-") << " |";
    }
    md << "\n";
  }
}

// summary.md: W1 / max|diff| per tensor at the last step, mean over replicates.
void markdown_per_tensor(std::ostringstream& md, const StudyConfig& study,
                         const std::set<int>& all_steps, PairDistances& by_pair) {
  if (all_steps.empty() || study.pairs.empty()) return;
  const int last = *all_steps.rbegin();
  md << "\n## Per tensor at step " << last << ": W1 / max|diff|"
     << (study.replicates > 1 ? " (mean over replicates)" : "") << "\n\n| tensor |";
  for (const PairSpec& p : study.pairs) md << " " << p.name << " |";
  md << "\n|---|";
  for (std::size_t i = 0; i < study.pairs.size(); ++i) md << "---|";
  md << "\n";
  const auto& first = by_pair[study.pairs.front().name];
  if (!first.count(last)) return;
  const std::size_t tensors = first.at(last).begin()->second.size();
  for (std::size_t t = 0; t < tensors; ++t) {
    md << "| " << first.at(last).begin()->second[t].tensor << " |";
    for (const PairSpec& p : study.pairs) {
      const auto& steps = by_pair[p.name];
      if (!steps.count(last)) {
        md << " - |";
        continue;
      }
      double w1 = 0, max_abs = 0;
      for (const auto& [r, rows] : steps.at(last)) {
        w1 += rows[t].w1 / double(steps.at(last).size());
        max_abs += rows[t].max_abs / double(steps.at(last).size());
      }
      md << " " << fmt(w1) << " / " << fmt(max_abs) << " |";
    }
    md << "\n";
  }
}

// summary.md's rows of one shadowed run: (step, layer, variant) over replicates; its replicates'
// in_model.csv appended to `merged` (header once).
void markdown_in_model_run(std::ostringstream& md, const TrainConfig& base, int reps,
                           const StudyOptions& options, const StudyRuns& trained,
                           std::string& merged) {
  // (step, layer, variant) -> per replicate (max, mean, ratio); order as first seen.
  std::vector<std::tuple<int, int, std::string>> order;
  std::map<std::tuple<int, int, std::string>, std::array<std::vector<double>, 3>> cells;
  for (int r = 0; r < reps; ++r) {
    const std::filesystem::path f =
        run_folder(options.out_dir, reps, r, base.name) / "in_model.csv";
    const std::string text = read_text_file(f);
    const std::size_t eol = text.find('\n');
    if (merged.empty()) merged = text.substr(0, eol + 1);
    if (eol != std::string::npos) merged += text.substr(eol + 1);
    std::map<std::pair<int, int>, double> driver_mean;
    for (const InModelRow& row : trained.runs[r].at(base.name).in_model)
      if (row.driver) driver_mean[{row.step, row.layer}] = row.vs_golden.mean_abs;
    for (const InModelRow& row : trained.runs[r].at(base.name).in_model) {
      const auto key = std::tuple{row.step, row.layer, row.variant};
      if (!cells.count(key)) order.push_back(key);
      auto& c = cells[key];
      c[0].push_back(row.vs_golden.max_abs);
      c[1].push_back(row.vs_golden.mean_abs);
      c[2].push_back(ratio_of(row.vs_golden.mean_abs, driver_mean[{row.step, row.layer}]));
    }
  }
  for (const auto& key : order) {
    const auto& c = cells.at(key);
    const bool is_driver = std::get<2>(key) == driver_name(base);
    md << "| " << base.name << " | " << std::get<0>(key) << " | " << std::get<1>(key) << " | "
       << std::get<2>(key) << (is_driver ? " (driver)" : "") << " | "
       << stats_cell(replicate_stats(c[0]), false) << " | "
       << stats_cell(replicate_stats(c[1]), false) << " | "
       << (is_driver ? "1" : stats_cell(replicate_stats(c[2]), true)) << " |\n";
  }
}

// summary.md's in-model section and the study's in_model.csv (every run's, in one file).
void in_model_section(std::ostringstream& md, const StudyConfig& study, const StudyOptions& options,
                      const StudyRuns& trained, StudyResult& result) {
  std::string merged;
  md << "\n## In-model deviation (all heads; mean over replicates ± std)\n\n"
     << "Each attention call of the shadow steps computed by the driving variant and every "
        "shadow on the same Q, K, V, against the FP64 golden (in_model.csv per head).\n\n"
     << "| run | step | layer | variant | max \\|O - golden\\| | mean \\|O - golden\\| | mean / "
        "driver's mean |\n|---|---|---|---|---|---|---|\n";
  for (const TrainConfig& base : study.runs)
    if (!base.shadows.empty())
      markdown_in_model_run(md, base, study.replicates, options, trained, merged);
  io::write_file_atomic(options.out_dir / "in_model.csv", merged);
  result.files.push_back("in_model.csv");
}

}  // namespace

StudyResult run_study(const StudyConfig& study, const StudyOptions& options) {
  StudyResult result;
  const StudyRuns trained = train_runs(study, options, result);
  PairDistances by_pair = compare_pairs(study, options, trained, result);
  std::set<int> all_steps;
  for (const auto& [name, steps] : by_pair)
    for (const auto& [step, per_rep] : steps) all_steps.insert(step);

  PooledStats pooled_pair;
  const std::string pair_stats = pair_stats_csv(study, by_pair, pooled_pair);
  RatioTables ratios = ratio_tables(study, by_pair, all_steps);

  std::ostringstream md;
  markdown_runs(md, study, options, trained);
  markdown_pooled(md, study, all_steps, pooled_pair, ratios.pooled);
  markdown_per_tensor(md, study, all_steps, by_pair);
  if (trained.any_shadow) in_model_section(md, study, options, trained, result);

  io::write_file_atomic(options.out_dir / "ratios.csv", ratios.ratios);
  io::write_file_atomic(options.out_dir / "pair_stats.csv", pair_stats);
  io::write_file_atomic(options.out_dir / "ratio_stats.csv", ratios.ratio_stats);
  io::write_file_atomic(options.out_dir / "summary.md", md.str());
  for (const char* f : {"ratios.csv", "pair_stats.csv", "ratio_stats.csv", "summary.md"})
    result.files.push_back(f);
  return result;
}

}  // namespace attndev::train
