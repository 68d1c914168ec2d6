// `attndev list [formats|presets|algorithms|distributions|backends] [--json]`: what this build
// can run, printed from the same tables the runner uses (a registry has one source of truth).

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_util.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "config/policy_json.hpp"
#include "numerics/policy.hpp"

#if ATTNDEV_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace attndev::app {

namespace {

struct BackendInfo {
  std::string name;
  bool available;
  std::string note;
};

// Which backends this binary can run. The CUDA backend hooks in here when it is built (and should
// then report "no device" rather than "not built" on a machine without a GPU).
std::vector<BackendInfo> backend_availability() {
  std::vector<BackendInfo> out = {
      {"cpu", true, "emulator: every algorithm and policy, bit-exact rounding"}};
#if ATTNDEV_HAVE_CUDA
  // One row for the device, then one per kernel with what the dispatch table covers.
  std::string why;
  const bool gpu = cuda::cuda_available(why);
  out.push_back({"cuda", gpu, gpu ? cuda::device_info().describe() : why});
  for (const cuda::KernelInfo& k : cuda::kernel_catalog())
    out.push_back({std::string("cuda/") + cuda::kernel_name(k.kernel), gpu, k.covers});
  out.push_back({"cuda (run-level)", gpu,
                 "\"backend\": \"cuda\" / --backend cuda: inputs, golden and every emulated "
                 "variant on the GPU, bit-identical to cpu (docs/cuda.md)"});
#else
  out.push_back({"cuda", false, "not built (configure with the CUDA toolkit installed)"});
#endif
  return out;
}

struct DistributionInfo {
  const char* form;
  const char* defaults;
  const char* description;
};

constexpr DistributionInfo kDistributions[] = {
    {"normal(mean,std)", "normal(0,1)", "Gaussian, Box-Muller from Philox-4x32-10 words"},
    {"uniform(lo,hi)", "uniform(0,1)", "uniform on [lo, hi) with 53 random bits"},
    {"outlier(std,p)", "outlier(std=10,p=0.001)",
     "N(0,1) + N(0,std^2)*Bernoulli(p): FA-3 Table 3's inputs"},
    {"channel(std,bias)", "channel(std=1,bias=5)",
     "Q, K: N(0,std^2) + one N(0,bias^2) offset per column of each head, shared by all tokens "
     "(the channel-wise outliers SageAttention reports in K); V: N(0,std^2)"},
};

constexpr std::string_view kSections[] = {"formats", "presets", "algorithms", "distributions",
                                          "backends"};

// Where a format may appear: a policy stage, or inside quantization recipes only.
const char* format_use(numerics::Format f) {
  if (numerics::is_stage_format(f)) return "stage";
  switch (numerics::traits(f).kind) {
    case numerics::FormatKind::scale:
      return "scale";
    case numerics::FormatKind::integer:
      return "element";
    case numerics::FormatKind::floating:
      break;
  }
  return f == numerics::Format::ue4m3 ? "scale" : "element";
}

nlohmann::json formats_json() {
  nlohmann::json out = nlohmann::json::array();
  for (numerics::Format f : numerics::kEveryFormat) {
    const numerics::FormatTraits t = numerics::traits(f);
    out.push_back({{"name", t.name},
                   {"use", format_use(f)},
                   {"bits", t.storage_bits},
                   {"fraction_bits", t.fraction_bits},
                   {"exponent_bits", t.exponent_bits},
                   {"max", t.max_finite},
                   {"min_normal", t.min_normal()},
                   {"min_subnormal", t.min_subnormal()},
                   {"unit_roundoff", t.unit_roundoff()},
                   {"has_inf", t.has_inf},
                   {"has_nan", t.has_nan},
                   {"signed", t.has_sign}});
  }
  return out;
}

nlohmann::json presets_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const numerics::PolicyPreset& p : numerics::kPolicyPresets)
    out.push_back({{"name", p.name},
                   {"description", p.description},
                   {"stages", config::policy_stages_json(p.policy)}});
  return out;
}

nlohmann::json algorithms_json() {
  nlohmann::json out = nlohmann::json::array();
  for (attention::Algorithm a : attention::kEveryAlgorithm)
    out.push_back({{"name", attention::algorithm_name(a)},
                   {"description", attention::algorithm_description(a)}});
  return out;
}

nlohmann::json distributions_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const DistributionInfo& d : kDistributions)
    out.push_back({{"form", d.form}, {"default", d.defaults}, {"description", d.description}});
  return out;
}

nlohmann::json backends_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const BackendInfo& b : backend_availability())
    out.push_back({{"name", b.name}, {"available", b.available}, {"note", b.note}});
  return out;
}

