#include "train/in_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "config/policy_json.hpp"
#include "io/csv.hpp"
#include "io/json_values.hpp"
#include "io/safetensors.hpp"
#include "measure/measure.hpp"

namespace attndev::train {

namespace {

// The values of head h over every batch element: (B, N, d) flattened, b-major.
std::vector<double> head_values(const attention::Tensor& t, int h) {
  std::vector<double> r;
  const std::size_t per_head = static_cast<std::size_t>(t.rows) * t.cols;
  r.reserve(per_head * t.batch);
  for (int b = 0; b < t.batch; ++b)
    r.insert(r.end(), t.head_ptr(b, h), t.head_ptr(b, h) + per_head);
  return r;
}

// Relative errors are floored as everywhere else (measure::deviation): one unit roundoff of the
// variant's output format at the reference's scale.
metrics::Deviation deviation(std::span<const double> x, std::span<const double> ref,
                             numerics::Format output) {
  return measure::deviation(x, ref, measure::max_abs_finite(ref), output);
}

// Rows of one variant: "all" first, then each head. A variant whose inputs or golden are not
// finite (measure::unmeasurable) gets rows that say skipped, with NaN in place of every metric.
void add_rows(std::vector<InModelRow>& rows, InModelRow proto, const attention::Tensor& o,
              const measure::Golden& golden, const std::optional<std::string>& skip,
              const attention::Tensor& driver) {
  metrics::Deviation none;
  for (double* x : {&none.max_abs, &none.mean_abs, &none.std_abs, &none.rmse, &none.rel_l2,
                    &none.max_rel, &none.cos_sim})
    *x = NAN;
  if (skip) proto.status = "skipped: " + *skip;
  const auto measured = [&](std::span<const double> x, std::span<const double> ref) {
    return skip ? none : deviation(x, ref, proto.policy.output);
  };
  proto.head = -1;
  proto.vs_golden = measured(o.data, golden.output.o.data);
  proto.vs_driver = measured(o.data, driver.data);
  rows.push_back(proto);
  for (int h = 0; h < o.heads; ++h) {
    const std::vector<double> x = head_values(o, h);
    proto.head = h;
    proto.vs_golden = measured(x, head_values(golden.output.o, h));
    proto.vs_driver = measured(x, head_values(driver, h));
    rows.push_back(proto);
  }
}

std::string num(double x) {
  return io::format_number(x);
}

}  // namespace

attention::Inputs rounded_inputs(const attention::Inputs& raw,
                                 const numerics::PrecisionPolicy& policy) {
  attention::Inputs in = raw;
  for (attention::Tensor* t : {&in.q, &in.k, &in.v})
    for (double& x : t->data) x = policy.round(numerics::Stage::input, x);
  return in;
}

std::vector<InModelRow> in_model_rows(int step, const AttentionCall& call, const TrainConfig& cfg) {
  // One golden per distinct input rounding (usually one: every variant reads bf16, say).
  std::map<std::pair<numerics::Format, numerics::Overflow>, measure::Golden> goldens;
  auto golden_for = [&](const numerics::PrecisionPolicy& p,
                        const attention::Inputs& in) -> const measure::Golden& {
    const auto key = std::pair{p.input, p.fp8_overflow};
    auto it = goldens.find(key);
    if (it == goldens.end()) it = goldens.emplace(key, measure::golden_of(in, call.options)).first;
    return it->second;
  };

  std::vector<InModelRow> rows;
  InModelRow driver;
  driver.step = step;
  driver.layer = call.layer;
  driver.variant = driver_name(cfg);
  driver.driver = true;
  driver.algorithm = cfg.algorithm;
  driver.policy = cfg.policy;
  driver.block_r = call.options.block_r;
  driver.block_c = call.options.block_c;
  // The driver's golden is computed on exactly the inputs that ran (call.inputs).
  const measure::Golden& driver_golden = golden_for(cfg.policy, call.inputs);
  add_rows(rows, driver, call.output.o, driver_golden,
           measure::unmeasurable(call.inputs, driver_golden, cfg.policy.input), call.output.o);

  for (const ShadowSpec& s : cfg.shadows) {
    attention::Options options = call.options;
    options.block_r = s.block_r;
    options.block_c = s.block_c;
    const attention::Inputs in = rounded_inputs(call.raw, s.policy);
    const attention::Output out = attention::run(s.algorithm, s.policy, in, options);
    InModelRow r = driver;
    r.variant = s.name;
    r.driver = false;
    r.algorithm = s.algorithm;
    r.policy = s.policy;
    r.block_r = s.block_r;
    r.block_c = s.block_c;
    const measure::Golden& golden = golden_for(s.policy, in);
    add_rows(rows, r, out.o, golden, measure::unmeasurable(in, golden, s.policy.input),
             call.output.o);
  }
  return rows;
}

std::vector<std::string> in_model_columns() {
  return {"run",
          "replicate",
          "step",
          "layer",
          "head",
          "variant",
          "role",
          "algorithm",
          "policy",
          "block_r",
          "block_c",
          "count",
          "max_abs",
          "mean_abs",
          "rmse",
          "rel_l2",
          "nonfinite",
          "vs_driver_max_abs",
          "vs_driver_mean_abs",
          "vs_driver_rmse",
          "status"};
}

InModelLog::InModelLog(const std::filesystem::path& path, std::string run, int replicate)
    : out_(path), run_(std::move(run)), replicate_(replicate) {
  if (!out_) throw std::runtime_error("cannot write " + path.string());
  out_ << io::csv_record(in_model_columns()) << std::flush;
}

void InModelLog::write(const std::vector<InModelRow>& rows) {
  for (const InModelRow& r : rows) {
    const metrics::Deviation& g = r.vs_golden;
    const metrics::Deviation& d = r.vs_driver;
    out_ << io::csv_record({run_,
                            std::to_string(replicate_),
                            std::to_string(r.step),
                            std::to_string(r.layer),
                            r.head < 0 ? "all" : std::to_string(r.head),
                            r.variant,
                            r.driver ? "driver" : "shadow",
                            attention::algorithm_name(r.algorithm),
                            config::policy_label(r.policy),
                            std::to_string(r.block_r),
                            std::to_string(r.block_c),
                            std::to_string(g.count),
                            num(g.max_abs),
                            num(g.mean_abs),
                            num(g.rmse),
                            num(g.rel_l2),
                            std::to_string(g.nan_count + g.inf_count),
                            num(d.max_abs),
                            num(d.mean_abs),
                            num(d.rmse),
                            r.status});
  }
  out_ << std::flush;
  if (!out_) throw std::runtime_error("writing in_model.csv failed (disk full?)");
}

std::filesystem::path capture_path(const std::filesystem::path& run_dir, int step, int layer) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "step_%06d", step);
  return run_dir / "captures" / buf / ("layer_" + std::to_string(layer) + ".safetensors");
}

