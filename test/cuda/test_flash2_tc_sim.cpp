// Host-only, every build: flash2-tc's own code (flash2_tc_cta in lib/cuda/flash2_tc.cuh) run on
// the host simulator (tc_host_sim.hpp) for every row of the instantiation table. It checks what
// a GPU run would check about the code's logic, without a GPU:
//   * the fragment layouts (ldmatrix, ldmatrix.trans, mma m16n8k16, the P repack) and the tile
//     indexing give the emulator's flash2 result under the same kernel-<fmt> policy and tiles,
//     within one rounding of the output, per row at that row's own magnitude, with at least
//     kMinIdenticalShare of the elements bit-identical (the simulator sums products in double and
//     uses the host's exp2f, so equality everywhere is not expected; a layout or index bug is off
//     by far more);
//   * the two-stage cp.async pipeline and the O staging are race-free: every shared-memory read
//     is ordered after the write it needs, no buffer is refilled while a warp may still read it,
//     and no copy is left in flight (a race is an error even when the values happen to be right);
//   * every element of O and every lse is stored exactly once, nothing outside them;
//   * causal masking with N_q != N_kv, Q blocks that see no key at all, tails of both sequences.
// What stays for the GPU (test/cuda/gpu_kernels.cpp, scripts/gpu-check.sh): the device compiler,
// the matrix unit's own fp32 summation, CUDA's exp2f, and speed.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda/tc_host_sim.hpp"
#include "test_scale.hpp"
// After the simulator: flash2_tc.cuh then uses its primitives.
#include "attention/attention.hpp"
#include "cuda/flash2_tc.cuh"
#include "cuda_check/checks.hpp"
#include "numerics/encode.hpp"

using namespace attndev;
namespace tc = cuda::tc;

namespace {

struct SimResult {
  std::vector<std::string> errors;
  std::vector<double> o;    // (B, H, N_q, d)
  std::vector<double> lse;  // (B, H, N_q)
};

// What flash2_tc_launch.cu does, with the simulator for the GPU: operands narrowed to the
// element type, grid (Q blocks, batch x head), scale 1/sqrt(d).
template <class Tag>
SimResult run_sim(const attention::Inputs& in, bool causal) {
  using T = typename tc::ElementOf<Tag::kElement>::Type;
  const numerics::Format fmt =
      Tag::kElement == cuda::MatElement::bf16 ? numerics::Format::bf16 : numerics::Format::fp16;
  const attention::Shape s = in.shape();
  auto narrow = [&](const attention::Tensor& t) {
    std::vector<T> out(t.data.size());
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i].bits = static_cast<std::uint16_t>(numerics::encode(fmt, t.data[i]));
    return out;
  };
  const std::vector<T> q = narrow(in.q), k = narrow(in.k), v = narrow(in.v);
  const std::size_t heads = static_cast<std::size_t>(s.batch) * s.heads;
  std::vector<T> o(q.size(), T{0x7fff});  // NaN patterns: an element never stored stays NaN
  std::vector<float> lse(heads * s.seq_q, std::numeric_limits<float>::quiet_NaN());

  tc::Params<T> p{};
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.o = o.data();
  p.lse = lse.data();
  p.seq_q = s.seq_q;
  p.seq_kv = s.seq_kv;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  p.scale = static_cast<float>(scale);
  p.scale_log2 = static_cast<float>(scale * 1.4426950408889634);
  p.causal = causal;

  tc::sim::Global global;
  global.add(q.data(), q.size() * 2, "q", false);
  global.add(k.data(), k.size() * 2, "k", false);
  global.add(v.data(), v.size() * 2, "v", false);
  global.add(o.data(), o.size() * 2, "o", true);
  global.add(lse.data(), lse.size() * 4, "lse", true);
  const int grid_x = (s.seq_q + Tag::kBlockM - 1) / Tag::kBlockM;
  SimResult r;
  r.errors =
      tc::sim::run_grid(grid_x, static_cast<int>(heads), Tag::kThreads, tc::Layout<Tag>::kBytes,
                        global, [&p](unsigned char* smem, int bx, int by) {
                          tc::flash2_tc_cta<Tag>(p, smem, bx, static_cast<std::size_t>(by));
                        });
  // Stored exactly once: every element of o (2-byte units) and of lse (two units each).
  for (const auto& region : global.regions) {
    for (std::size_t e = 0; e < region.stores.size(); ++e) {
      if (region.stores[e] != 1) {
        r.errors.push_back(region.name + " element (2-byte unit) " + std::to_string(e) +
                           " stored " + std::to_string(region.stores[e]) + " times");
        break;
      }
    }
  }
  r.o.resize(o.size());
  for (std::size_t i = 0; i < o.size(); ++i) r.o[i] = numerics::decode(fmt, o[i].bits);
  r.lse.assign(lse.begin(), lse.end());
  return r;
}

