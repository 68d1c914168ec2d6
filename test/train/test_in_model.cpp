// In-model comparison and captures (lib/train/in_model.hpp): shadows never change training, the
// in_model.csv columns are what a hand computation on the captured Q, K, V gives, and captures
// hold exactly what the attention layer saw.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "attention/attention.hpp"
#include "experiment/spec/config.hpp"
#include "io/csv.hpp"
#include "io/safetensors.hpp"
#include "io/tensor_file.hpp"
#include "metrics/deviation.hpp"
#include "numerics/round.hpp"
#include "train/in_model.hpp"
#include "train/study.hpp"
#include "train/train_config.hpp"
#include "train/trainer.hpp"
#include "files.hpp"
#include "train/corpus_fixture.hpp"

using namespace attndev;
using namespace attndev::train;
using nlohmann::json;
namespace fs = std::filesystem;
using attndev::test::slurp;
using attndev::test::test_corpus;

namespace {

// Two layers, two heads, a context that is not a multiple of the tiles (tails are exercised).
json tiny_json(const std::string& precision, const std::string& algorithm,
               const std::string& policy, int steps) {
  return {
      {"name", "tiny"},
      {"steps", steps},
      {"batch", 3},
      {"seed", 7},
      {"precision", precision},
      {"attention", {{"algorithm", algorithm}, {"policy", policy}, {"block_r", 8}, {"block_c", 8}}},
      {"model",
       {{"d_model", 16}, {"heads", 2}, {"layers", 2}, {"context", 20}, {"mlp_hidden", 32}}},
      {"optimizer", {{"lr", 1e-2}, {"warmup_steps", 2}}},
      {"snapshot_every", 2}};
}

json shadows_json() {
  return json::array(
      {{{"algorithm", "baseline"}, {"policy", "torch-math-bf16"}},
       {{"algorithm", "flash1"}, {"policy", "working-bf16"}},
       {{"algorithm", "flash2"}, {"policy", "fp32"}, {"block_r", 5}, {"block_c", 3}}});
}

fs::path scratch(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("attndev_in_model_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

bool same_training(const RunResult& a, const RunResult& b) {
  if (a.final_weights.size() != b.final_weights.size() || a.log.size() != b.log.size())
    return false;
  for (std::size_t i = 0; i < a.final_weights.size(); ++i)
    if (a.final_weights[i].values != b.final_weights[i].values) return false;
  for (std::size_t i = 0; i < a.log.size(); ++i)
    if (a.log[i].loss != b.log[i].loss || a.log[i].grad_norm != b.log[i].grad_norm ||
        a.log[i].loss_scale != b.log[i].loss_scale)
      return false;
  return true;
}

// O = softmax(scale * Q K^T) V with the causal mask, for one (b, h), in long double, written out
// here rather than taken from lib/attention: an independent golden.
std::vector<double> hand_attention(const attention::Inputs& in, int b, int h, double scale) {
  const int n = in.q.rows, d = in.q.cols;
  std::vector<double> o(std::size_t(n) * d);
  for (int i = 0; i < n; ++i) {
    std::vector<long double> s(std::size_t(i) + 1);
    long double m = -INFINITY;
    for (int j = 0; j <= i; ++j) {  // causal: key j visible to query i iff j <= i (N_q == N_kv)
      long double dot = 0;
      for (int c = 0; c < d; ++c)
        dot += static_cast<long double>(in.q.at(b, h, i, c)) * in.k.at(b, h, j, c);
      s[std::size_t(j)] = dot * scale;
      m = std::max(m, s[std::size_t(j)]);
    }
    long double l = 0;
    for (long double& x : s) l += (x = std::exp(x - m));
    for (int c = 0; c < d; ++c) {
      long double acc = 0;
      for (int j = 0; j <= i; ++j) acc += s[std::size_t(j)] * in.v.at(b, h, j, c);
      o[std::size_t(i) * d + c] = static_cast<double>(acc / l);
    }
  }
  return o;
}

struct Hand {
  double max_abs = 0, mean_abs = 0, rmse = 0;
};

// max, mean and rms of |x - ref| by plain loops.
Hand hand_deviation(const std::vector<double>& x, const std::vector<double>& ref) {
  REQUIRE(x.size() == ref.size());
  Hand h;
  long double sum = 0, sq = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const long double e = std::fabs(static_cast<long double>(x[i]) - ref[i]);
    h.max_abs = std::max(h.max_abs, static_cast<double>(e));
    sum += e;
    sq += e * e;
  }
  h.mean_abs = static_cast<double>(sum / x.size());
  h.rmse = static_cast<double>(std::sqrt(sq / x.size()));
  return h;
}

// Values of head h over all batch elements, b-major, as in_model.csv's per-head rows.
std::vector<double> head_of(const attention::Tensor& t, int h) {
  std::vector<double> r;
  for (int b = 0; b < t.batch; ++b)
    r.insert(r.end(), t.head_ptr(b, h), t.head_ptr(b, h) + std::size_t(t.rows) * t.cols);
  return r;
}

attention::Tensor tensor_from(const io::NamedTensor& n) {
  REQUIRE(n.shape.size() == 4);
  attention::Tensor t(int(n.shape[0]), int(n.shape[1]), int(n.shape[2]), int(n.shape[3]));
  REQUIRE(t.data.size() == n.values.size());
  t.data = n.values;
  return t;
}

// in_model.csv rows keyed by (step, layer, head, variant) -> column -> text.
std::map<std::string, std::map<std::string, std::string>> read_in_model(const fs::path& p) {
  const auto rows = io::parse_csv(slurp(p));
  REQUIRE(rows.size() > 1);
  std::map<std::string, std::map<std::string, std::string>> out;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    std::map<std::string, std::string> r;
    for (std::size_t c = 0; c < rows[0].size(); ++c) r[rows[0][c]] = rows[i].at(c);
    out[r["step"] + "|" + r["layer"] + "|" + r["head"] + "|" + r["variant"]] = r;
  }
  return out;
}

}  // namespace