void write_capture(const std::filesystem::path& path, int step, const AttentionCall& call,
                   const TrainConfig& cfg) {
  const io::DType dtype = cfg.precision == Precision::fp64 ? io::DType::f64 : io::DType::f32;
  std::vector<io::NamedTensor> tensors;
  for (const auto& [name, t] :
       {std::pair{"q", &call.raw.q}, std::pair{"k", &call.raw.k}, std::pair{"v", &call.raw.v}}) {
    io::NamedTensor n;
    n.name = name;
    n.dtype = dtype;
    n.shape = {t->batch, t->heads, t->rows, t->cols};  // (B, H, N, d)
    n.values = t->data;
    tensors.push_back(std::move(n));
  }
  const double scale = call.options.scale ? *call.options.scale
                                          : 1.0 / std::sqrt(static_cast<double>(call.raw.q.cols));
  char scale_text[64];
  std::snprintf(scale_text, sizeof scale_text, "%.17g", scale);
  const io::TensorMetadata meta = {
      {"format", "attndev-qkv-1"},
      {"source",
       "attndev train: Q, K, V of one attention layer, before the policy's input "
       "rounding"},
      {"run", cfg.name},
      {"replicate", std::to_string(cfg.replicate)},
      {"step", std::to_string(step)},
      {"layer", std::to_string(call.layer)},
      {"seed", std::to_string(cfg.seed)},
      {"data_seed", std::to_string(cfg.data_seed)},
      {"precision", precision_name(cfg.precision)},
      {"algorithm", attention::algorithm_name(cfg.algorithm)},
      {"policy", config::policy_label(cfg.policy)},
      {"policy_stages", config::policy_stages_json(cfg.policy).dump()},
      {"block_r", std::to_string(call.options.block_r)},
      {"block_c", std::to_string(call.options.block_c)},
      {"causal", call.options.causal ? "true" : "false"},
      {"scale", scale_text},
      {"scale_placement",
       call.options.scale_placement == attention::ScalePlacement::scores ? "scores" : "query"}};
  std::filesystem::create_directories(path.parent_path());
  io::write_safetensors(path, tensors, meta);
}

std::string in_model_markdown(const std::vector<InModelRow>& rows) {
  std::ostringstream md;
  md << "| step | layer | variant | max \\|O - golden\\| | mean \\|O - golden\\| | rmse | mean / "
        "driver's mean | mean \\|O - O_driver\\| |\n|---|---|---|---|---|---|---|---|\n";
  std::map<std::pair<int, int>, double> driver_mean;  // (step, layer) -> driver's mean_abs
  for (const InModelRow& r : rows)
    if (r.head < 0 && r.driver) driver_mean[{r.step, r.layer}] = r.vs_golden.mean_abs;
  for (const InModelRow& r : rows) {
    if (r.head >= 0) continue;
    const double dm =
        driver_mean.count({r.step, r.layer}) ? driver_mean.at({r.step, r.layer}) : NAN;
    const double ratio =
        dm == 0.0 ? (r.vs_golden.mean_abs == 0.0 ? 1.0 : INFINITY) : r.vs_golden.mean_abs / dm;
    char vs_driver[32] = "-";
    if (!r.driver) std::snprintf(vs_driver, sizeof vs_driver, "%.3g", r.vs_driver.mean_abs);
    char line[512];
    std::snprintf(line, sizeof line, "| %d | %d | %s%s%s | %.3g | %.3g | %.3g | %.3g | %s |\n",
                  r.step, r.layer, r.variant.c_str(), r.driver ? " (driver)" : "",
                  r.status == "ok" ? "" : " (skipped: inputs or golden not finite)",
                  r.vs_golden.max_abs, r.vs_golden.mean_abs, r.vs_golden.rmse, ratio, vs_driver);
    md << line;
  }
  return md.str();
}

}  // namespace attndev::train
