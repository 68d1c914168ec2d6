// Host-only: the dispatch table's supported/unsupported answers (lib/cuda/dispatch.hpp). Runs in
// every build, with or without CUDA, because dispatch.hpp is plain C++.
//
// The property that matters most: select() either calls the visitor exactly once (and says
// "supported") or never (and gives a reason) — the capability answer and the launch come from
// the same function and cannot disagree.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "cuda/dispatch.hpp"

using namespace attndev;
using cuda::Kernel;
using cuda::MatElement;

namespace {

numerics::PrecisionPolicy preset(const char* name) {
  const numerics::PolicyPreset* p = numerics::find_preset(name);
  REQUIRE(p != nullptr);
  return p->policy;
}

attention::Options tiles(int br, int bc) {
  attention::Options o;
  o.block_r = br;
  o.block_c = bc;
  return o;
}

// What the visitor saw: one string per call.
struct Record {
  std::vector<std::string> calls;
  template <class Tag>
  void operator()(Tag) {
    if constexpr (requires { Tag::kHeadDim; }) {
      calls.push_back(std::string("tc:") + cuda::mat_element_name(Tag::kElement) + ":" +
                      std::to_string(Tag::kHeadDim) + ":" + std::to_string(Tag::kBlockM) + "x" +
                      std::to_string(Tag::kBlockN));
    } else if constexpr (requires { Tag::kAlgorithm; }) {
      calls.push_back(std::string("faithful:") + attention::algorithm_name(Tag::kAlgorithm));
    } else {
      calls.push_back(std::string("baseline:") + cuda::mat_element_name(Tag::kElement));
    }
  }
};

std::string chosen(Kernel k, const numerics::PrecisionPolicy& p, attention::Shape s,
                   attention::Options o) {
  Record rec;
  const cuda::Selection sel = cuda::select(k, p, s, o, [&](auto tag) { rec(tag); });
  REQUIRE(sel.supported == (rec.calls.size() == 1));
  REQUIRE(rec.calls.size() <= 1);
  return sel.supported ? rec.calls[0] : "unsupported: " + sel.reason;
}

}  // namespace

TEST_CASE("faithful kernels accept every preset policy and any tile", "[cuda][dispatch]") {
  int checked = 0, emulator_only = 0;
  for (const numerics::PolicyPreset& pp : numerics::kPolicyPresets) {
    // PyTorch's CPU flash kernel's softmax form (torch-cpu-flash-*) and the tensor-core models
    // (quant-fp16-sm*: "mma") run on the emulator only.
    if (pp.policy.softmax != numerics::SoftmaxForm::fa2 ||
        pp.policy.mma != numerics::mma::Arch::none) {
      const attention::Shape s{1, 1, 113, 75, 33};
      CHECK_THAT(chosen(Kernel::flash2, pp.policy, s, tiles(64, 64)),
                 Catch::StartsWith("unsupported: ") && Catch::Contains("emulator"));
      ++emulator_only;
      continue;
    }
    for (auto [br, bc] : {std::pair{1, 1}, std::pair{7, 5}, std::pair{64, 64}, std::pair{3, 128}}) {
      const attention::Shape s{1, 1, 113, 75, 33};
      const std::string f2 = chosen(Kernel::flash2, pp.policy, s, tiles(br, bc));
      const std::string f1 = chosen(Kernel::flash1, pp.policy, s, tiles(br, bc));
      CHECK(f2 == "faithful:flash2");
      CHECK(f1 == "faithful:flash1");
      checked += (f2 == "faithful:flash2") + (f1 == "faithful:flash1");  // accepted ones only
    }
  }
  // Every torch-cpu-flash-* preset (AVX2 and AVX-512 builds, bf16 and fp16) and every preset with
  // a tensor-core profile, no other.
  const auto emulator_presets = std::count_if(
      std::begin(numerics::kPolicyPresets), std::end(numerics::kPolicyPresets),
      [](const numerics::PolicyPreset& pp) {
        return pp.name.starts_with("torch-cpu-flash-") || pp.name.starts_with("quant-fp16-sm");
      });
  CHECK(emulator_presets >= 5);
  CHECK(emulator_only == emulator_presets);
  CHECK(checked == 2 * 4 * (static_cast<int>(std::size(numerics::kPolicyPresets)) - emulator_only));
}

