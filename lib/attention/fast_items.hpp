// The fast path's work items (one block of query rows through an algorithm's row function in
// NativeArith<T>) and the two entry templates the dispatcher of fast.cpp calls. Included only by
// the fast_*.cpp units, each of which instantiates a few (value type, stats format, model)
// combinations explicitly (fast_kinds.hpp lists them): the instantiations are the heavy part of
// the emulator's build, and spread over several units they compile in parallel.
#pragma once

#include <type_traits>
#include <utility>
#include <vector>

#include "attention/detail.hpp"
#include "attention/fast_kinds.hpp"
#include "attention/fp8_attention.hpp"
#include "attention/generic_rows.hpp"
#include "attention/kernels.hpp"
#include "attention/mask.hpp"
#include "attention/rows/baseline.hpp"
#include "attention/rows/flash1.hpp"
#include "attention/rows/flash2.hpp"
#include "attention/tc_simd_kernels.hpp"

namespace attndev::attention::detail::fast {

// Internal linkage: each unit has its own copy of the work items of the kinds it instantiates.
namespace {

// Columns of K per packed tile of the baseline. A multiple of every vector width, so the tiles of
// one row of S are contiguous and a row of S is one array over j.
constexpr int kBaselinePackColumns = 64;

// The GEMMs of a tensor-core profile (policy "mma"): Q K^T of input x input, P V of prob x input.
template <class T>
TcSimdKernels<T> tc_kernels(const Problem& p, const Packed<T>& pk, int bh) {
  return {pk, bh, tc_lanes::gemm_of(p.policy.mma, p.policy.input, p.policy.input),
          tc_lanes::gemm_of(p.policy.mma, p.policy.prob, p.policy.input)};
}

template <class A, bool kFused, class Dequant, class T = typename A::Value>
void flash2_item(const Problem& p, const Packed<T>& pk, const Dequant& dequant, const RowBlock& rb,
                 Output& out) {
  const std::size_t rows = static_cast<std::size_t>(rb.row_end - rb.row_begin);
  std::vector<rows::OnlineSoftmax<A>> softmax(rows);
  std::vector<int> count(rows);
  std::vector<T> s(rows * pk.padded);  // (Br, BcP)
  std::vector<T> acc(rows * pk.ld_v);  // (Br, ld) padded like V's rows
  // (Br, ld) the block's P V, formed apart for fp8's V scales and the framework model's matmul
  const bool block_local = Dequant::kBlockLocalPv || p.policy.model == numerics::Model::framework;
  std::vector<T> pv(block_local ? rows * pk.ld_v : 0);
  const rows::Flash2Work<A> work{softmax.data(), count.data(), s.data(), pk.padded,
                                 acc.data(),     pk.ld_v,      pv.data()};
  const int bh = rb.b * p.shape.heads + rb.h;
  if (p.policy.mma != numerics::mma::Arch::none) {  // the tensor-core profile's GEMMs
    rows::flash2_rows(A{p.policy}, tc_kernels(p, pk, bh), dequant, rows::RegisterState{},
                      p.row_params(), rb.row_begin, rb.row_end, work, o_rows(out, rb),
                      lse_rows(out, rb), key_mask(p.mask.get(), rb.b, rb.h));
    return;
  }
  const SimdKernels<T, kFused> kernels{pk, bh};
  rows::flash2_rows(A{p.policy}, kernels, dequant, rows::RegisterState{}, p.row_params(),
                    rb.row_begin, rb.row_end, work, o_rows(out, rb), lse_rows(out, rb),
                    key_mask(p.mask.get(), rb.b, rb.h));
}

// FA-1: O, m and l are stored between K/V blocks (HbmState), O rounded to the output format on
// floats; its O rows are padded like V's (the padding lanes stay 0 and are never read back).
template <class A, bool kFused, class T = typename A::Value>
void flash1_item(const Problem& p, const Packed<T>& pk, const RowBlock& rb, Output& out) {
  const std::size_t rows = static_cast<std::size_t>(rb.row_end - rb.row_begin);
  std::vector<rows::BlockMergeSoftmax<A>> softmax(rows);
  std::vector<int> count(rows);
  std::vector<T> s(rows * pk.padded);  // (Br, BcP)
  std::vector<T> o(rows * pk.ld_v);    // (Br, ld) O between blocks
  std::vector<T> pv(rows * pk.ld_v);   // (Br, ld) the block's P V
  const rows::Flash1Work<A> work{softmax.data(), count.data(), s.data(), pk.padded,
                                 o.data(),       pk.ld_v,      pv.data()};
  const int bh = rb.b * p.shape.heads + rb.h;
  auto run = [&](const auto& kernels) {
    rows::flash1_rows(A{p.policy}, kernels, rows::HbmState{}, p.row_params(), rb.row_begin,
                      rb.row_end, work, o_rows(out, rb), lse_rows(out, rb),
                      key_mask(p.mask.get(), rb.b, rb.h));
  };
  if (p.policy.mma != numerics::mma::Arch::none)
    run(tc_kernels(p, pk, bh));
  else
    run(SimdKernels<T, kFused>{pk, bh});
}

template <class A, bool kFused, class Dequant, class T = typename A::Value>
void baseline_item(const Problem& p, const Packed<T>& pk, const Dequant& dequant,
                   const RowBlock& rb, Output& out) {
  const std::size_t rows = static_cast<std::size_t>(rb.row_end - rb.row_begin);
  const int ld_s = pk.blocks * pk.padded;
  std::vector<rows::RowSoftmax<A>> softmax(rows);
  std::vector<int> count(rows);
  std::vector<T> s(rows * ld_s);       // (rows, N_kv padded): S, then e, then P
  std::vector<T> acc(rows * pk.ld_v);  // (rows, ld)
  const rows::BaselineWork<A> work{softmax.data(), count.data(), s.data(),
                                   ld_s,           acc.data(),   pk.ld_v};
  const int bh = rb.b * p.shape.heads + rb.h;
  auto run = [&](const auto& kernels) {
    rows::baseline_rows(A{p.policy}, kernels, dequant, p.row_params(), rb.row_begin, rb.row_end,
                        work, o_rows(out, rb), lse_rows(out, rb),
                        key_mask(p.mask.get(), rb.b, rb.h));
  };
  if (p.policy.mma != numerics::mma::Arch::none)
    run(tc_kernels(p, pk, bh));
  else
    run(SimdKernels<T, kFused>{pk, bh});
}

// The rows of every work item through the algorithm's row function. pk holds the operands the
// row functions see (the problem's Q, K, V, or the fp8 algorithms' e4m3 values); dequant_of(rb)
// gives a work item's Dequant hook.
template <class T, numerics::Format kStats, bool kFramework, class DequantOf>
void run_items(Algorithm algorithm, const Problem& p, const Packed<T>& pk,
               const DequantOf& dequant_of, Output& out) {
  const bool baseline = algorithm == Algorithm::baseline || algorithm == Algorithm::baseline_fp8;
  const int rows = baseline ? kBaselineRowBlock : p.block_r;
  const std::size_t items = row_block_count(p.shape, rows);
  using Fused = NativeArith<T, true, kStats, kFramework>;
  using Unfused = NativeArith<T, false, kStats, kFramework>;
  // FA-1 runs on plain operands only (no fp8 algorithm is FA-1): the fp8 entry, whose operands
  // need a Dequant, does not instantiate its work items.
  using Dequant = decltype(dequant_of(std::declval<const RowBlock&>()));
  constexpr bool kFlash1 = std::is_same_v<Dequant, rows::NoDequant>;
  parallel_for(items, p.threads, p.schedule_seed, [&](std::size_t item) {
    const RowBlock rb = row_block(p.shape, rows, item);
    const auto dequant = dequant_of(rb);
    if (baseline) {
      if (p.policy.fma)
        baseline_item<Fused, true>(p, pk, dequant, rb, out);
      else
        baseline_item<Unfused, false>(p, pk, dequant, rb, out);
    } else if (algorithm == Algorithm::flash1) {
      if constexpr (kFlash1) {
        if (p.policy.fma)
          flash1_item<Fused, true>(p, pk, rb, out);
        else
          flash1_item<Unfused, false>(p, pk, rb, out);
      }
    } else {
      if (p.policy.fma)
        flash2_item<Fused, true>(p, pk, dequant, rb, out);
      else
        flash2_item<Unfused, false>(p, pk, dequant, rb, out);
    }
  });
}

int pack_block(Algorithm algorithm, const Problem& p) {
  const bool baseline = algorithm == Algorithm::baseline || algorithm == Algorithm::baseline_fp8;
  return baseline ? kBaselinePackColumns : p.block_c;
}

}  // namespace

template <class T, numerics::Format kStats, bool kFramework>
void run_fast_t(Algorithm algorithm, const Problem& p, Output& out) {
  const Packed<T> pk = pack_inputs<T>(p, pack_block(algorithm, p));
  run_items<T, kStats, kFramework>(
      algorithm, p, pk, [](const RowBlock&) { return rows::NoDequant{}; }, out);
}

template <class T, numerics::Format kStats, bool kFramework>
void run_fp8_t(Algorithm algorithm, const Fp8Problem& f, Output& out) {
  const Problem& p = *f.p;
  const Packed<T> pk =
      pack_tensors<T>(p, f.q.values, f.k.values, f.v.values, pack_block(algorithm, p));
  run_items<T, kStats, kFramework>(
      algorithm, p, pk,
      [&f](const RowBlock& rb) {
        return Fp8Dequant{f.q.view(), f.k.view(), f.v.view(), rb.b, rb.h};
      },
      out);
}

}  // namespace attndev::attention::detail::fast