TEST_CASE("shadows and captures do not change training by a single bit", "[train][in_model]") {
  const Corpus corpus = test_corpus();
  for (const auto& [precision, algorithm, policy] :
       {std::tuple{"bf16", "flash2", "kernel-bf16"},
        std::tuple{"fp16", "baseline", "torch-math-fp16"}}) {
    INFO(precision << " " << algorithm << " " << policy << ", seed 7");
    const json plain = tiny_json(precision, algorithm, policy, 5);
    json shadowed = plain;
    shadowed["shadow"] = shadows_json();
    shadowed["shadow_steps"] = {0, 1, 2, 3, 4};  // every step
    const TrainConfig a = parse_train_config(plain);
    const TrainConfig b = parse_train_config(shadowed);
    REQUIRE(b.shadows.size() == 3);
    RunOptions quiet;
    quiet.threads = 2;
    const RunResult ra = train_run(a, corpus, quiet);
    RunOptions with_files = quiet;
    with_files.out_dir = scratch(std::string("bits_") + precision);
    with_files.capture_steps = {0, 3};
    const RunResult rb = train_run(b, corpus, with_files);
    CHECK(same_training(ra, rb));
    // The shadows did run: 5 steps x 2 layers x (driver + 3 shadows) "all" rows, none exact.
    CHECK(rb.in_model.size() == 5 * 2 * 4);
    for (const InModelRow& r : rb.in_model) {
      INFO(r.variant << " step " << r.step << " layer " << r.layer);
      CHECK(r.vs_golden.max_abs > 0.0);
      CHECK(r.vs_golden.nan_count == 0);
    }
    CHECK(fs::exists(capture_path(with_files.out_dir, 3, 1)));
  }
}

