// The fast path's QK^T and P V on a tensor-core profile: numerics/mma.hpp's fused dot-adds,
// computed for 16 output elements at once (keys of a score row, or columns of an O row), with the
// interface of rows::ScalarKernels. Bit-identical to the scalar model by construction, and
// tested (test_tc_gemm.cpp: fast path = generic path under every profile):
//   * each call converts its operands once (tc_float_lanes.hpp operands_f: floats and int32
//     exponents) and runs the float lanes (lane_chain_f), which hand a block outside their range
//     to the double lanes (tc_lanes.hpp lane_chain); lanes never mix;
//   * a lane whose result is not finite (an overflow), or whose operands hold an inf or NaN, is
//     recomputed by the scalar model, which owns the special-value rules (canonical NaN, 0 x inf).
// Why: the generic path computes each term through a call chain (about 60 times the fast path's
// time at N = 4096, d = 128); these loops vectorize (docs/numerics.md, "Tensor cores", has the
// measured cost).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "attention/kernels.hpp"
#include "attention/tc_float_lanes.hpp"
#include "attention/tc_lanes.hpp"
#include "numerics/mma.hpp"

namespace attndev::attention::detail {

namespace tc_lanes {

// One GEMM's profile: the lane chain, the scalar model for the lanes it hands back, the operands.
struct Gemm {
  LaneChainF chain_f = nullptr;           // float lanes (the fast path's)
  LaneChainRowsF chain_rows_f = nullptr;  // the same, several rows per call
  numerics::mma::DotFunction dot = nullptr;
  numerics::mma::Operands operands{};
  bool tf32 = false;
};

inline Gemm gemm_of(numerics::mma::Arch arch, numerics::Format fa, numerics::Format fb) {
  namespace mma = numerics::mma;
  Gemm g;
  mma::Kind kind{};
  mma::kind_of(fa, fb, kind);
  const mma::Instruction ins = mma::default_instruction(arch);
  mma::with_profile(arch, ins, kind, [&](auto profile) {
    g.chain_f = &lane_chain_f<decltype(profile)>;
    g.chain_rows_f = &lane_chain_rows_f<decltype(profile)>;
  });
  g.dot = mma::dot_function(arch, ins, kind);
  g.operands = mma::operands(fa, fb);
  g.tf32 = kind == mma::Kind::tf32;
  return g;
}

}  // namespace tc_lanes

template <class T>
struct TcSimdKernels {
  const Packed<T>& pk;
  int bh;  // flat (batch * H + head)
  tc_lanes::Gemm qk, pv_gemm;

  // S of rows [row_begin, +rows) against keys j0 + [0, n[r]), one K tile (pk.block keys from a
  // tile's start j0) at a time: flash1 and flash2 pass one tile, the baseline every key of a row
  // (its tiles are pk.block = pk.padded columns, so a row of S is one array over j).
  template <class A>
  void scores(const A&, int row_begin, int rows, int j0, const int* n, T* s, int ld_s) const {
    int n_max = 0;
    for (int r = 0; r < rows; ++r) n_max = std::max(n_max, n[r]);
    std::vector<int> n_tile(static_cast<std::size_t>(rows));  // (rows) keys of the tile
    for (int t0 = 0; t0 < n_max; t0 += pk.block) {
      for (int r = 0; r < rows; ++r)
        n_tile[static_cast<std::size_t>(r)] = std::clamp(n[r] - t0, 0, pk.block);
      scores_tile(row_begin, rows, j0 + t0, n_tile.data(), s + t0, ld_s);
    }
  }

