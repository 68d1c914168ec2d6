// Independent references of the CUDA kernels' twins (lib/attention/twins/), written from the
// kernels' sources as a literal simulation of the threads that hold one query row: each thread's
// registers, its columns, the shuffles. Every modelled choice is a switch, so that a test can show
// that the choice changes bits and that the twin takes the source's.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention/twins/steps.hpp"
#include "numerics/math.hpp"
#include "numerics/round.hpp"

namespace attndev::attention::testing {

struct TwinRow {
  const double* q;  // (d)
  const double* k;  // (N_kv, d)
  const double* v;  // (N_kv, d)
  int d, seq_kv, seen;
};

// FA-2 (flash_fwd_kernel.h / softmax.h) for one row over K/V blocks [n_min, n_max).
struct Fa2Choices {
  bool reverse_blocks = true;   // n_block_max - 1 down to n_block_min
  bool ffma_exp2_arg = true;    // exp2f(x * scale - max_scaled) contracted
  bool thread_lanes = true;     // 4 threads, columns t*2 + 8 nj + {0,1}; false: one sum in order
  bool quad_xor2_first = true;  // Allreduce<4>: xor 2 then xor 1; false: xor 1 then xor 2
  bool fused_sum_rescale = true;
  bool check_inf = false;
};

struct Fa2RowResult {
  std::vector<float> o;  // (d) normalized fp32
  float sum = 0, max = 0;
};

inline Fa2RowResult fa2_reference_row(const TwinRow& r, int block_n, int n_min, int n_max,
                                      float scale_log2, numerics::Format prob,
                                      const twins::MmaChain& mma, const twins::Exp2& exp2,
                                      const Fa2Choices& ch) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const int threads = ch.thread_lanes ? 4 : 1;
  std::vector<std::vector<int>> cols(threads);  // each thread's columns, in its register order
  for (int t = 0; t < threads; ++t)
    for (int nj = 0; nj < block_n / 8; ++nj)
      for (int e = 0; e < 2; ++e) cols[t].push_back(ch.thread_lanes ? nj * 8 + t * 2 + e : 0);
  if (!ch.thread_lanes) {
    cols[0].clear();
    for (int c = 0; c < block_n; ++c) cols[0].push_back(c);
  }
  std::vector<float> reg_sum(threads, 0.f), acc(r.d, 0.f);
  float m = -kInf;
  std::vector<int> order;
  for (int n = n_min; n < n_max; ++n) order.push_back(n);
  if (ch.reverse_blocks) std::reverse(order.begin(), order.end());
  for (std::size_t step = 0; step < order.size(); ++step) {
    const int j0 = order[step] * block_n;
    std::vector<float> s(block_n);
    for (int c = 0; c < block_n; ++c) {
      const int j = j0 + c;
      s[c] = j < r.seen ? mma.chain(r.q, 1, r.k + static_cast<long>(j) * r.d, 1, r.d, 0.f) : -kInf;
    }
    float m_new = step == 0 ? -kInf : m;
    for (float x : s) m_new = x > m_new ? x : m_new;
    float alpha = 1.f;
    if (step > 0) {
      const float cur = ch.check_inf && m_new == -kInf ? 0.f : m_new;
      alpha = exp2((m - cur) * scale_log2);
      for (float& o : acc) o = o * alpha;
    }
    m = m_new;
    const float ms = m == -kInf ? 0.f : m * scale_log2;
    std::vector<float> p(block_n);
    for (int c = 0; c < block_n; ++c) {
      if (ch.ffma_exp2_arg) {
        p[c] = exp2(std::fma(s[c], scale_log2, -ms));
      } else {
        const float prod = s[c] * scale_log2;
        p[c] = exp2(prod - ms);
      }
    }
    for (int t = 0; t < threads; ++t) {
      float acc_t = reg_sum[t];
      for (std::size_t e = 0; e < cols[t].size(); ++e) {
        const float x = p[cols[t][e]];
        if (e > 0) {
          acc_t = acc_t + x;
        } else if (step == 0) {
          acc_t = x;
        } else if (ch.fused_sum_rescale) {
          acc_t = std::fma(acc_t, alpha, x);
        } else {
          const float scaled = acc_t * alpha;
          acc_t = scaled + x;
        }
      }
      reg_sum[t] = acc_t;
    }
    std::vector<double> P(block_n);
    for (int c = 0; c < block_n; ++c) P[c] = numerics::round_to(prob, p[c]);
    const int keys = std::min(block_n, r.seq_kv - j0);
    for (int t = 0; t < r.d; ++t)
      acc[t] = mma.chain(P.data(), 1, r.v + static_cast<long>(j0) * r.d + t, r.d, keys, acc[t]);
  }
  Fa2RowResult out;
  if (threads == 4) {
    float lane[4] = {reg_sum[0], reg_sum[1], reg_sum[2], reg_sum[3]};
    for (int off : ch.quad_xor2_first ? std::vector<int>{2, 1} : std::vector<int>{1, 2}) {
      float next[4];
      for (int l = 0; l < 4; ++l) next[l] = lane[l] + lane[l ^ off];
      std::copy(next, next + 4, lane);
    }
    out.sum = lane[0];
  } else {
    out.sum = reg_sum[0];
  }
  const float inv = out.sum == 0.f || out.sum != out.sum ? 1.f : 1.f / out.sum;
  for (float& o : acc) o = o * inv;
  out.o = acc;
  out.max = m;
  return out;
}

