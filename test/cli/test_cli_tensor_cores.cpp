// The tensor-core model from the command line: a policy's "mma" refused by name where the
// architecture lacks the instruction (exit 2, from point, validate and gemm), a twin asked for a
// head dim its kernel lacks is a skipped row with the reason, and `attndev gemm` reports the
// accumulation error (Hopper's fp8 larger than fp32's, sm100's fp8 at fp32's level).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>

#include "spawn.hpp"

namespace fs = std::filesystem;
using namespace attndev::test;

TEST_CASE("a tensor-core profile without the policy's input type is refused by name, exit 2",
          "[cli][mma]") {
  const std::string bad = R"({"base": "fp8-e4m3", "mma": "sm80"})";
  const std::string want = "profiles that do: sm89, sm90, sm100";
  const Result p =
      run_cli({"point", "--algo", "flash2", "--policy", bad, "--n", "32", "--d", "16"});
  CHECK(p.code == 2);
  CHECK_THAT(p.err, Catch::Contains(want));
  const fs::path cfg =
      write_config("mma_fp8_sm80", R"({"name": "mma", "axes": {"seq_len": [32], "head_dim": 16},
        "variants": [{"algorithm": "flash2", "policy": )" +
                                       bad + "}]}");
  const Result v = run_cli({"validate", cfg.string()});
  CHECK(v.code == 2);
  CHECK_THAT(v.err, Catch::Contains(want) && Catch::Contains("policy"));
  const Result g = run_cli({"gemm", "--arch", "sm80", "--input", "e4m3"});
  CHECK(g.code == 2);
  CHECK_THAT(g.err, Catch::Contains(want));
  const Result w = run_cli({"gemm", "--arch", "sm80", "--instruction", "wgmma", "--input", "bf16"});
  CHECK(w.code == 2);
  CHECK_THAT(w.err, Catch::Contains("sm80 has no wgmma instruction"));
}

TEST_CASE("flash2-tc-twin with a head dim flash2-tc lacks is a skipped row with the reason",
          "[cli][mma]") {
  const Result r = run_cli({"point", "--algo", "flash2-tc-twin", "--policy",
                            R"({"base": "kernel-bf16", "mma": "sm90"})", "--n", "64", "--d", "96"});
  CHECK(r.code == 3);  // nothing compared
  CHECK_THAT(r.err, Catch::Contains("head_dim 96 not instantiated in flash2-tc (have 64, 128)"));
  const Result ok =
      run_cli({"point", "--algo", "flash2-tc-twin", "--policy",
               R"({"base": "kernel-fp16", "mma": "sm80"})", "--n", "64", "--d", "64"});
  INFO(ok.err);
  CHECK(ok.code == 0);
}

TEST_CASE("attndev gemm: Hopper's fp8 accumulation error beside fp32's", "[cli][mma]") {
  auto run = [](const char* arch) {
    const Result r = run_cli({"gemm", "--arch", arch, "--input", "e4m3", "--m", "8", "--n", "8",
                              "--k", "1024", "--distribution", "uniform(0,1)", "--json"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out);
  };
  const nlohmann::json h = run("sm90"), b = run("sm100");
  CHECK(h.at("frac_bits") == 13);
  CHECK(h.at("e8m13") == true);
  // Truncation to 13 bits over 1024 positive terms: far above an fp32 chain's error.
  CHECK(h.at("tensor_cores").at("max_rel").get<double>() >
        100 * h.at("fp32_fma").at("max_rel").get<double>());
  CHECK(b.at("tensor_cores").at("max_rel").get<double>() < 1e-5);
}
