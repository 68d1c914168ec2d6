// FlashAttention-2's CUDA forward, step by step (fa2_cuda.hpp; sources in docs/numerics.md).
#include "attention/twins/fa2_cuda.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "attention/parallel.hpp"
#include "attention/rows/mask.hpp"
#include "numerics/math.hpp"
#include "numerics/round.hpp"

namespace attndev::attention::twins {

namespace fa2_impl {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int kQuad = 4;  // the threads that share a row of an m16n8 accumulator

// cute::ceil_div as the launch code writes it (C++ integer division: a negative numerator, a
// causal query block with no key, rounds toward zero).
int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

// The combine kernel's expf / logf and the split kernel's __logf: the project's exp and a
// correctly rounded log stand in for the device's (they move the fp32 split weights by about an
// ulp, which reaches a 16-bit output rarely).
float exp_f(float x) {
  return numerics::exp_f32(x);
}
float log_f(float x) {
  return static_cast<float>(std::log(static_cast<double>(x)));
}

// The geometry of one (batch, head) and everything a row needs.
struct Head {
  const double* q;  // (N_q, d)
  const double* k;  // (N_kv, d)
  const double* v;  // (N_kv, d)
  int seq_q, seq_kv, d;
  bool causal;
};

struct RowSetup {
  const TwinSetup* setup;
  const Fa2Build* build;
  int block_n;
  float scale_log2;  // params.scale_softmax_log2
  numerics::Format prob;
};

// One row's state after a CTA's pass over its K/V blocks: the row max, the 4 threads' row sums
// and the unnormalized fp32 O.
struct RowState {
  float row_max = -kInf;
  float row_sum[kQuad] = {0.f, 0.f, 0.f, 0.f};
  std::vector<float> acc;  // (d)
};

// compute_attn_1rowblock[_splitkv] for query row i over K/V blocks n_max - 1 down to n_min
// (flash_fwd_kernel.h: `for (; n_block >= n_block_min; --n_block)`).
void row_pass(const Head& h, const RowSetup& rs, int i, int n_min, int n_max, bool check_inf,
              RowState& st) {
  const int bn = rs.block_n, d = h.d;
  const Exp2& exp2 = rs.setup->exp2;
  const MmaChain& mma = *rs.setup->mma;
  const float sl2 = rs.scale_log2;
  st.row_max = -kInf;
  for (float& sum : st.row_sum) sum = 0.f;
  st.acc.assign(static_cast<std::size_t>(d), 0.f);
  std::vector<float> s(static_cast<std::size_t>(bn));   // (Bc) scores, then p
  std::vector<double> P(static_cast<std::size_t>(bn));  // (Bc) P as cast for the P V mma
  const int seen = rows::visible_count(i, h.seq_q, h.seq_kv, h.causal);
  const double* q_i = h.q + static_cast<std::ptrdiff_t>(i) * d;
  bool first = true;
  for (int n = n_max - 1; n >= n_min; --n) {
    const int j0 = n * bn;
    const int in_range = std::min(bn, h.seq_kv - j0);  // keys past N_kv: zero-filled, masked
    // S = Q K^T from C = 0 (clear(acc_s)); apply_mask sets masked and out-of-range keys to -inf.
    for (int c = 0; c < bn; ++c) {
      const int j = j0 + c;
      s[c] =
          j < seen ? mma.chain(q_i, 1, h.k + static_cast<std::ptrdiff_t>(j) * d, 1, d, 0.f) : -kInf;
    }
    // softmax_rescale_o. The max is exact in any order (MaxOp: fmaxf, then Allreduce<4>).
    float block_max = -kInf;
    for (int c = 0; c < bn; ++c) block_max = std::fmax(block_max, s[c]);
    float scores_scale = 1.f;
    if (first) {
      st.row_max = block_max;
    } else {
      const float prev = st.row_max;
      st.row_max = std::fmax(prev, block_max);
      // Check_inf: a row whose scores are all -inf so far keeps exp2(-inf - 0) = 0, never NaN.
      const float cur = check_inf && st.row_max == -kInf ? 0.f : st.row_max;
      scores_scale = exp2((prev - cur) * sl2);
      for (float& o : st.acc) o *= scores_scale;
    }
    // scale_apply_exp2: the -inf guard, then one FFMA (or __fmul_rn then FADD) per score.
    const float max_scaled = st.row_max == -kInf ? 0.f : st.row_max * sl2;
    for (int c = 0; c < bn; ++c)
      s[c] = exp2(rs.build->unfused_exp2_arg ? s[c] * sl2 - max_scaled
                                             : std::fma(s[c], sl2, -max_scaled));
    // reduce_sum: thread t of the quad sums its columns (t * 2 + 8 nj + {0, 1}) in order, the
    // fp32 p before P is cast. The first block starts from the thread's first p (zero_init).
    for (int t = 0; t < kQuad; ++t) {
      float& sum = st.row_sum[t];
      for (int nj = 0; nj < bn / 8; ++nj)
        for (int e = 0; e < 2; ++e) {
          const float x = s[static_cast<std::size_t>(nj * 8 + t * 2 + e)];
          if (nj == 0 && e == 0)
            sum = first                         ? x
                  : rs.build->fused_sum_rescale ? std::fma(sum, scores_scale, x)
                                                : sum * scores_scale + x;
          else
            sum += x;
        }
    }
    // P = convert_type<Element>(acc_s) (RN); acc_o += P V over the block's keys (gemm_rs), C =
    // the rescaled acc_o. Masked keys have p = 0 and add nothing; keys past N_kv are left out.
    for (int c = 0; c < bn; ++c) P[c] = numerics::round_to(rs.prob, s[c]);
    const double* v0 = h.v + static_cast<std::ptrdiff_t>(j0) * d;
    for (int t = 0; t < d; ++t) st.acc[t] = mma.chain(P.data(), 1, v0 + t, d, in_range, st.acc[t]);
    first = false;
  }
}

// normalize_softmax_lse: the quad all-reduce of the row sum (Allreduce<4>: xor 2, then xor 1),
// 1/sum (1 for a zero or NaN sum), acc_o *= inv_sum. Returns the reduced sum.
float normalize(RowState& st) {
  const float sum = (st.row_sum[0] + st.row_sum[2]) + (st.row_sum[1] + st.row_sum[3]);
  const float inv_sum = (sum == 0.f || sum != sum) ? 1.f : 1.f / sum;
  for (float& o : st.acc) o *= inv_sum;
  return sum;
}

// The first and one-past-last K/V block of CTA (m_block, split), causal clamp included
// (compute_attn_1rowblock[_splitkv]).
void block_range(const Head& h, int block_m, int block_n, int m_block, int split, int splits,
                 int& n_min, int& n_max) {
  const int n_blocks = ceil_div(h.seq_kv, block_n);
  const int per_split = ceil_div(n_blocks, splits);
  n_min = splits > 1 ? split * per_split : 0;
  n_max = splits > 1 ? std::min(n_blocks, (split + 1) * per_split) : n_blocks;
  if (h.causal)
    n_max = std::min(n_max, ceil_div((m_block + 1) * block_m + h.seq_kv - h.seq_q, block_n));
}

Head head_of(const Problem& p, int b, int hh) {
  return {p.q.head_ptr(b, hh),
          p.k.head_ptr(b, hh),
          p.v.head_ptr(b, hh),
          p.shape.seq_q,
          p.shape.seq_kv,
          p.shape.head_dim,
          p.causal};
}

// combine_attn_seqk_parallel for one row: the splits' lse merged through kRowsPerLoadTranspose
// threads (each summing its own splits, then a butterfly), O = sum_s exp(lse_s - lse) O_s with
// one FFMA per split in split order. lse_s / o_s: (splits) and (splits, d).
float combine_row(const float* lse_s, const float* o_s, int splits, int head_dim_padded, int d,
                  numerics::Format output, double* o) {
  int log_max = 1;
  while ((1 << log_max) < splits) ++log_max;
  const int max_splits = 1 << log_max;
  const int block_m = head_dim_padded % 128 == 0 ? 4 : (head_dim_padded % 64 == 0 ? 8 : 16);
  const int lanes = std::min(128 / block_m, max_splits);  // kRowsPerLoadTranspose
  const int per_thread = (max_splits * block_m + 127) / 128;
  const auto lse_of = [&](int s) { return s < splits ? lse_s[s] : -kInf; };
  std::vector<float> x(static_cast<std::size_t>(lanes));
  float lse_max = -kInf;
  for (int s = 0; s < max_splits; ++s) lse_max = std::fmax(lse_max, lse_of(s));
  lse_max = lse_max == -kInf ? 0.f : lse_max;
  for (int r = 0; r < lanes; ++r) {
    float sum = exp_f(lse_of(r) - lse_max);
    for (int l = 1; l < per_thread; ++l) sum += exp_f(lse_of(l * lanes + r) - lse_max);
    x[static_cast<std::size_t>(r)] = sum;
  }
  for (int off = lanes / 2; off >= 1; off /= 2) {
    std::vector<float> y = x;
    for (int r = 0; r < lanes; ++r) y[r] = x[r] + x[static_cast<std::size_t>(r ^ off)];
    x.swap(y);
  }
  const float lse_sum = x[0];
  const float lse_logsum = (lse_sum == 0.f || lse_sum != lse_sum) ? kInf : log_f(lse_sum) + lse_max;
  for (int t = 0; t < d; ++t) {
    float acc = 0.f;
    for (int s = 0; s < splits; ++s)
      acc =
          std::fma(exp_f(lse_s[s] - lse_logsum), o_s[static_cast<std::ptrdiff_t>(s) * d + t], acc);
    o[t] = numerics::round_to(output, acc);
  }
  return lse_logsum;
}

}  // namespace fa2_impl

using namespace fa2_impl;

int fa2_num_splits_heuristic(int batch_nheads_mblocks, int num_sms, int num_n_blocks,
                             int max_splits) {
  if (static_cast<float>(batch_nheads_mblocks) >= 0.8f * static_cast<float>(num_sms)) return 1;
  max_splits = std::min({max_splits, num_sms, num_n_blocks});
  float max_efficiency = 0.f;
  std::vector<float> efficiency;
  const auto eligible = [&](int s) {
    return s == 1 || ceil_div(num_n_blocks, s) != ceil_div(num_n_blocks, s - 1);
  };
  for (int s = 1; s <= max_splits; ++s) {
    if (!eligible(s)) {
      efficiency.push_back(0.f);
      continue;
    }
    const float waves = static_cast<float>(batch_nheads_mblocks * s) / static_cast<float>(num_sms);
    const float eff = waves / std::ceil(waves);
    max_efficiency = std::max(max_efficiency, eff);
    efficiency.push_back(eff);
  }
  for (int s = 1; s <= max_splits; ++s)
    if (eligible(s) && efficiency[static_cast<std::size_t>(s - 1)] >= 0.85 * max_efficiency)
      return s;
  return 1;
}

bool fa2_plan(const Shape& shape, bool causal, const GpuProfile& gpu, Fa2Plan& plan,
              std::string* why) {
  const int d = shape.head_dim;
  if (d > 256) {
    if (why)
      *why = "FlashAttention-2 supports head dims up to 256 (flash_api.cpp mha_fwd), got d = " +
             std::to_string(d);
    return false;
  }
  const int head_size = (d + 7) / 8 * 8;  // PyTorch pads Q, K, V's head dim to a multiple of 8
  const int hd = head_size <= 32    ? 32
                 : head_size <= 64  ? 64
                 : head_size <= 96  ? 96
                 : head_size <= 128 ? 128
                 : head_size <= 192 ? 192
                                    : 256;
  plan = Fa2Plan{};
  plan.head_dim_padded = hd;
  // run_mha_fwd_hdim* (no dropout).
  if (hd <= 64) {
    plan.block_m = 128, plan.block_n = 128;
  } else if (hd == 96) {
    plan.block_m = gpu.sm8x && causal ? 64 : 128, plan.block_n = 64;
  } else if (hd == 128) {
    plan.block_m = gpu.sm8x && causal ? 64 : 128;
    plan.block_n = gpu.sm8x ? (causal ? 64 : 32) : 64;
  } else if (hd == 192) {
    plan.block_m = 128, plan.block_n = 64;
  } else {
    plan.block_m = gpu.hdim256_wide ? 128 : 64, plan.block_n = 64;
  }
  // set_params_splitkv with num_splits = 0 (mha_fwd) and the SM count doubled (128 threads).
  const int split_n = head_size <= 64 ? 256 : (head_size <= 128 ? 128 : 64);
  plan.num_splits = fa2_num_splits_heuristic(shape.batch * shape.heads * ceil_div(shape.seq_q, 64),
                                             gpu.sms * 2, ceil_div(shape.seq_kv, split_n), 128);
  plan.split_block_n = hd <= 64 ? 256 : (hd <= 128 ? 128 : 64);  // run_mha_fwd_splitkv_dispatch
  return true;
}

void run_fa2(const Problem& p, const TwinSetup& setup, const Fa2Build& build, Output& out) {
  Fa2Plan plan;
  std::string why;
  if (!fa2_plan(p.shape, p.causal, setup.gpu, plan, &why)) throw std::invalid_argument(why);
  const Shape& sh = p.shape;
  // params.scale_softmax_log2 = softmax_scale * M_LOG2E: a float times a double, stored as a
  // float. The scale folded into Q leaves the kernel a softmax_scale of 1.
  const float softmax_scale = static_cast<float>(p.scale_in_query ? 1.0 : p.scale);
  RowSetup rs{&setup, &build, 0,
              static_cast<float>(static_cast<double>(softmax_scale) * numerics::kLog2e),
              p.policy.prob};
  const int splits = plan.num_splits;
  const int block_m = splits > 1 ? 64 : plan.block_m;
  rs.block_n = splits > 1 ? plan.split_block_n : plan.block_n;
  const int m_blocks = ceil_div(sh.seq_q, block_m);
  // Check_inf: causal in the standard kernel; also !Is_even_MN in the split kernel.
  const bool even_mn = sh.seq_kv % rs.block_n == 0 && sh.seq_q % block_m == 0;
  const bool check_inf = p.causal || (splits > 1 && !even_mn);
  const std::size_t rows = static_cast<std::size_t>(sh.batch) * sh.heads * sh.seq_q;
  const int d = sh.head_dim;
  std::vector<float> o_split(splits > 1 ? rows * splits * d : 0);  // (splits, B*H*N_q, d)
  std::vector<float> lse_split(splits > 1 ? rows * splits : 0);    // (splits, B*H*N_q)
  const std::size_t items = static_cast<std::size_t>(sh.batch) * sh.heads * m_blocks * splits;
  parallel_for(items, p.threads, p.schedule_seed, [&](std::size_t item) {
    const int split = static_cast<int>(item % splits);
    const int m_block = static_cast<int>(item / splits % m_blocks);
    const std::size_t bh = item / splits / m_blocks;
    const int b = static_cast<int>(bh / sh.heads), hh = static_cast<int>(bh % sh.heads);
    const Head h = head_of(p, b, hh);
    int n_min = 0, n_max = 0;
    block_range(h, block_m, rs.block_n, m_block, split, splits, n_min, n_max);
    RowState st;
    for (int i = m_block * block_m; i < std::min(sh.seq_q, (m_block + 1) * block_m); ++i) {
      const std::size_t row = bh * sh.seq_q + static_cast<std::size_t>(i);
      row_pass(h, rs, i, n_min, n_max, check_inf, st);  // no block at all: O = 0, sum = 0
      const float sum = normalize(st);
      if (splits > 1) {
        const std::size_t r = static_cast<std::size_t>(split) * rows + row;
        std::copy(st.acc.begin(), st.acc.end(),
                  o_split.begin() + static_cast<std::ptrdiff_t>(r * d));
        // lse = row_max * softmax_scale + __logf(sum), contracted to one FFMA; -inf if empty.
        lse_split[r] =
            (sum == 0.f || sum != sum) ? -kInf : std::fma(st.row_max, softmax_scale, log_f(sum));
        continue;
      }
      double* o = out.o.data.data() + row * d;
      for (int t = 0; t < d; ++t) o[t] = numerics::round_to(p.policy.output, st.acc[t]);
      out.lse[row] = sum == 0.f || sum != sum
                         ? -std::numeric_limits<double>::infinity()
                         : st.row_max * static_cast<double>(softmax_scale) + std::log(sum);
    }
  });
  if (splits == 1) return;
  parallel_for(rows, p.threads, p.schedule_seed, [&](std::size_t row) {
    std::vector<float> lse_s(static_cast<std::size_t>(splits)),
        o_s(static_cast<std::size_t>(splits) * d);
    for (int s = 0; s < splits; ++s) {
      const std::size_t r = static_cast<std::size_t>(s) * rows + row;
      lse_s[s] = lse_split[r];
      std::copy_n(o_split.begin() + static_cast<std::ptrdiff_t>(r * d), d,
                  o_s.begin() + static_cast<std::ptrdiff_t>(s) * d);
    }
    const float lse = combine_row(lse_s.data(), o_s.data(), splits, plan.head_dim_padded, d,
                                  p.policy.output, out.o.data.data() + row * d);
    out.lse[row] = std::isinf(lse) ? -std::numeric_limits<double>::infinity() : lse;
  });
}

}  // namespace attndev::attention::twins
