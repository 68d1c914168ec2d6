// PyTorch's memory-efficient attention forward, step by step (mem_efficient.hpp; sources in
// docs/numerics.md).
#include "attention/twins/mem_efficient.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attention/parallel.hpp"
#include "attention/rows/mask.hpp"
#include "numerics/round.hpp"

namespace attndev::attention::twins {

namespace mem_eff_impl {

constexpr float kInf = std::numeric_limits<float>::infinity();
// kernel_forward.h: constexpr float kLog2e = 1.4426950408889634074 (rounded to float).
constexpr float kLog2eF = static_cast<float>(1.4426950408889634074);
constexpr int kWarpCols = 32;  // keys of one warp's 32 x 32 tile of S

struct Row {
  const double* q;  // (d)
  const double* k;  // (N_kv, d)
  const double* v;  // (N_kv, d)
  int i, seq_kv, d;
  int seen;      // keys this row sees (causal, bottom-right)
  int num_keys;  // p.num_keys after advance_to_block's causal clamp
};

struct Ctx {
  const TwinSetup* setup;
  MemEffPlan plan;
  float scale;  // p.scale
  numerics::Format prob, output;
};

// The fp32 frag of one block: accum = p.scale * S (kSupportsBias), masked keys -inf, then
// frag *= scaling * kLog2e with scaling = 1 (kSupportsBias).
void block_scores(const Ctx& c, const Row& r, int start, std::vector<float>& frag) {
  const int kb = c.plan.keys_per_block;
  const int in_range = std::min(kb, r.num_keys - start);  // problem_size_0_n
  for (int col = 0; col < kb; ++col) {
    const int j = start + col;
    // Keys past the block's problem size are predicated off: their accumulators stay 0.
    float s = col < in_range ? c.setup->mma->chain(
                                   r.q, 1, r.k + static_cast<std::ptrdiff_t>(j) * r.d, 1, r.d, 0.f)
                             : 0.f;
    s = c.scale * s;
    if (j >= r.seen && j < r.seq_kv) s = -kInf;  // custom mask: accum_n > last_col
    frag[static_cast<std::size_t>(col)] = s * (1.0f * kLog2eF);
  }
}

// One row's pass over its K/V blocks; writes o (d) and returns the natural-log lse.
double row_pass(const Ctx& c, const Row& r, double* o) {
  const Exp2& exp2 = c.setup->exp2;
  const MmaChain& mma = *c.setup->mma;
  const int kb = c.plan.keys_per_block, d = r.d;
  const int warps = c.plan.warps_per_row;
  float mi = -kInf, m_prime = -kInf, s_prime = 0.f;
  std::vector<float> acc(static_cast<std::size_t>(d), 0.f);  // (d) accum_o, or O between blocks
  std::vector<float> pv(static_cast<std::size_t>(d));        // (d) the block's P V (global O)
  std::vector<float> frag(static_cast<std::size_t>(kb));     // (kb)
  std::vector<double> P(static_cast<std::size_t>(kb));       // (kb) as stored in shared memory
  for (int start = 0; start < r.num_keys; start += kb) {
    const bool is_first = start == 0, is_last = start + kb >= r.num_keys;
    const int max_col = r.num_keys - start;
    block_scores(c, r, start, frag);
    // mi: the running max (never reset between blocks), over the columns < max_col.
    for (int col = 0; col < std::min(kb, max_col); ++col) mi = std::fmax(mi, frag[col]);
    float out_rescale = 1.f;
    bool restore_mi = false;
    if (m_prime < mi) {  // false when both are -inf
      out_rescale = exp2(m_prime - mi);
      s_prime *= out_rescale;
    } else if (mi == -kInf) {  // every score so far masked: exp2(-inf - 0) = 0, never NaN
      restore_mi = true;
      mi = 0.f;
    }
    if (c.plan.output_in_registers && !is_first)
      for (float& x : acc) x *= out_rescale;
    for (int col = 0; col < kb; ++col)
      frag[static_cast<std::size_t>(col)] = col < max_col ? exp2(frag[col] - mi) : 0.f;
    // Per-thread sums from 0 in iterateRows order, the quad's shuffle (xor 1, then xor 2), the
    // warps' partials added to s_prime in warp order.
    float total = s_prime;
    for (int w = 0; w < warps; ++w) {
      float lane_sum[4];
      for (int t = 0; t < 4; ++t) {
        float sum = 0.f;
        for (int nj = 0; nj < kWarpCols / 8; ++nj)
          for (int e = 0; e < 2; ++e)
            sum += frag[static_cast<std::size_t>(w * kWarpCols + nj * 8 + t * 2 + e)];
        lane_sum[t] = sum;
      }
      total += (lane_sum[0] + lane_sum[1]) + (lane_sum[2] + lane_sum[3]);
    }
    s_prime = total;
    if (restore_mi)
      mi = -kInf;
    else
      m_prime = mi;
    // accumToSmem: P as the element type (RN); then P V over the block's keys with C = accum_o
    // (registers) or from 0 (global-memory O).
    for (int col = 0; col < kb; ++col) P[col] = numerics::round_to(c.prob, frag[col]);
    const int in_range = std::min(kb, r.num_keys - start);
    const double* v0 = r.v + static_cast<std::ptrdiff_t>(start) * d;
    if (c.plan.output_in_registers) {
      for (int t = 0; t < d; ++t) acc[t] = mma.chain(P.data(), 1, v0 + t, d, in_range, acc[t]);
      continue;
    }
    for (int t = 0; t < d; ++t) pv[t] = mma.chain(P.data(), 1, v0 + t, d, in_range, 0.f);
    // MemoryEfficientAttentionNormalize<isFirst, isLast>: fully masked rows have s_prime = 0.
    const float denom = s_prime == 0.f ? 1.f : s_prime;
    const float alpha = is_last ? 1.f / denom : 1.f;
    const float beta = alpha * out_rescale;
    for (int t = 0; t < d; ++t)
      acc[t] = is_first ? alpha * pv[t] : std::fma(alpha, pv[t], beta * acc[t]);
  }
  if (c.plan.output_in_registers) {
    const float denom = s_prime == 0.f ? 1.f : s_prime;
    const float alpha = 1.f / denom;
    for (float& x : acc) x = alpha * x;
  }
  for (int t = 0; t < d; ++t) o[t] = numerics::round_to(c.output, acc[t]);
  // lse = mi / kLog2e + log(s_prime) (reporting only).
  return s_prime == 0.f ? -std::numeric_limits<double>::infinity()
                        : static_cast<double>(mi) / numerics::kLog2e + std::log(s_prime);
}

}  // namespace mem_eff_impl

using namespace mem_eff_impl;

bool mem_efficient_plan(const Shape& shape, MemEffPlan& plan, std::string* why) {
  const int d = shape.head_dim;
  if (d % 8 != 0) {
    if (why)
      *why =
          "PyTorch's memory-efficient kernel needs a head dim that is a multiple of 8 for "
          "bf16/fp16 (its sm80 kernels are the aligned ones, kernels/cutlassF.h), got d = " +
          std::to_string(d);
    return false;
  }
  plan = MemEffPlan{};
  if (d <= 64) {
    plan.queries_per_block = 64, plan.keys_per_block = 64;
  } else if (d <= 128) {
    plan.queries_per_block = 64, plan.keys_per_block = 128;
  } else {
    plan.queries_per_block = 32, plan.keys_per_block = 128, plan.output_in_registers = false;
  }
  plan.warps_per_row = plan.keys_per_block / kWarpCols;
  return true;
}

void run_mem_efficient(const Problem& p, const TwinSetup& setup, Output& out) {
  Ctx c{&setup,
        {},
        static_cast<float>(p.scale_in_query ? 1.0 : p.scale),
        p.policy.prob,
        p.policy.output};
  std::string why;
  if (!mem_efficient_plan(p.shape, c.plan, &why)) throw std::invalid_argument(why);
  const Shape& sh = p.shape;
  const int qpb = c.plan.queries_per_block;
  const int q_blocks = (sh.seq_q + qpb - 1) / qpb;
  const std::size_t items = static_cast<std::size_t>(sh.batch) * sh.heads * q_blocks;
  parallel_for(items, p.threads, p.schedule_seed, [&](std::size_t item) {
    const int qb = static_cast<int>(item % q_blocks);
    const std::size_t bh = item / q_blocks;
    const int b = static_cast<int>(bh / sh.heads), h = static_cast<int>(bh % sh.heads);
    const int query_start = qb * qpb;
    // advance_to_block: with a causal mask (CausalFromBottomRight) the block's keys stop at the
    // last one its last query sees.
    int num_keys = sh.seq_kv;
    if (p.causal) num_keys = std::min(query_start + (sh.seq_kv - sh.seq_q) + qpb, sh.seq_kv);
    for (int i = query_start; i < std::min(sh.seq_q, query_start + qpb); ++i) {
      const std::size_t row = bh * sh.seq_q + static_cast<std::size_t>(i);
      Row r{p.q.head_ptr(b, h) + static_cast<std::ptrdiff_t>(i) * sh.head_dim,
            p.k.head_ptr(b, h),
            p.v.head_ptr(b, h),
            i,
            sh.seq_kv,
            sh.head_dim,
            rows::visible_count(i, sh.seq_q, sh.seq_kv, p.causal),
            num_keys};
      out.lse[row] = row_pass(c, r, out.o.data.data() + row * sh.head_dim);
    }
  });
}

}  // namespace attndev::attention::twins