// PyTorch's memory-efficient kernel (kernel_forward.h) for one row, output in registers.
struct MemEffChoices {
  bool forward_blocks = true;
  bool two_multiplies = true;  // accum *= scale, then *= log2e; false: one product scale*log2e
  bool warp_partials = true;   // per-thread, quad (xor 1, xor 2), warps in order; false: in order
};

inline std::vector<float> mem_efficient_reference_row(
    const TwinRow& r, int keys_per_block, int num_keys, float scale, numerics::Format prob,
    const twins::MmaChain& mma, const twins::Exp2& exp2, const MemEffChoices& ch) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float log2e = static_cast<float>(1.4426950408889634074);
  std::vector<int> starts;
  for (int s0 = 0; s0 < num_keys; s0 += keys_per_block) starts.push_back(s0);
  if (!ch.forward_blocks) std::reverse(starts.begin(), starts.end());
  float mi = -kInf, m_prime = -kInf, s_prime = 0.f;
  std::vector<float> acc(r.d, 0.f);
  bool first = true;
  for (int start : starts) {
    const int valid = std::min(keys_per_block, num_keys - start);
    std::vector<float> f(keys_per_block, 0.f);
    for (int c = 0; c < valid; ++c) {
      const int j = start + c;
      float x = mma.chain(r.q, 1, r.k + static_cast<long>(j) * r.d, 1, r.d, 0.f);
      if (ch.two_multiplies) {
        x = x * scale;
        x = j >= r.seen ? -kInf : x;
        x = x * log2e;
      } else {
        x = j >= r.seen ? -kInf : x * (scale * log2e);
      }
      f[c] = x;
    }
    for (int c = 0; c < valid; ++c) mi = std::max(mi, f[c]);
    float rescale = 1.f, mi_use = mi;
    if (m_prime < mi) {
      rescale = exp2(m_prime - mi);
      s_prime = s_prime * rescale;
    } else if (mi == -kInf) {
      mi_use = 0.f;
    }
    if (!first)
      for (float& o : acc) o = o * rescale;
    for (int c = 0; c < keys_per_block; ++c) f[c] = c < valid ? exp2(f[c] - mi_use) : 0.f;
    if (ch.warp_partials) {
      float total = s_prime;
      for (int w = 0; w < keys_per_block / 32; ++w) {
        float lane[4];
        for (int t = 0; t < 4; ++t) {
          lane[t] = 0.f;
          for (int nj = 0; nj < 4; ++nj)
            for (int e = 0; e < 2; ++e) lane[t] = lane[t] + f[w * 32 + nj * 8 + t * 2 + e];
        }
        const float a = lane[0] + lane[1], b = lane[2] + lane[3];
        total = total + (a + b);
      }
      s_prime = total;
    } else {
      for (int c = 0; c < keys_per_block; ++c) s_prime = s_prime + f[c];
    }
    if (mi_use == mi) m_prime = mi;
    std::vector<double> P(keys_per_block);
    for (int c = 0; c < keys_per_block; ++c) P[c] = numerics::round_to(prob, f[c]);
    for (int t = 0; t < r.d; ++t)
      acc[t] = mma.chain(P.data(), 1, r.v + static_cast<long>(start) * r.d + t, r.d, valid, acc[t]);
    first = false;
  }
  const float alpha = 1.f / (s_prime == 0.f ? 1.f : s_prime);
  for (float& o : acc) o = alpha * o;
  return acc;
}

}  // namespace attndev::attention::testing