  // acc(r, t) = the chain over the block's keys [0, count[r]) with C = acc(r, t): V rows in lanes
  // of output columns, kPvChunk keys at a time (the baseline's P V runs over every key, and V
  // converted whole would not stay in cache). A chain split at a multiple of the profile's block
  // is the same chain (each block's D is the next one's C), and acc holds each chunk's D exactly
  // (an fp32 value, inf or the canonical NaN).
  template <class A>
  void pv(const A&, const T* p, int ld_p, const int* count, int rows, int j0, T* acc,
          int ld_acc) const {
    int n_max = 0;
    for (int r = 0; r < rows; ++r) n_max = std::max(n_max, count[r]);
    std::vector<int> n_chunk(static_cast<std::size_t>(rows));  // (rows) keys of the chunk
    for (int k0 = 0; k0 < n_max; k0 += kPvChunk) {
      for (int r = 0; r < rows; ++r)
        n_chunk[static_cast<std::size_t>(r)] = std::clamp(count[r] - k0, 0, kPvChunk);
      pv_chunk(p + k0, ld_p, n_chunk.data(), rows, j0 + k0, acc, ld_acc);
    }
  }

 private:
  // Keys of a multiple of the largest profile block (32) per pv_chunk call.
  static constexpr int kPvChunk = 256;
  static_assert(kPvChunk % 32 == 0, "a chunk must end on a block boundary of every profile");

  // pv() on keys j0 + [0, count[r]), count[r] <= kPvChunk.
  void pv_chunk(const T* p, int ld_p, const int* count, int rows, int j0, T* acc,
                int ld_acc) const {
    using namespace tc_lanes;
    int n_max = 0;
    for (int r = 0; r < rows; ++r) n_max = std::max(n_max, count[r]);
    if (n_max == 0) return;
    const int d = pk.d, ldb = (d + kLanes - 1) / kLanes * kLanes;
    const int emin_p = numerics::traits(pv_gemm.operands.a).min_exponent;
    const int emin_v = numerics::traits(pv_gemm.operands.b).min_exponent;
    const T* v = pk.v_head(bh) + static_cast<std::size_t>(j0) * pk.ld_v;  // (n_max, ld_v)
    std::vector<float> vb(static_cast<std::size_t>(n_max) * ldb, 0.f);    // (n_max, ldb)
    std::vector<Expo> ve(vb.size(), kZeroExponentF);                      // (n_max, ldb)
    int tile_special = 0;
    for (int j = 0; j < n_max; ++j)
      tile_special += operands_f(v + static_cast<std::size_t>(j) * pk.ld_v, d, emin_v, pv_gemm.tf32,
                                 vb.data() + static_cast<std::size_t>(j) * ldb,
                                 ve.data() + static_cast<std::size_t>(j) * ldb);
    const std::vector<char> col_special = special_lanes(ve, n_max, ldb, tile_special);  // (ldb)
    std::vector<float> pa(static_cast<std::size_t>(n_max));    // (n_max) a P row
    std::vector<Expo> pe(pa.size());                           // (n_max) its exponents
    std::vector<double> lanes(static_cast<std::size_t>(ldb));  // (ldb) C, then D
    std::vector<double> vd(static_cast<std::size_t>(n_max));   // (n_max) a V column
    for (int r = 0; r < rows; ++r) {
      if (count[r] == 0) continue;
      const T* p_r = p + static_cast<std::size_t>(r) * ld_p;  // (count[r])
      const bool row_special =
          operands_f(p_r, count[r], emin_p, pv_gemm.tf32, pa.data(), pe.data()) != 0;
      T* acc_r = acc + static_cast<std::size_t>(r) * ld_acc;  // (d)
      for (int t = 0; t < ldb; ++t)
        lanes[static_cast<std::size_t>(t)] = t < d ? static_cast<double>(acc_r[t]) : 0.0;
      pv_gemm.chain_f(pa.data(), pe.data(), vb.data(), ve.data(), ldb, count[r], ldb / kLanes,
                      lanes.data());
      for (int t = 0; t < d; ++t) {
        const double x = lanes[static_cast<std::size_t>(t)];
        if (row_special || col_special[static_cast<std::size_t>(t)] || !std::isfinite(x)) {
          for (int j = 0; j < count[r]; ++j)
            vd[static_cast<std::size_t>(j)] = vb[static_cast<std::size_t>(j) * ldb + t];
          acc_r[t] = static_cast<T>(scalar_dot(pv_gemm, pa.data(), vd.data(), 1, count[r],
                                               static_cast<double>(acc_r[t])));
        } else {
          acc_r[t] = static_cast<T>(x);
        }
      }
    }
  }