struct Case {
  attention::Shape shape;
  bool causal;
  std::uint64_t seed;
};

std::string describe(const Case& c, int d, int br, int bc, const char* fmt) {
  return std::string(fmt) + " d=" + std::to_string(d) + " " + std::to_string(br) + "x" +
         std::to_string(bc) + " B=" + std::to_string(c.shape.batch) +
         " H=" + std::to_string(c.shape.heads) + " Nq=" + std::to_string(c.shape.seq_q) +
         " Nkv=" + std::to_string(c.shape.seq_kv) + (c.causal ? " causal" : "") +
         " seed=" + std::to_string(c.seed);
}

// The least share of O elements bit-identical between the simulator and the emulator. Measured
// over the four cases below and every table row: bf16 0.9998-1, fp16 0.9915-1 (fp16's three more
// fraction bits put more elements near a boundary that an fp32-level difference crosses).
constexpr double kMinIdenticalShare = 0.98;

// One table row against the emulator's flash2 (same policy, same tiles).
template <class Tag>
int check_row(const std::vector<Case>& cases) {
  const numerics::Format fmt =
      Tag::kElement == cuda::MatElement::bf16 ? numerics::Format::bf16 : numerics::Format::fp16;
  const std::string fmt_name = numerics::traits(fmt).name;
  const numerics::PrecisionPolicy policy = numerics::find_preset("kernel-" + fmt_name)->policy;
  int checked = 0;
  for (Case c : cases) {
    c.shape.head_dim = Tag::kHeadDim;
    const std::string name =
        describe(c, Tag::kHeadDim, Tag::kBlockM, Tag::kBlockN, fmt_name.c_str());
    INFO(name);
    const attention::Inputs in = cuda_check::random_inputs(c.shape, c.seed, fmt);
    attention::Options opt;
    opt.causal = c.causal;
    opt.block_r = Tag::kBlockM;
    opt.block_c = Tag::kBlockN;
    const attention::Output emu = attention::run(attention::Algorithm::flash2, policy, in, opt);
    const SimResult sim = run_sim<Tag>(in, c.causal);
    for (const std::string& e : sim.errors) UNSCOPED_INFO(e);
    CHECK(sim.errors.empty());

    // O: one rounding of the output format at the tile's magnitude, from the format's traits.
    const double floor = cuda_check::two_roundings(fmt, emu.o.data);
    const double o_diff = cuda_check::max_abs_diff(sim.o, emu.o.data);
    INFO("max |sim - emulator| " << o_diff << " floor " << floor);
    CHECK(o_diff <= floor);  // false for NaN: an element never stored
    // Per row: the simulator and the emulator differ before the output rounding only at fp32
    // level (double vs fp32 sums, exp2f vs exp2_f32), so after it an element differs by at most
    // one unit of the output format at that element's magnitude, <= 2u max_t |O_it| for its row.
    // A row of small outputs is held to its own scale, not to the tile's largest |O|.
    const double u = numerics::traits(fmt).unit_roundoff();
    const int d = Tag::kHeadDim;
    std::size_t identical = 0, worse_rows = 0;
    for (std::size_t row = 0; row * d < sim.o.size(); ++row) {
      double row_max = 0, row_diff = 0;
      for (int t = 0; t < d; ++t) {
        const std::size_t e = row * d + t;
        row_max = std::max(row_max, std::fabs(emu.o.data[e]));
        const double diff = std::fabs(sim.o[e] - emu.o.data[e]);
        row_diff = std::isnan(diff) || diff > row_diff ? diff : row_diff;
        identical += sim.o[e] == emu.o.data[e];
      }
      if (!(row_diff <= 2 * u * row_max)) {  // NaN included
        if (worse_rows++ == 0)
          UNSCOPED_INFO("row " << row << ": max |sim - emulator| " << row_diff
                               << " > 2u max|O_row| " << 2 * u * row_max);
      }
    }
    CHECK(worse_rows == 0);
    // The two differ only where fp32-level differences straddle a rounding boundary of the output
    // format: most elements are identical (measured: see kMinIdenticalShare).
    const double share = static_cast<double>(identical) / static_cast<double>(sim.o.size());
    INFO("identical " << identical << " of " << sim.o.size());
    CHECK(share >= kMinIdenticalShare);
    // lse in fp32 vs the emulator's double: a few fp32 units of its terms (m scale, log l).
    const double eps32 = std::numeric_limits<float>::epsilon();
    for (std::size_t i = 0; i < sim.lse.size(); ++i) {
      const double want = emu.lse[i];
      if (std::isinf(want)) {
        REQUIRE(sim.lse[i] == want);
        continue;
      }
      // |m scale| <= |lse| + |log l| and log l <= log N_kv: a bound on the terms, not on lse,
      // which may nearly cancel.
      const double terms =
          std::fabs(want) + 2.0 * std::log(static_cast<double>(c.shape.seq_kv) + 1);
      INFO("lse row " << i << ": sim " << sim.lse[i] << " emulator " << want);
      REQUIRE(std::fabs(sim.lse[i] - want) <= 8 * eps32 * terms);
    }
    checked += sim.o.size() == emu.o.data.size() && !sim.o.empty();  // O was compared
  }
  return checked;
}