void print_formats() {
  Table t({"format", "use", "bits", "fraction", "exponent", "max", "min normal", "min subnormal",
           "unit roundoff"});
  for (numerics::Format f : numerics::kEveryFormat) {
    const numerics::FormatTraits x = numerics::traits(f);
    const bool integer = x.kind == numerics::FormatKind::integer;
    t.add_row({x.name, format_use(f), std::to_string(x.storage_bits),
               std::to_string(x.fraction_bits), std::to_string(x.exponent_bits),
               format_number(x.max_finite, 4), integer ? "-" : format_number(x.min_normal()),
               format_number(x.min_subnormal()), format_number(x.unit_roundoff())});
  }
  t.print(stdout);
  std::printf(
      "\nstage: a precision policy's stages may name it; element / scale: the values and block "
      "scales of quantization recipes (OCP MX v1.0 fp6/fp4 and e8m0, NVFP4's ue4m3, symmetric "
      "saturating int8/int4; docs/formats.md)\n");
}

void print_presets() {
  std::vector<std::string> header = {"preset"};
  for (numerics::Stage s : numerics::kAllStages) header.push_back(numerics::stage_name(s));
  header.push_back("fma");
  Table t(header);
  for (const numerics::PolicyPreset& p : numerics::kPolicyPresets) {
    std::vector<std::string> row = {std::string(p.name)};
    for (numerics::Stage s : numerics::kAllStages)
      row.push_back(numerics::format_name(p.policy[s]));
    row.push_back(p.policy.fma ? "yes" : "no");
    t.add_row(row);
  }
  t.print(stdout, /*left_align_all=*/true);
  std::printf("\n");
  for (const numerics::PolicyPreset& p : numerics::kPolicyPresets)
    std::printf("  %-16s %s\n", std::string(p.name).c_str(), std::string(p.description).c_str());
}

void print_algorithms() {
  Table t({"algorithm", "description"});
  for (attention::Algorithm a : attention::kEveryAlgorithm)
    t.add_row({attention::algorithm_name(a), attention::algorithm_description(a)});
  t.print(stdout, /*left_align_all=*/true);
}

void print_distributions() {
  Table t({"distribution", "default", "description"});
  for (const DistributionInfo& d : kDistributions) t.add_row({d.form, d.defaults, d.description});
  t.print(stdout, /*left_align_all=*/true);
}

void print_backends() {
  Table t({"backend", "available", "note"});
  for (const BackendInfo& b : backend_availability())
    t.add_row({b.name, b.available ? "yes" : "no", b.note});
  t.print(stdout, /*left_align_all=*/true);
}

struct ListArgs {
  std::string section;
  bool json = false;
};

void run_list(const ListArgs& args) {
  if (!args.section.empty()) {
    bool known = false;
    for (std::string_view s : kSections) known = known || s == args.section;
    if (!known)
      throw UsageError("list: unknown section \"" + args.section + "\"" +
                       config::did_you_mean(args.section, kSections) +
                       "; valid: " + config::join_names(kSections));
  }
  const auto wanted = [&](std::string_view s) { return args.section.empty() || args.section == s; };
  if (args.json) {
    nlohmann::json out = nlohmann::json::object();
    if (wanted("formats")) out["formats"] = formats_json();
    if (wanted("presets")) out["presets"] = presets_json();
    if (wanted("algorithms")) out["algorithms"] = algorithms_json();
    if (wanted("distributions")) out["distributions"] = distributions_json();
    if (wanted("backends")) out["backends"] = backends_json();
    out["provenance"] = provenance_json();
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  bool first = true;
  const auto section = [&](std::string_view name, void (*print)()) {
    if (!wanted(name)) return;
    if (!first) std::printf("\n");
    first = false;
    if (args.section.empty()) std::printf("== %s\n", std::string(name).c_str());
    print();
  };
  section("formats", print_formats);
  section("presets", print_presets);
  section("algorithms", print_algorithms);
  section("distributions", print_distributions);
  section("backends", print_backends);
}

}  // namespace

void add_list_command(cli::Command& app) {
  auto args = std::make_shared<ListArgs>();
  cli::Command* cmd = app.add_subcommand(
      "list", "Formats, precision presets, algorithms, input distributions and backends");
  cmd->add_option("section", args->section,
                  "Only one section: formats, presets, algorithms, distributions, backends");
  cmd->add_flag("--json", args->json, "Machine-readable output");
  cmd->callback([args] { run_list(*args); });
}

}  // namespace attndev::app