TEST_CASE("in-model deviation equals a hand computation on the captured Q, K, V",
          "[train][in_model]") {
  const Corpus corpus = test_corpus();
  // fp32 training under bf16 attention policies: the raw Q, K, V are fp32 values, so each
  // variant's input rounding matters (the fp32 shadow reads them unrounded).
  json j = tiny_json("fp32", "flash2", "kernel-bf16", 4);
  j["shadow"] = shadows_json();
  j["shadow_steps"] = {3};
  const TrainConfig cfg = parse_train_config(j);
  RunOptions o;
  o.threads = 2;
  o.out_dir = scratch("hand");
  o.capture_steps = {3};
  train_run(cfg, corpus, o);
  const auto rows = read_in_model(o.out_dir / "in_model.csv");
  // 1 step x 2 layers x 4 variants x (all + 2 heads)
  CHECK(rows.size() == 2 * 4 * 3);

  for (int layer = 0; layer < 2; ++layer) {
    INFO("layer " << layer);
    const auto file = io::read_safetensors(capture_path(o.out_dir, 3, layer));
    CHECK(file.metadata.at("step") == "3");
    CHECK(file.metadata.at("layer") == std::to_string(layer));
    CHECK(file.metadata.at("policy") == "kernel-bf16");
    CHECK(file.metadata.at("causal") == "true");
    std::map<std::string, attention::Tensor> t;
    for (const auto& n : file.tensors) t[n.name] = tensor_from(n);
    REQUIRE(t.size() == 3);
    const attention::Inputs raw{t.at("q"), t.at("k"), t.at("v")};
    CHECK(raw.q.batch == 3);
    CHECK(raw.q.heads == 2);
    CHECK(raw.q.rows == 20);
    CHECK(raw.q.cols == 8);
    const double scale = std::stod(file.metadata.at("scale"));
    CHECK(scale == 1.0 / std::sqrt(8.0));

    attention::Options options;
    options.causal = true;
    options.threads = 1;
    // The driver first: its O is recomputed from the capture, then every shadow.
    struct Variant {
      std::string name;
      attention::Algorithm algorithm;
      std::string policy;
      int br, bc;
    };
    const std::vector<Variant> variants = {
        {"flash2/kernel-bf16", attention::Algorithm::flash2, "kernel-bf16", 8, 8},
        {"baseline/torch-math-bf16", attention::Algorithm::baseline, "torch-math-bf16", 8, 8},
        {"flash1/working-bf16", attention::Algorithm::flash1, "working-bf16", 8, 8},
        {"flash2/fp32/5x3", attention::Algorithm::flash2, "fp32", 5, 3}};
    attention::Tensor driver_o;
    for (const Variant& v : variants) {
      INFO(v.name);
      const numerics::PrecisionPolicy policy = numerics::find_preset(v.policy)->policy;
      // As point does: the inputs rounded once to the variant's input format, the golden on them.
      const attention::Inputs in = rounded_inputs(raw, policy);
      options.block_r = v.br;
      options.block_c = v.bc;
      const attention::Tensor out = attention::run(v.algorithm, policy, in, options).o;
      if (driver_o.data.empty()) driver_o = out;
      for (int head = -1; head < 2; ++head) {
        INFO("head " << head);
        const auto& row = rows.at("3|" + std::to_string(layer) + "|" +
                                  (head < 0 ? "all" : std::to_string(head)) + "|" + v.name);
        CHECK(row.at("role") == (v.name == variants[0].name ? "driver" : "shadow"));
        std::vector<double> x, hand_golden, drv;
        for (int b = 0; b < 3; ++b)
          for (int h = 0; h < 2; ++h) {
            if (head >= 0 && h != head) continue;
            const std::vector<double> g = hand_attention(in, b, h, scale);
            hand_golden.insert(hand_golden.end(), g.begin(), g.end());
            const std::size_t n = std::size_t(in.q.rows) * in.q.cols;
            x.insert(x.end(), out.head_ptr(b, h), out.head_ptr(b, h) + n);
            drv.insert(drv.end(), driver_o.head_ptr(b, h), driver_o.head_ptr(b, h) + n);
          }
        // Gathered b-major, h inner: for "all" that is the tensor's own order.
        CHECK(x == (head < 0 ? out.data : head_of(out, head)));
        CHECK(std::stoll(row.at("count")) == std::int64_t(x.size()));
        const Hand dev = hand_deviation(x, hand_golden);
        // The hand golden (long double, another summation order) differs from the FP64 golden
        // by a few fp64 ulps of |O| (|O| < 10 here: a margin of 1e-13), while the deviations
        // are 1e-8 (fp32) to 1e-3 (bf16) and a wrong input rounding or golden moves them by
        // 1e-8 or more.
        double max_golden = 0;
        for (double g : hand_golden) max_golden = std::max(max_golden, std::fabs(g));
        REQUIRE(max_golden < 10.0);
        const double margin = 1e-13;
        CHECK(std::stod(row.at("max_abs")) == Approx(dev.max_abs).epsilon(1e-9).margin(margin));
        CHECK(std::stod(row.at("mean_abs")) == Approx(dev.mean_abs).epsilon(1e-9).margin(margin));
        CHECK(std::stod(row.at("rmse")) == Approx(dev.rmse).epsilon(1e-9).margin(margin));
        CHECK(dev.max_abs > 0.0);
        const Hand vs = hand_deviation(x, drv);
        CHECK(std::stod(row.at("vs_driver_max_abs")) == Approx(vs.max_abs).epsilon(1e-12));
        CHECK(std::stod(row.at("vs_driver_mean_abs")) == Approx(vs.mean_abs).epsilon(1e-12));
        CHECK(std::stod(row.at("vs_driver_rmse")) == Approx(vs.rmse).epsilon(1e-12));
        // And bit for bit what lib/metrics gives against the FP64 golden, as `attndev point`
        // measures a file of inputs: the numbers in the CSV read back exactly.
        if (head < 0) {
          const attention::Tensor golden = attention::golden(in, options).o;
          double max_ref = 0;
          for (double g : golden.data) max_ref = std::max(max_ref, std::fabs(g));
          const metrics::Deviation m = metrics::compare(
              out.data, golden.data, numerics::traits(policy.output).unit_roundoff() * max_ref);
          CHECK(std::stod(row.at("max_abs")) == m.max_abs);
          CHECK(std::stod(row.at("mean_abs")) == m.mean_abs);
          CHECK(std::stod(row.at("rmse")) == m.rmse);
        }
      }
    }
  }
  fs::remove_all(o.out_dir.parent_path());
}