TEST_CASE("flash2-tc picks the table row for format, head dim and tile", "[cuda][dispatch]") {
  const attention::Shape s64{2, 3, 257, 300, 64}, s128{1, 1, 1, 1, 128};
  CHECK(chosen(Kernel::flash2_tc, preset("kernel-bf16"), s64, tiles(64, 64)) == "tc:bf16:64:64x64");
  CHECK(chosen(Kernel::flash2_tc, preset("kernel-bf16"), s64, tiles(128, 64)) ==
        "tc:bf16:64:128x64");
  CHECK(chosen(Kernel::flash2_tc, preset("kernel-bf16"), s128, tiles(128, 64)) ==
        "tc:bf16:128:128x64");
  CHECK(chosen(Kernel::flash2_tc, preset("kernel-fp16"), s128, tiles(64, 64)) ==
        "tc:fp16:128:64x64");
  CHECK(chosen(Kernel::flash2_tc, preset("kernel-fp16"), s64, tiles(128, 64)) ==
        "tc:fp16:64:128x64");
}

TEST_CASE("flash2-tc says why it cannot run, and never falls back", "[cuda][dispatch]") {
  const attention::Shape s96{1, 1, 64, 64, 96}, s64{1, 1, 64, 64, 64};
  std::string r = chosen(Kernel::flash2_tc, preset("kernel-bf16"), s96, tiles(64, 64));
  CHECK(r.find("unsupported: flash2-tc: head_dim 96") == 0);

  r = chosen(Kernel::flash2_tc, preset("kernel-bf16"), s64, tiles(32, 32));
  CHECK(r.find("tile Br x Bc = 32x32") != std::string::npos);
  CHECK(r.find("have 64x64, 128x64") != std::string::npos);

  r = chosen(Kernel::flash2_tc, preset("fp8-e4m3"), s64, tiles(64, 64));
  CHECK(r.find("inputs must be bf16 or fp16, policy has fp8-e4m3") != std::string::npos);

  for (const char* name : {"working-bf16", "torch-math-fp16", "fp32", "fp64"}) {
    INFO(name);
    CHECK(chosen(Kernel::flash2_tc, preset(name), s64, tiles(64, 64)).rfind("unsupported:", 0) ==
          0);
  }
  numerics::PrecisionPolicy unfused = preset("kernel-bf16");
  unfused.fma = false;
  CHECK(chosen(Kernel::flash2_tc, unfused, s64, tiles(64, 64)).find("only the kernel-bf16") !=
        std::string::npos);
}

TEST_CASE("flash2-tc decides the grid limit on batch x heads itself", "[cuda][dispatch]") {
  // The launcher has no check of its own (it used to throw after "supported"): dispatch answers.
  const attention::Shape at_limit{5, 13107, 64, 64, 64};    // 65535 (batch x head) grid rows
  const attention::Shape over_limit{4, 16384, 64, 64, 64};  // 65536
  CHECK(chosen(Kernel::flash2_tc, preset("kernel-bf16"), at_limit, tiles(64, 64)) ==
        "tc:bf16:64:64x64");
  const std::string r = chosen(Kernel::flash2_tc, preset("kernel-bf16"), over_limit, tiles(64, 64));
  CHECK(r.find("unsupported: flash2-tc: batch x heads = 65536 exceeds the grid's limit of 65535") ==
        0);
}