template <class Tuple, std::size_t... I>
int check_table(const std::vector<Case>& cases, std::index_sequence<I...>) {
  return (check_row<std::tuple_element_t<I, Tuple>>(cases) + ...);
}

}  // namespace

// The shapes both simulator tests run. Every CUDA thread is simulated (a fiber switched at each
// barrier and warp-collective), so a case costs about 0.1 s per table row in the Release build
// and several times that under the sanitizers; the smoke scale of the sanitizer and clang builds
// (test_scale.hpp) runs the first case alone, still through every kernel of the table (what a
// sanitizer checks is each kernel's memory, found on any shape), and the Release build every
// case.
namespace {
std::vector<Case> sim_cases() {
  std::vector<Case> cases = {
      {{1, 2, 77, 77, 0}, false, 11},
      {{1, 1, 130, 45, 0}, true, 12},
      {{1, 1, 70, 150, 0}, true, 13},
      {{1, 1, 1, 9, 0}, false, 14},
  };
  if (test::kSmokeScale) cases.resize(1);
  return cases;
}
}  // namespace

TEST_CASE("flash2-tc on the host simulator matches the emulator race-free for every table row",
          "[cuda][flash2-tc]") {
  // Odd lengths (tails in both sequences), N_q > N_kv causal (rows and whole Q blocks that see
  // no key), N_q < N_kv causal (the diagonal shifted right), one row, and two heads.
  const std::vector<Case> cases = sim_cases();
  const int checked = check_table<cuda::TcTable>(
      cases, std::make_index_sequence<std::tuple_size_v<cuda::TcTable>>{});
  CHECK(checked == static_cast<int>(cases.size() * std::tuple_size_v<cuda::TcTable>));
}