TEST_CASE("captures hold the raw Q, K, V that the layer rounded", "[train][in_model]") {
  const Corpus corpus = test_corpus();
  // fp32 training under a bf16 input policy: the capture keeps the fp32 values, and rounding
  // them to bf16 (what the policy's input stage does) changes some of them.
  const TrainConfig cfg = parse_train_config(tiny_json("fp32", "flash2", "kernel-bf16", 2));
  RunOptions o;
  o.threads = 1;
  o.out_dir = scratch("raw");
  o.capture_steps = {0, 1};
  train_run(cfg, corpus, o);
  for (int step : {0, 1}) {
    const fs::path f = capture_path(o.out_dir, step, 0);
    // Through lib/io's generic reader too, which is what a tool reading --inputs uses.
    const auto tensors = io::read_tensor_file(f);
    REQUIRE(tensors.size() == 3);
    int changed = 0;
    for (const auto& t : tensors) {
      CHECK(t.dtype == io::DType::f32);
      CHECK(t.shape == std::vector<std::int64_t>{3, 2, 20, 8});
      for (double v : t.values) {
        CHECK(std::isfinite(v));
        changed += numerics::round_to(numerics::Format::bf16, v) != v;
      }
    }
    CHECK(changed > 0);
    const auto meta = io::read_safetensors(f).metadata;
    CHECK(meta.at("format") == "attndev-qkv-1");
    CHECK(meta.at("precision") == "fp32");
    CHECK(meta.at("algorithm") == "flash2");
    CHECK(meta.at("run") == "tiny");
    CHECK(meta.at("block_r") == "8");
  }
  // Captures at step 0 and 1 differ: the weights moved between them.
  CHECK(io::read_tensor_file(capture_path(o.out_dir, 0, 0))[0].values !=
        io::read_tensor_file(capture_path(o.out_dir, 1, 0))[0].values);
  // A step outside the run is refused before anything runs.
  o.capture_steps = {2};
  CHECK_THROWS_AS(train_run(cfg, corpus, o), std::invalid_argument);
  fs::remove_all(o.out_dir.parent_path());
}

TEST_CASE("shadow configs: defaults, names and errors with their JSON path", "[train][config]") {
  using attndev::experiment::ConfigError;
  json j = tiny_json("bf16", "flash2", "kernel-bf16", 10);
  j["shadow"] = json::array({{{"algorithm", "baseline"}}});
  TrainConfig c = parse_train_config(j);
  REQUIRE(c.shadows.size() == 1);
  CHECK(c.shadows[0].name == "baseline/kernel-bf16");  // policy and tiles default to the driver's
  CHECK(c.shadows[0].block_r == 8);
  CHECK(c.shadow_steps == std::vector<int>{0, 2, 4, 6, 8});  // default: the snapshot steps
  j["shadow_steps"] = {{"every", 4}};
  CHECK(parse_train_config(j).shadow_steps == std::vector<int>{0, 4, 8});
  j["shadow_steps"] = {9, 3, 3};
  CHECK(parse_train_config(j).shadow_steps == std::vector<int>{3, 9});

  auto message = [](const json& bad) {
    try {
      parse_train_config(bad);
    } catch (const ConfigError& e) {
      return e.path() + ": " + e.message();
    }
    return std::string("no error");
  };
  json bad = j;
  bad["shadow_steps"] = {10};
  CHECK_THAT(message(bad), Catch::Contains("shadow_steps[0]"));
  bad = j;
  bad["shadow"][0]["algorithm"] = "flash3";
  CHECK_THAT(message(bad), Catch::Contains("shadow[0].algorithm") && Catch::Contains("flash2"));
  bad = j;
  bad["shadow"][0]["policy"] = "kernel-bf17";
  CHECK_THAT(message(bad), Catch::Contains("shadow[0].policy"));
  bad = j;
  bad["shadow"][0]["algorithm"] = "flash2";  // the driver's own name: ambiguous rows
  bad["shadow"][0]["policy"] = "kernel-bf16";
  CHECK_THAT(message(bad), Catch::Contains("shadow[0].name"));
  bad = j;
  // d = 8 is a power of 2; d = 6 cannot take the fp8 Hadamard: found before training.
  bad["model"]["d_model"] = 12;
  bad["shadow"][0] = {{"algorithm", "flash3-fp8"}, {"policy", "fp8-e4m3"}};
  CHECK_THAT(message(bad), Catch::Contains("shadow[0]"));
  bad = tiny_json("bf16", "flash2", "kernel-bf16", 10);
  bad["shadow_steps"] = {1};
  CHECK_THAT(message(bad), Catch::Contains("shadow_steps") && Catch::Contains("shadow"));
  bad["shadow"] = json::array({{{"algoritm", "baseline"}}});
  CHECK_THAT(message(bad), Catch::Contains("shadow[0].algoritm"));
}