  // scores() on one tile: keys j0 + [0, n[r]), n[r] <= pk.block, j0 a tile's start.
  void scores_tile(int row_begin, int rows, int j0, const int* n, T* s, int ld_s) const {
    using namespace tc_lanes;
    int n_max = 0;
    for (int r = 0; r < rows; ++r) n_max = std::max(n_max, n[r]);
    if (n_max == 0) return;
    const int d = pk.d, ldb = (n_max + kLanes - 1) / kLanes * kLanes;
    const int emin_q = numerics::traits(qk.operands.a).min_exponent;
    const int emin_k = numerics::traits(qk.operands.b).min_exponent;
    const T* tile = pk.kt_tile(bh, j0 / pk.block);                  // (d, padded)
    std::vector<float> kb(static_cast<std::size_t>(d) * ldb, 0.f);  // (d, ldb) K^T as read
    std::vector<Expo> ke(kb.size(), kZeroExponentF);                // (d, ldb) its exponents
    int tile_special = 0;
    for (int t = 0; t < d; ++t)
      tile_special += operands_f(tile + static_cast<std::size_t>(t) * pk.padded, n_max, emin_k,
                                 qk.tf32, kb.data() + static_cast<std::size_t>(t) * ldb,
                                 ke.data() + static_cast<std::size_t>(t) * ldb);
    const std::vector<char> key_special = special_lanes(ke, d, ldb, tile_special);  // (ldb)
    std::vector<float> qa(static_cast<std::size_t>(d));                             // (d) one Q row
    std::vector<Expo> qe(qa.size());                         // (d) its exponents
    std::vector<double> acc(static_cast<std::size_t>(ldb));  // (ldb) D
    std::vector<double> kd(static_cast<std::size_t>(d));     // (d) a key for the scalar model
    for (int r = 0; r < rows; ++r) {
      if (n[r] == 0) continue;
      const T* q = pk.q_head(bh) + static_cast<std::size_t>(row_begin + r) * d;  // (d)
      const bool row_special = operands_f(q, d, emin_q, qk.tf32, qa.data(), qe.data()) != 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      qk.chain_f(qa.data(), qe.data(), kb.data(), ke.data(), ldb, d, (n[r] + kLanes - 1) / kLanes,
                 acc.data());
      for (int j = 0; j < n[r]; ++j) {
        double& x = acc[static_cast<std::size_t>(j)];
        if (row_special || key_special[static_cast<std::size_t>(j)] || !std::isfinite(x)) {
          for (int t = 0; t < d; ++t)
            kd[static_cast<std::size_t>(t)] = kb[static_cast<std::size_t>(t) * ldb + j];
          x = scalar_dot(qk, qa.data(), kd.data(), 1, d, 0.0);
        }
        s[static_cast<std::size_t>(r) * ld_s + j] = static_cast<T>(x);
      }
    }
  }

  // Per lane of a (rows, ldb) exponent array: whether the column holds an inf or NaN (nothing to
  // scan where operands_f counted none).
  static std::vector<char> special_lanes(const std::vector<tc_lanes::Expo>& expo, int rows, int ldb,
                                         int count) {
    std::vector<char> lane(static_cast<std::size_t>(ldb), 0);  // (ldb)
    if (count == 0) return lane;
    for (int i = 0; i < rows; ++i)
      for (int l = 0; l < ldb; ++l)
        lane[static_cast<std::size_t>(l)] |=
            expo[static_cast<std::size_t>(i) * ldb + l] == tc_lanes::kSpecialExponentF;
    return lane;
  }

  // The scalar model's chain over k (float operands widened: exact), from C = c.
  static double scalar_dot(const tc_lanes::Gemm& g, const float* a, const double* b,
                           std::ptrdiff_t sb, int k, double c) {
    const std::vector<double> ad(a, a + k);  // (k)
    return g.dot(g.operands, ad.data(), 1, b, sb, k, c, numerics::mma::Output::fp32);
  }
};

}  // namespace attndev::attention::detail
