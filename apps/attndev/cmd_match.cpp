// `attndev match OUTPUT --inputs FILE`: ranks emulated candidates (algorithm x policy x tiles) by
// how exactly they reproduce an output some implementation computed from known inputs, and says
// which policy explains it (experiment/match.hpp). docs/validation.md shows it on PyTorch.
#include "io/log.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "experiment/spec/inputs_file.hpp"
#include "experiment/match.hpp"
#include "experiment/run/tensor_io.hpp"
#include "attention/twins/twins.hpp"

namespace attndev::app {

namespace {

struct MatchArgs {
  std::string output;
  std::string inputs;
  std::vector<std::string> algos = {"baseline", "flash1", "flash2"};
  std::vector<std::string> policies;  // empty: experiment::default_policies
  std::vector<int> br = {64};
  std::vector<int> bc = {16, 32, 64, 128, 256, 512};
  std::vector<std::string> twins;     // empty: experiment::default_twin_algorithms
  std::vector<std::string> profiles;  // empty: experiment::default_twin_profiles
  bool no_twins = false;
  bool causal = false;
  std::string scale_on = "scores";
  int top = 10;
  int threads = 0;
  bool json = false;
};

std::string g3(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

std::string pct(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * f);
  return buf;
}

attention::Options match_options(const MatchArgs& a) {
  for (int v : a.br) require_at_least(v, 1, "--block-r");
  for (int v : a.bc) require_at_least(v, 1, "--block-c");
  require_at_least(a.top, 1, "--top");
  require_at_least(a.threads, 0, "-j/--threads");
  attention::Options options;
  options.causal = a.causal;
  options.threads = a.threads;
  if (a.scale_on == "query") {
    options.scale_placement = attention::ScalePlacement::query;
  } else if (a.scale_on != "scores") {
    throw UsageError("--scale-placement: unknown placement \"" + a.scale_on +
                     "\"; valid: scores, query");
  }
  return options;
}

// The candidate policies: --policy's, else those whose output format holds every value of OUTPUT.
std::vector<numerics::PrecisionPolicy> match_policies(const MatchArgs& a,
                                                      const attention::Tensor& output) {
  std::vector<numerics::PrecisionPolicy> policies;
  for (const std::string& p : a.policies) policies.push_back(parse_policy_arg(p, "--policy"));
  if (policies.empty()) policies = experiment::default_policies(output);
  if (policies.empty())
    throw UsageError(
        "OUTPUT holds values no bf16/fp16/fp32/fp64 policy stores; name candidate "
        "policies with --policy");
  return policies;
}

// A tile at least as long as the sequence is one tile: every such size gives the same output,
// so they run once, named by the sequence length (ties would otherwise fill the ranking).
std::vector<int> clamp_tiles(const std::vector<int>& sizes, int n, const char* what) {
  std::vector<int> out;
  std::string merged;
  for (int s : sizes) {
    const int t = std::min(s, n);
    if (s > n) merged += (merged.empty() ? "" : ", ") + std::to_string(s);
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  if (!merged.empty())
    log::info("match: {} {} exceed the sequence ({}): one tile, run as {}={}", what, merged, n,
              what, n);
  return out;
}

// The twins and profiles to search: --twin / --profile, else the defaults; none with --no-twins.
struct TwinChoice {
  std::vector<attention::Algorithm> twins;
  std::vector<numerics::mma::Arch> profiles;
};
TwinChoice twin_choice(const MatchArgs& a) {
  if (a.no_twins) {
    if (!a.twins.empty() || !a.profiles.empty())
      throw UsageError("--no-twins leaves the twins out: drop --twin and --profile, or --no-twins");
    return {};
  }
  std::vector<attention::Algorithm> twins;
  for (const std::string& t : a.twins) {
    const attention::Algorithm alg = parse_algorithm_arg(t, "--twin");
    if (!attention::is_twin_algorithm(alg)) {
      std::string names;
      for (attention::Algorithm x : attention::kTwinAlgorithms)
        names += (names.empty() ? "" : ", ") + std::string(attention::algorithm_name(x));
      throw UsageError("--twin: \"" + t + "\" is not a twin of a GPU kernel; valid: " + names +
                       " (other algorithms go in --algorithm)");
    }
    twins.push_back(alg);
  }
  if (twins.empty()) twins = experiment::default_twin_algorithms();
  std::vector<numerics::mma::Arch> profiles;
  for (const std::string& name : a.profiles) {
    numerics::mma::Arch arch;
    if (!numerics::mma::parse_arch(name, arch) || arch == numerics::mma::Arch::none) {
      std::string names;
      for (numerics::mma::Arch x : numerics::mma::kAllArchs)
        names += (names.empty() ? "" : ", ") + std::string(numerics::mma::arch_name(x));
      throw UsageError("--profile: unknown tensor-core profile \"" + name + "\"; valid: " + names);
    }
    profiles.push_back(arch);
  }
  if (profiles.empty()) profiles = experiment::default_twin_profiles();
  return {twins, profiles};
}

void print_match_json(const MatchArgs& a, const std::vector<experiment::MatchResult>& ranked,
                      const std::string& holding, const std::string& verdict) {
  nlohmann::json rows = nlohmann::json::array();
  for (const experiment::MatchResult& m : ranked) {
    const experiment::Variant& v = m.candidate.variant;
    nlohmann::json r = {{"candidate", v.name},
                        {"algorithm", attention::algorithm_name(v.algorithm)},
                        {"policy", config::policy_to_json(v.policy)},
                        {"policy_label", v.policy_label},
                        {"status", m.status.text()}};
    if (v.block_r) r["block_r"] = *v.block_r;
    if (v.block_c) r["block_c"] = *v.block_c;
    if (m.status.is_ok()) {
      r["identical_fraction"] = json_number(m.ulps.identical_fraction);
      r["max_ulp"] = m.ulps.max_ulp;
      r["mean_ulp"] = json_number(m.ulps.mean_ulp);
      r["ulp_histogram"] = m.ulps.histogram_text();
      r["diff_max_abs"] = json_number(m.difference.max_abs);
      r["diff_max_ulps_at_max"] = json_number(m.max_diff_ulps_at_max);
      r["diff_mean_abs"] = json_number(m.difference.mean_abs);
      r["candidate_mean_abs"] = json_number(m.candidate_dev.mean_abs);
      r["output_mean_abs"] = json_number(m.output_dev.mean_abs);
    }
    rows.push_back(std::move(r));
  }
  std::string exp2;
  if (!a.no_twins) attention::twins::twin_exp2(&exp2);
  const nlohmann::json doc = {{"output", a.output},
                              {"inputs", a.inputs},
                              {"formats_holding_output", holding},
                              {"verdict", verdict},
                              {"twin_exp2", a.no_twins ? "" : exp2},
                              {"candidates", rows},
                              {"provenance", provenance_json()}};
  std::printf("%s\n", doc.dump(2).c_str());
}

void print_match_table(const MatchArgs& a, const attention::Inputs& inputs,
                       const std::vector<experiment::MatchResult>& ranked,
                       const std::string& holding, const std::string& verdict) {
  std::printf("output %s (values exact in: %s)\ninputs %s: B=%d H=%d N=%d N_kv=%d d=%d%s\n\n",
              a.output.c_str(), holding.c_str(), a.inputs.c_str(), inputs.q.batch, inputs.q.heads,
              inputs.q.rows, inputs.k.rows, inputs.q.cols, a.causal ? ", causal" : "");
  Table t({"#", "candidate", "identical", "max diff", "mean |O - cand|", "cand. dev", "your dev",
           "ratio"});
  for (std::size_t i = 0; i < ranked.size() && static_cast<int>(i) < a.top; ++i) {
    const experiment::MatchResult& m = ranked[i];
    if (!m.status.is_ok()) {
      t.add_row(
          {std::to_string(i + 1), m.candidate.variant.name, m.status.text(), "", "", "", "", ""});
      continue;
    }
    t.add_row({std::to_string(i + 1), m.candidate.variant.name, pct(m.ulps.identical_fraction),
               g3(m.max_diff_ulps_at_max) + " ulp", format_number(m.difference.mean_abs),
               format_number(m.candidate_dev.mean_abs), format_number(m.output_dev.mean_abs),
               g3(m.candidate_dev.mean_abs / m.output_dev.mean_abs)});
  }
  t.print(stdout);
  if (ranked.size() > static_cast<std::size_t>(a.top))
    std::printf("... %zu more (--top)\n", ranked.size() - static_cast<std::size_t>(a.top));
  std::printf(
      "\nidentical: share of elements bit-identical to the candidate's; max diff: max |O - cand| "
      "in ulps of the candidate's output format at max |O|; dev: mean |O - golden| against the "
      "FP64 golden on the same rounded inputs; ratio: cand. dev / your dev\n");
  if (!a.no_twins) {
    std::string exp2;
    attention::twins::twin_exp2(&exp2);
    std::printf("twins' exp2: %s\n", exp2.c_str());
  }
  std::printf("%s\n", verdict.c_str());
}

// NaN or inf in the output to explain: every candidate would "match" or miss it for reasons that
// say nothing about its policy, so it is refused, as `run` fails an external output holding them.
void require_finite_output(const attention::Tensor& output, const std::string& path) {
  std::size_t nan = 0, inf = 0, first = output.data.size();
  for (std::size_t i = 0; i < output.data.size(); ++i) {
    const double x = output.data[i];
    if (std::isfinite(x)) continue;
    (std::isnan(x) ? nan : inf) += 1;
    first = std::min(first, i);
  }
  if (nan + inf == 0) return;
  throw UsageError("OUTPUT " + path + " holds " + std::to_string(nan) + " NaN and " +
                   std::to_string(inf) + " infinite value(s) (first at flat index " +
                   std::to_string(first) +
                   "): a non-finite output cannot be matched to a policy; check the kernel that "
                   "wrote it (attndev run fails such an output too)");
}

void run_match(const MatchArgs& a) {
  std::vector<attention::Algorithm> algorithms;
  for (const std::string& s : a.algos) algorithms.push_back(parse_algorithm_arg(s, "--algorithm"));
  const attention::Options options = match_options(a);
  attention::Inputs inputs;
  try {
    inputs = experiment::read_inputs_file(a.inputs);
  } catch (const std::runtime_error& e) {
    throw UsageError(std::string("--inputs: ") + e.what());
  }
  attention::Tensor output;
  try {
    output = experiment::read_output_file(a.output, inputs.shape());
  } catch (const std::runtime_error& e) {
    throw UsageError("OUTPUT: " + std::string(e.what()));
  }
  require_finite_output(output, a.output);
  const std::vector<numerics::PrecisionPolicy> policies = match_policies(a, output);
  const TwinChoice choice = twin_choice(a);
  const std::vector<experiment::MatchCandidate> candidates = experiment::search_candidates(
      algorithms, policies, clamp_tiles(a.br, inputs.q.rows, "Br"),
      clamp_tiles(a.bc, inputs.k.rows, "Bc"), choice.twins, choice.profiles);
  log::info("match: {} candidates on {} (B={} H={} N={} N_kv={} d={})", candidates.size(), a.inputs,
            inputs.q.batch, inputs.q.heads, inputs.q.rows, inputs.k.rows, inputs.q.cols);
  experiment::MatchOptions mo;
  mo.options = options;
  mo.on_progress = [](std::size_t done, std::size_t total) {
    if (done % 8 == 0 || done == total) log::info("match: {}/{} candidates", done, total);
  };
  const std::vector<experiment::MatchResult> ranked =
      experiment::match_output(output, inputs, candidates, mo);
  const std::string verdict = experiment::match_verdict(ranked);
  std::string holding;
  for (numerics::Format f : experiment::formats_holding(output))
    holding += (holding.empty() ? "" : ", ") + std::string(numerics::format_name(f));

  if (a.json)
    print_match_json(a, ranked, holding, verdict);
  else
    print_match_table(a, inputs, ranked, holding, verdict);
  if (ranked.empty() || !ranked.front().status.is_ok()) throw CommandExit{kExitNothingCompared};
}

}  // namespace

void add_match_command(cli::Command& app) {
  auto args = std::make_shared<MatchArgs>();
  cli::Command* cmd = app.add_subcommand(
      "match",
      "Rank emulated kernels (algorithm x policy x tiles, and the twins of the GPU kernels "
      "FlashAttention-2, PyTorch's memory-efficient kernel and flash2-tc under each tensor-core "
      "profile) by how exactly they reproduce an output computed from known inputs, and say "
      "which kernel, policy and architecture explain it");
  cmd->add_option("output", args->output,
                  "The output O to explain: .safetensors (tensor o, O, out, output, or the only "
                  "one) or .npy; (B,H,N,d), (H,N,d) or (N,d)")
      ->required();
  cmd->add_option("--inputs", args->inputs,
                  "Q, K, V it was computed from: a .safetensors file with q, k, v, or a folder "
                  "with q.npy, k.npy, v.npy (an `attndev point --dump` inputs file works)")
      ->required()
      ->non_empty();
  // Names equal the config keys; the short forms stay as aliases (as in `point`).
  cmd->add_option("--algorithm,--algo", args->algos, "Candidate algorithms (repeatable)")
      ->capture_default_str();
  cmd->add_option("--policy", args->policies,
                  "Candidate policies, presets or JSON objects (repeatable; default: the presets "
                  "whose output format holds every value of OUTPUT, plus fp32 arithmetic with "
                  "bf16/fp16 inputs and output)");
  cmd->add_option("--twin", args->twins,
                  "Twins of GPU kernels searched (repeatable; default: fa2-cuda, fa2-cuda-unfused, "
                  "mem-efficient, flash2-tc-twin), each with the kernel-bf16/fp16 policy that "
                  "holds OUTPUT and their own tiles");
  cmd->add_option("--profile", args->profiles,
                  "Tensor-core profiles the twins run under (repeatable; default: sm80, sm89, "
                  "sm90, sm100): the GEMMs' arithmetic and the GPU's launch decisions");
  cmd->add_flag("--no-twins", args->no_twins,
                "Search only --algorithm's candidates (the behaviour before the twins existed)");
  cmd->add_option("--block-r,--br", args->br, "Candidate Br (repeatable)")->capture_default_str();
  cmd->add_option("--block-c,--bc", args->bc, "Candidate Bc (repeatable)")->capture_default_str();
  cmd->add_flag("--causal", args->causal, "The output was computed with a causal mask");
  cmd->add_option("--scale-placement,--scale-on", args->scale_on,
                  "Softmax scale placement: scores or query")
      ->capture_default_str();
  cmd->add_option("--top", args->top, "Candidates listed")->capture_default_str();
  cmd->add_option("-j,--threads", args->threads, "Threads (0: all hardware threads)")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON object instead of the table");
  cmd->callback([args] { run_match(*args); });
}

}  // namespace attndev::app