// The emulator's flash2-tc-twin (lib/attention/twins/flash2_tc.hpp) against the kernel's own
// code on the simulator, both on one tensor-core profile and the host's exp2f: every element of
// O and every lse bit for bit.
template <class Tag>
int check_twin_row(const std::vector<Case>& cases, numerics::mma::Arch arch) {
  const numerics::Format fmt =
      Tag::kElement == cuda::MatElement::bf16 ? numerics::Format::bf16 : numerics::Format::fp16;
  const std::string fmt_name = numerics::traits(fmt).name;
  numerics::PrecisionPolicy policy = numerics::find_preset("kernel-" + fmt_name)->policy;
  policy.mma = arch;
  const auto host_exp2 = [](float x) { return std::exp2f(x); };
  int identical_cases = 0;
  for (Case c : cases) {
    c.shape.head_dim = Tag::kHeadDim;
    INFO(describe(c, Tag::kHeadDim, Tag::kBlockM, Tag::kBlockN, fmt_name.c_str())
         << " mma " << numerics::mma::arch_name(arch));
    const attention::Inputs in = cuda_check::random_inputs(c.shape, c.seed, fmt);
    attention::Options opt;
    opt.causal = c.causal;
    const attention::Output twin = attention::run_flash2_tc_twin(policy, in, opt, host_exp2);
    tc::sim::set_mma(arch);
    const SimResult sim = run_sim<Tag>(in, c.causal);
    tc::sim::set_mma(numerics::mma::Arch::none);
    CHECK(sim.errors.empty());
    REQUIRE(sim.o.size() == twin.o.data.size());
    std::size_t differ = 0, first = 0;
    for (std::size_t e = 0; e < sim.o.size(); ++e) {
      const bool same = numerics::bits_of(sim.o[e]) == numerics::bits_of(twin.o.data[e]);
      if (!same && differ++ == 0) first = e;
    }
    INFO(differ << " of " << sim.o.size() << " elements differ; first " << first << ": sim "
                << sim.o[first] << " twin " << twin.o.data[first]);
    CHECK(differ == 0);
    std::size_t lse_differ = 0;
    for (std::size_t i = 0; i < sim.lse.size(); ++i)
      lse_differ += numerics::bits_of(static_cast<float>(sim.lse[i])) !=
                    numerics::bits_of(static_cast<float>(twin.lse[i]));
    CHECK(lse_differ == 0);
    identical_cases += differ == 0 && lse_differ == 0 && !sim.o.empty();
  }
  return identical_cases;
}

template <class Tuple, std::size_t... I>
int check_twin_table(const std::vector<Case>& cases, numerics::mma::Arch arch,
                     std::index_sequence<I...>) {
  return (check_twin_row<std::tuple_element_t<I, Tuple>>(cases, arch) + ...);
}

TEST_CASE("flash2-tc-twin equals the kernel on the host simulator bit for bit, per profile",
          "[cuda][flash2-tc][twin]") {
  // The shapes of the simulator's own test, every table row, under sm80 (k16 as two k8
  // halves) and sm90 (one block of 16), which sum differently. At the smoke scale (the sanitizer
  // and clang builds) sm90 alone: the two profiles take the same memory paths through the kernel
  // and the twin, and sm80's simulator and twin also run in the negative controls below.
  const std::vector<Case> cases = sim_cases();
  std::vector<numerics::mma::Arch> arches = {numerics::mma::Arch::sm80, numerics::mma::Arch::sm90};
  if (test::kSmokeScale) arches.erase(arches.begin());
  for (numerics::mma::Arch arch : arches) {
    const int identical = check_twin_table<cuda::TcTable>(
        cases, arch, std::make_index_sequence<std::tuple_size_v<cuda::TcTable>>{});
    CHECK(identical == static_cast<int>(cases.size() * std::tuple_size_v<cuda::TcTable>));
  }
}

TEST_CASE("flash2-tc-twin: the comparison with the simulator sees the profile and the exp2",
          "[cuda][flash2-tc][twin]") {
  // Negative controls of the test above: against the simulator on sm80, the twin on sm90 (the
  // profiles' sums differ), without a profile (fp32 FMA chains) and with an exp2 one ulp off
  // the host's must each leave some element different.
  using Tag = cuda::TcTag<cuda::MatElement::fp16, 64, 64, 64>;
  const attention::Shape s{1, 1, 96, 160, 64};
  const attention::Inputs in = cuda_check::random_inputs(s, 31, numerics::Format::fp16);
  attention::Options opt;
  numerics::PrecisionPolicy policy = numerics::find_preset("kernel-fp16")->policy;
  tc::sim::set_mma(numerics::mma::Arch::sm80);
  const SimResult sim = run_sim<Tag>(in, /*causal=*/false);
  tc::sim::set_mma(numerics::mma::Arch::none);
  REQUIRE(sim.errors.empty());
  auto differing = [&](const attention::Output& twin) {
    std::size_t n = 0;
    for (std::size_t e = 0; e < sim.o.size(); ++e) n += sim.o[e] != twin.o.data[e];
    return n;
  };
  const auto host_exp2 = [](float x) { return std::exp2f(x); };
  policy.mma = numerics::mma::Arch::sm80;
  CHECK(differing(attention::run_flash2_tc_twin(policy, in, opt, host_exp2)) == 0);
  const auto ulp_off = [](float x) { return std::nextafterf(std::exp2f(x), INFINITY); };
  CHECK(differing(attention::run_flash2_tc_twin(policy, in, opt, ulp_off)) > 0);
  policy.mma = numerics::mma::Arch::none;
  CHECK(differing(attention::run_flash2_tc_twin(policy, in, opt, host_exp2)) > 0);
  policy.mma = numerics::mma::Arch::sm90;
  CHECK(differing(attention::run_flash2_tc_twin(policy, in, opt, host_exp2)) > 0);
}