TEST_CASE("baseline maps policies onto cuBLAS operand and compute types", "[cuda][dispatch]") {
  const attention::Shape s{1, 2, 9, 17, 5};
  const attention::Options o = tiles(64, 64);
  CHECK(chosen(Kernel::baseline, preset("torch-math-bf16"), s, o) == "baseline:bf16");
  CHECK(chosen(Kernel::baseline, preset("working-fp16"), s, o) == "baseline:fp16");
  CHECK(chosen(Kernel::baseline, preset("kernel-bf16"), s, o) == "baseline:bf16");
  CHECK(chosen(Kernel::baseline, preset("fp32"), s, o) == "baseline:fp32");
  CHECK(chosen(Kernel::baseline, preset("fp64"), s, o) == "baseline:fp64");

  numerics::PrecisionPolicy tf32 = preset("fp32");
  tf32.input = numerics::Format::tf32;
  tf32.prob = numerics::Format::tf32;
  CHECK(chosen(Kernel::baseline, tf32, s, o) == "baseline:tf32");

  CHECK(chosen(Kernel::baseline, preset("fp8-e4m3"), s, o).find("no cuBLAS GEMM for fp8-e4m3") !=
        std::string::npos);
  numerics::PrecisionPolicy mixed = preset("kernel-bf16");
  mixed.prob = numerics::Format::fp32;
  CHECK(chosen(Kernel::baseline, mixed, s, o).find("prob (fp32) must equal input (bf16)") !=
        std::string::npos);
  numerics::PrecisionPolicy wide_acc = preset("torch-math-bf16");
  wide_acc.score_accum = wide_acc.out_accum = numerics::Format::fp64;
  CHECK(chosen(Kernel::baseline, wide_acc, s, o).find("accumulate in fp32") != std::string::npos);
  numerics::PrecisionPolicy unfused = preset("fp32");
  unfused.fma = false;
  CHECK(chosen(Kernel::baseline, unfused, s, o).find("fma=false") != std::string::npos);
}

TEST_CASE("supported iff the visitor ran, reason iff not, over a product of inputs",
          "[cuda][dispatch]") {
  int supported = 0, unsupported = 0;
  for (Kernel k : cuda::kAllKernels) {
    for (const numerics::PolicyPreset& pp : numerics::kPolicyPresets) {
      for (int d : {1, 63, 64, 96, 128, 256}) {
        for (auto [br, bc] : {std::pair{64, 64}, std::pair{128, 64}, std::pair{16, 16}}) {
          int calls = 0;
          const cuda::Selection sel =
              cuda::select(k, pp.policy, {1, 1, 77, 77, d}, tiles(br, bc), [&](auto) { ++calls; });
          INFO(cuda::kernel_name(k) << " " << pp.name << " d=" << d << " " << br << "x" << bc);
          CHECK(calls == (sel.supported ? 1 : 0));
          CHECK(sel.reason.empty() == sel.supported);
          if (!sel.supported) CHECK(sel.reason.rfind(cuda::kernel_name(k), 0) == 0);
          (sel.supported ? supported : unsupported) += 1;
        }
      }
    }
  }
  // Both outcomes occur, so neither branch of the property was vacuous.
  CHECK(supported > 0);
  CHECK(unsupported > 0);
}

TEST_CASE("kernel names round-trip", "[cuda][dispatch]") {
  for (Kernel k : cuda::kAllKernels) {
    Kernel back{};
    REQUIRE(cuda::parse_kernel(cuda::kernel_name(k), back));
    CHECK(back == k);
  }
  Kernel k{};
  CHECK_FALSE(cuda::parse_kernel("flash3", k));
  CHECK(cuda::kernel_for(attention::Algorithm::flash2) == Kernel::flash2);
  CHECK(cuda::kernel_for(attention::Algorithm::baseline) == Kernel::baseline);
  // Algorithms without a CUDA kernel say so instead of mapping onto another kernel.
  int without = 0;
  for (attention::Algorithm a : attention::kFp8Algorithms) {
    CHECK_FALSE(cuda::kernel_for(a).has_value());
    ++without;
  }
  CHECK(without > 0);
}
