// Every policy preset's results, pinned by a hash of their bits: computed with the emulator as it
// was before the tensor-core model (PrecisionPolicy::mma, commit 424529e) and unchanged by it. A
// change of any preset's arithmetic (a new policy field with a default that is not the old
// behaviour, a reordered sum) changes its hash; a deliberate change updates the table here and
// says why in its commit.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "attention/attention.hpp"
#include "numerics/policy.hpp"

using namespace attndev;

namespace {

std::uint64_t fnv1a(std::uint64_t h, const void* p, std::size_t n) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

// baseline, flash1 and flash2, causal and not, O and lse of each, on fixed inputs uniform in
// [-1, 1) from the bits of a fixed generator (no distribution object: those may differ between
// standard libraries), with tails in both sequences (77 queries, 93 keys, tiles 32 x 48).
std::uint64_t preset_hash(const numerics::PrecisionPolicy& policy) {
  attention::Inputs in;
  in.q = attention::Tensor(1, 2, 77, 64);  // (B, H, N_q, d)
  in.k = attention::Tensor(1, 2, 93, 64);  // (B, H, N_kv, d)
  in.v = attention::Tensor(1, 2, 93, 64);  // (B, H, N_kv, d)
  std::mt19937_64 rng(5);
  for (attention::Tensor* t : {&in.q, &in.k, &in.v})
    for (double& x : t->data)
      x = std::ldexp(static_cast<double>(static_cast<std::int64_t>(rng() >> 11)), -52) - 1.0;
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (attention::Algorithm a : attention::kAllAlgorithms) {
    for (bool causal : {false, true}) {
      attention::Options o;
      o.causal = causal;
      o.block_r = 32;
      o.block_c = 48;
      o.threads = 1;
      const attention::Output out = attention::run(a, policy, in, o);
      h = fnv1a(h, out.o.data.data(), out.o.data.size() * sizeof(double));
      h = fnv1a(h, out.lse.data(), out.lse.size() * sizeof(double));
    }
  }
  return h;
}

}  // namespace

TEST_CASE("every policy preset gives the bits it gave before the tensor-core model",
          "[presets][regression]") {
  struct Pinned {
    std::string_view preset;
    std::uint64_t hash;
  };
  // From commit 424529e (the same program linked against that tree's library).
  const Pinned pinned[] = {
      {"kernel-bf16", 0xd54b517b38157dd2ull},
      {"kernel-fp16", 0x85dd59b127467525ull},
      {"torch-cpu-flash-bf16", 0xb002ff67ddf568f6ull},
      {"torch-cpu-flash-fp16", 0x4f9a9f5657864270ull},
      {"framework-bf16", 0xe047dbc2fc46441full},
      {"framework-fp16", 0x1093257b3ec05421ull},
      {"framework-fp32", 0x0a8bbf1f7f2bfbc8ull},
      {"framework-fp64", 0xa26d48831714697cull},
      {"working-bf16", 0x29f944d33b3be48dull},
      {"working-fp16", 0x743d760f2f9b8c55ull},
      {"torch-math-bf16", 0x97fcee373db5d321ull},
      {"torch-math-fp16", 0x45a71db18edc4a40ull},
      {"fp32", 0xf7382466bbd08eceull},
      {"fp64", 0x54dd11d70914a876ull},
      {"fp8-e4m3", 0xd09cba8d76350c38ull},
  };
  int compared = 0;
  for (const Pinned& p : pinned) {
    INFO(p.preset);
    const numerics::PolicyPreset* preset = numerics::find_preset(p.preset);
    REQUIRE(preset != nullptr);
    CHECK(preset->policy.mma == numerics::mma::Arch::none);
    CHECK(preset_hash(preset->policy) == p.hash);
    ++compared;
  }
  CHECK(compared == 15);
  // And the hash sees a tensor-core profile: kernel-bf16 on sm90 is another result.
  numerics::PrecisionPolicy tc = numerics::find_preset("kernel-bf16")->policy;
  tc.mma = numerics::mma::Arch::sm90;
  CHECK(preset_hash(tc) != pinned[0].hash);
}