TEST_CASE("flash2-tc host simulator: the comparison catches a wrong result", "[cuda][flash2-tc]") {
  // Negative control: the same check against the emulator run without the causal mask must fail.
  using Tag = cuda::TcTag<cuda::MatElement::bf16, 64, 64, 64>;
  const attention::Shape s{1, 1, 70, 70, 64};
  const attention::Inputs in = cuda_check::random_inputs(s, 21, numerics::Format::bf16);
  attention::Options opt;  // not causal
  const attention::Output emu = attention::run(
      attention::Algorithm::flash2, numerics::find_preset("kernel-bf16")->policy, in, opt);
  const SimResult sim = run_sim<Tag>(in, /*causal=*/true);
  CHECK(sim.errors.empty());
  CHECK(cuda_check::max_abs_diff(sim.o, emu.o.data) >
        cuda_check::two_roundings(numerics::Format::bf16, emu.o.data));
}

TEST_CASE("flash2-tc host simulator: the race check finds a missing barrier", "[cuda][flash2-tc]") {
  // Negative control for the race checker itself: 64 threads each copy 16 bytes with cp.async
  // and wait for their own copy; without a barrier, reading a row another warp copied is a race.
  // With the barrier the same reads are clean.
  for (bool barrier : {false, true}) {
    std::vector<std::uint16_t> src(64 * 8);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint16_t>(i);
    tc::sim::Global global;
    global.add(src.data(), src.size() * 2, "src", false);
    const auto errors =
        tc::sim::run_grid(1, 1, 64, src.size() * 2, global, [&](unsigned char* smem, int, int) {
          const int t = tc::thread_id();
          tc::cp_async_16(smem + 16 * t, src.data() + 8 * t, 16);
          tc::cp_async_commit();
          tc::cp_async_wait<0>();
          if (barrier) tc::sync_cta();
          std::uint32_t r[4];
          tc::ldmatrix_x4(r, smem + 16 * ((t + 32) % 64));  // the other warp's rows
        });
    INFO("barrier " << barrier << ": " << errors.size() << " errors");
    if (barrier)
      CHECK(errors.empty());
    else
      CHECK(!errors.empty());
  }
}

TEST_CASE("flash2-tc host simulator: a barrier that not every thread reaches is an error",
          "[cuda][flash2-tc]") {
  // A __syncthreads inside a branch that half the threads skip deadlocks a GPU; the simulator
  // reports it (and a __syncwarp that one lane skips) instead of hanging. The same kernel with
  // the barrier outside the branch runs clean.
  for (const char* where : {"cta", "warp", "none"}) {
    const std::string w = where;
    std::vector<std::uint16_t> src(64 * 8, 0);
    tc::sim::Global global;
    global.add(src.data(), src.size() * 2, "src", false);
    const auto errors =
        tc::sim::run_grid(1, 1, 64, src.size() * 2, global, [&](unsigned char*, int, int) {
          const int t = tc::thread_id();
          if (w == "cta" && t < 32) return;   // warp 1 alone waits
          if (w == "warp" && t == 5) return;  // lane 5 of warp 0 skips the warp barrier
          if (w == "warp" && t < 32) tc::sync_warp();
          tc::sync_cta();
        });
    INFO(where << ": " << errors.size() << " errors" << (errors.empty() ? "" : ": " + errors[0]));
    if (w == "none")
      CHECK(errors.empty());
    else
      CHECK((errors.size() == 1 && errors[0].find("deadlock") != std::string::npos));
  }
}
