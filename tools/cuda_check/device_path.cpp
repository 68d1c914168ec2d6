// `attndev_cuda_check device`: the run-level cuda backend on a GPU against the CPU path, through
// lib/measure's named checks. One line per check, "PASS|FAIL <part> <case>: <detail>", then
// "<n> checks compared, <f> failed" (scripts/gpu-check/golden-inputs.sh and device-twins.sh read
// both).
//   inputs   the input kernel vs inputs::make_inputs, every distribution and input format: bits
//   golden   the device golden vs attention::golden: bits of O, and 1e-12 relative (the issue's
//            bar) as its own line, up to N = golden_n
//   twins    every algorithm the device runs x every preset (and unfused) x the twin cases: bits
//            of O (lse goes through log(), libdevice's on the device: the GPU test holds it to
//            test/cuda/lse_tolerance.hpp's bound)
#include "cuda_check/device_path.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <tuple>
#include <vector>

#include "attention/attention.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda_check/checks.hpp"
#include "measure/checks.hpp"

namespace attndev::cuda_check {

namespace {

struct Tally {
  int compared = 0, failed = 0;
  void line(bool pass, const std::string& part, const std::string& what,
            const std::string& detail) {
    ++compared;
    failed += pass ? 0 : 1;
    std::printf("%s %s %s: %s\n", pass ? "PASS" : "FAIL", part.c_str(), what.c_str(),
                detail.c_str());
    std::fflush(stdout);
  }
  void not_run(const std::string& part, const std::string& what, const std::string& why) {
    ++failed;
    std::printf("FAIL %s %s: did not run: %s\n", part.c_str(), what.c_str(), why.c_str());
  }
};

std::string shape_text(const attention::Shape& s) {
  return "B=" + std::to_string(s.batch) + " H=" + std::to_string(s.heads) +
         " Nq=" + std::to_string(s.seq_q) + " Nkv=" + std::to_string(s.seq_kv) +
         " d=" + std::to_string(s.head_dim);
}

void check_inputs(Tally& t) {
  const attention::Shape shapes[] = {{2, 3, 37, 19, 13}, {1, 2, 4099, 1031, 128}};
  std::uint64_t seed = 41;
  for (const attention::Shape& s : shapes)
    for (const inputs::Distribution& d : input_distributions())
      for (numerics::Format f : kInputFormats) {
        const std::string what = d.describe() + " " + numerics::format_name(f) + " " +
                                 shape_text(s) + " seed=" + std::to_string(seed);
        try {
          const attention::Inputs dev = cuda::draw_inputs_on_device(s, d.params(), seed, f);
          const attention::Inputs cpu = inputs::make_inputs(s, d, seed, f);
          bool pass = true;
          std::string detail;
          for (const auto& [name, a, b] :
               {std::tuple{"Q", &dev.q, &cpu.q}, std::tuple{"K", &dev.k, &cpu.k},
                std::tuple{"V", &dev.v, &cpu.v}}) {
            const measure::CheckResult c = measure::bit_identical(a->data, b->data);
            pass = pass && c.pass;
            detail += std::string(detail.empty() ? "" : "; ") + name + " " + c.detail;
          }
          t.line(pass, "inputs", what, detail);
        } catch (const std::exception& e) {
          t.not_run("inputs", what, e.what());
        }
        ++seed;
      }
}

void check_golden(Tally& t, int golden_n) {
  struct GoldenCase {
    attention::Shape shape;
    bool causal;
    inputs::Distribution dist;
  };
  std::vector<GoldenCase> cases = {
      {{1, 2, 301, 301, 64}, true, inputs::Distribution::normal(0.0, 1.0)},
      {{2, 1, 200, 517, 128}, false, inputs::Distribution::uniform(0.0, 1.0)},
      {{1, 1, 517, 200, 33}, true, {inputs::Distribution::Kind::outlier, 0, 1, 10, 0.01}},
  };
  for (int n = 4096; n <= golden_n; n *= 2)
    cases.push_back({{1, 1, n, n, 128}, n % 8192 == 0, inputs::Distribution::normal(0.0, 1.0)});
  std::uint64_t seed = 9;
  for (const GoldenCase& g : cases) {
    attention::Options o;
    o.causal = g.causal;
    const std::string what = shape_text(g.shape) + (g.causal ? " causal " : " ") +
                             g.dist.describe() + " seed=" + std::to_string(seed);
    const attention::Inputs in =
        inputs::make_inputs(g.shape, g.dist, seed++, numerics::Format::bf16);
    const cuda::CudaRunResult dev = cuda::golden_on_device(in, o);
    if (dev.status != cuda::RunStatus::ok) {
      t.not_run("golden", what, dev.status_text());
      continue;
    }
    const attention::Output cpu = attention::golden(in, o);
    double diff = 0;
    for (std::size_t i = 0; i < cpu.o.data.size(); ++i)
      diff = std::max(diff, std::fabs(cpu.o.data[i] - dev.output.o.data[i]));  // NaN: fails below
    const double rel = diff / measure::max_abs_finite(cpu.o.data);
    char buf[96];
    std::snprintf(buf, sizeof buf, "max|O_gpu - O_cpu| / max|O_cpu| = %.3g (bar 1e-12)", rel);
    t.line(rel <= 1e-12, "golden-1e-12", what, buf);
    const measure::CheckResult bits = measure::bit_identical(dev.output.o.data, cpu.o.data);
    t.line(bits.pass, "golden-bits", what, bits.detail);
  }
}

void check_twin(Tally& t, attention::Algorithm a, const numerics::PrecisionPolicy& policy,
                const attention::Inputs& in, const attention::Options& options,
                const std::string& what) {
  const cuda::CudaRunResult dev = cuda::run_twin(a, policy, in, options);
  if (dev.status != cuda::RunStatus::ok) {
    t.not_run("twin", what, dev.status_text());
    return;
  }
  const attention::Output cpu = attention::run(a, policy, in, options);
  const measure::CheckResult bits = measure::bit_identical(dev.output.o.data, cpu.o.data);
  t.line(bits.pass, "twin", what, bits.detail);
}

void check_twins(Tally& t) {
  std::uint64_t seed = 1000;
  for (const NamedPolicy& named : twin_policies())
    for (const TwinCase& c : twin_cases())
      for (attention::Algorithm a : {attention::Algorithm::baseline, attention::Algorithm::flash1,
                                     attention::Algorithm::flash2}) {
        const std::string what = std::string(attention::algorithm_name(a)) + " " + named.name +
                                 " | " + c.name + " seed=" + std::to_string(seed);
        const attention::Inputs in =
            inputs::make_inputs(c.shape, c.dist, seed++, named.policy.input);
        check_twin(t, a, named.policy, in, c.options(), what);
      }
  // The fp8 algorithms on FA-3's inputs (fp16 before quantization), where d is a power of two
  // (the Hadamard rotation needs one).
  numerics::PrecisionPolicy e4m3 = numerics::find_preset("fp8-e4m3")->policy;
  e4m3.input = numerics::Format::fp16;
  for (const TwinCase& c : twin_cases()) {
    if ((c.shape.head_dim & (c.shape.head_dim - 1)) != 0) continue;
    for (attention::Algorithm a : attention::kFp8Algorithms) {
      const std::string what = std::string(attention::algorithm_name(a)) +
                               " fp8-e4m3 (fp16 inputs) | " + c.name +
                               " seed=" + std::to_string(seed);
      const attention::Inputs in = inputs::make_inputs(c.shape, c.dist, seed++, e4m3.input);
      check_twin(t, a, e4m3, in, c.options(), what);
    }
  }
}

}  // namespace

int run_device_checks(const std::string& part, int golden_n) {
  Tally t;
  if (part == "inputs" || part == "all") check_inputs(t);
  if (part == "golden" || part == "all") check_golden(t, golden_n);
  if (part == "twins" || part == "all") check_twins(t);
  std::printf("\n%d checks compared, %d failed\n", t.compared, t.failed);
  if (t.compared == 0) return 3;
  return t.failed == 0 ? 0 : 1;
}

}  // namespace attndev::cuda_check
