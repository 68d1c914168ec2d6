// flash2-tc: a FlashAttention-2 forward kernel on the tensor cores (mma.sync m16n8k16, bf16/fp16
// operands, fp32 accumulation), written to have the real kernels' numerical structure:
//   * Q, K, V tiles staged in shared memory (cp.async, K/V double-buffered), read into the mma
//     fragment layout with ldmatrix (V transposed by ldmatrix.trans);
//   * S = Q K^T accumulated in fp32 registers by the matrix unit (its internal summation order
//     and width are the hardware's: the one place this kernel's arithmetic is not the emulator's);
//   * online softmax in fp32 registers: running max, exp2 with log2(e) folded into the scale and
//     the subtraction fused into one FFMA, rescale of l and O by exp2(m_old - m_new);
//   * P cast to bf16/fp16 in registers (round to nearest even) and fed straight back as the A
//     operand of the P V mma; O accumulated in fp32 and rounded once, after the 1/l scaling.
// exp2f here is CUDA's (ex2.approx-based), not lib/numerics' exp2: this kernel is not claimed
// bit-identical to anything; its deviation is checked against the golden instead (docs/cuda.md).
//
// One CTA owns kBlockM query rows of one (batch, head); warp w owns rows 16w..16w+15. Each thread
// holds two rows of every fragment (groupID and groupID + 8, CUDA's C-fragment layout), so row
// statistics are reduced across the four threads of a quad with two shuffles.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "cuda/dispatch.hpp"

namespace attndev::cuda::tc {

template <MatElement E>
struct ElementOf;
template <>
struct ElementOf<MatElement::bf16> {
  using Type = __nv_bfloat16;
};
template <>
struct ElementOf<MatElement::fp16> {
  using Type = __half;
};

template <class T>
struct Params {
  const T* q;  // (B, H, N_q, d)
  const T* k;  // (B, H, N_kv, d)
  const T* v;  // (B, H, N_kv, d)
  T* o;        // (B, H, N_q, d)
  float* lse;  // (B, H, N_q)
  int seq_q, seq_kv;
  float scale;       // softmax scale, for the lse
  float scale_log2;  // scale * log2(e)
  bool causal;
};

// Shared-memory rows are padded by 8 elements (16 bytes): consecutive rows then start 4 banks
// apart, so the 8 row addresses of each ldmatrix 8x8 matrix hit distinct banks.
template <class Tag>
struct Layout {
  static constexpr int kStride = Tag::kHeadDim + 8;  // elements per smem row
  static constexpr int kQElems = Tag::kBlockM * kStride;
  static constexpr int kKvElems = Tag::kBlockN * kStride;
  // Q, then K[2], then V[2] (double-buffered K/V blocks).
  static constexpr int kTotalElems = kQElems + 4 * kKvElems;
  static constexpr int kBytes = kTotalElems * 2;
  static_assert((kStride * 2) % 16 == 0, "cp.async/ldmatrix need 16-byte aligned rows");
};

__device__ inline std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global -> shared copy; src_bytes = 0 writes zeros (rows past the sequence end).
__device__ inline void cp_async_16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(src_bytes));
}
__device__ inline void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
__device__ inline void cp_async_wait_all() {
  asm volatile("cp.async.wait_group 0;\n" ::);
}

__device__ inline void ldmatrix_x4(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ inline void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// D = A B + C, m16n8k16, fp32 accumulators in place.
template <class T>
__device__ inline void mma_16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                 std::uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two fp32 values -> one register of two bf16/fp16, round to nearest even; `lo` is the element
// with the smaller column index (the lower half, as the mma fragment expects).
template <class T>
__device__ inline std::uint32_t pack2(float lo, float hi) {
  std::uint32_t out;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    memcpy(&out, &v, 4);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    memcpy(&out, &v, 4);
  }
  return out;
}

// Copies `rows` rows of a (N, d) matrix starting at row `row0` into a padded smem tile; rows at
// or past n_rows are zero-filled so the mma reads zeros (and the mask removes them from S).
template <class Tag, class T>
__device__ inline void load_tile(T* smem, const T* gmem, int row0, int rows, int n_rows) {
  constexpr int kChunksPerRow = Tag::kHeadDim / 8;  // 16-byte chunks of 8 elements
  for (int c = threadIdx.x; c < rows * kChunksPerRow; c += Tag::kThreads) {
    const int r = c / kChunksPerRow, col = (c % kChunksPerRow) * 8;
    const bool inside = row0 + r < n_rows;
    const T* src = inside ? gmem + static_cast<std::size_t>(row0 + r) * Tag::kHeadDim + col : gmem;
    cp_async_16(smem + r * Layout<Tag>::kStride + col, src, inside ? 16 : 0);
  }
}

template <class Tag>
__global__ void __launch_bounds__(Tag::kThreads)
    flash2_tc_kernel(Params<typename ElementOf<Tag::kElement>::Type> p) {
  using T = typename ElementOf<Tag::kElement>::Type;
  using L = Layout<Tag>;
  constexpr int kD = Tag::kHeadDim, kBM = Tag::kBlockM, kBN = Tag::kBlockN;
  constexpr int kDSteps = kD / 16;  // k16 steps of Q K^T
  constexpr int kNTiles = kBN / 8;  // n8 tiles of S
  constexpr int kDTiles = kD / 8;   // n8 tiles of O
  constexpr float kNegInf = -INFINITY;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* q_s = reinterpret_cast<T*>(smem_raw);  // (kBM, kStride)
  T* k_s = q_s + L::kQElems;                // (2, kBN, kStride)
  T* v_s = k_s + 2 * L::kKvElems;           // (2, kBN, kStride)

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group = lane / 4, quad_lane = lane % 4;
  const int m0 = blockIdx.x * kBM;
  const std::size_t head = blockIdx.y;
  const T* q_g = p.q + head * p.seq_q * kD;   // (N_q, d)
  const T* k_g = p.k + head * p.seq_kv * kD;  // (N_kv, d)
  const T* v_g = p.v + head * p.seq_kv * kD;  // (N_kv, d)

  // K/V blocks this Q block needs: causal stops at the last column its last row may see.
  int n_blocks = (p.seq_kv + kBN - 1) / kBN;
  if (p.causal) {
    const long last_row = min(p.seq_q, m0 + kBM) - 1;
    const long last_col = last_row + (p.seq_kv - p.seq_q);
    const long needed = last_col < 0 ? 0 : last_col / kBN + 1;
    if (needed < n_blocks) n_blocks = static_cast<int>(needed);
  }

  load_tile<Tag>(q_s, q_g, m0, kBM, p.seq_q);
  if (n_blocks > 0) {
    load_tile<Tag>(k_s, k_g, 0, kBN, p.seq_kv);
    load_tile<Tag>(v_s, v_g, 0, kBN, p.seq_kv);
  }
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();

  // Q fragments stay in registers for the whole K/V loop.
  std::uint32_t q_frag[kDSteps][4];
  for (int kk = 0; kk < kDSteps; ++kk)
    ldmatrix_x4(q_frag[kk], q_s + (warp * 16 + lane % 16) * L::kStride + kk * 16 + (lane / 16) * 8);

  float acc[kDTiles][4] = {};             // O, unnormalized, fp32
  float row_max[2] = {kNegInf, kNegInf};  // rows group and group + 8
  float row_sum[2] = {0.f, 0.f};          // this thread's share of l (quad-reduced at the end)
  const int row_of[2] = {m0 + warp * 16 + group, m0 + warp * 16 + group + 8};

  for (int nb = 0; nb < n_blocks; ++nb) {
    const int buf = nb & 1;
    if (nb + 1 < n_blocks) {  // prefetch the next block while this one is computed
      load_tile<Tag>(k_s + (buf ^ 1) * L::kKvElems, k_g, (nb + 1) * kBN, kBN, p.seq_kv);
      load_tile<Tag>(v_s + (buf ^ 1) * L::kKvElems, v_g, (nb + 1) * kBN, kBN, p.seq_kv);
      cp_async_commit();
    }
    const T* kb = k_s + buf * L::kKvElems;  // (kBN, kStride)
    const T* vb = v_s + buf * L::kKvElems;  // (kBN, kStride)

    // S = Q K^T for this warp's 16 rows: (16, kBN) in fp32 fragments.
    float s[kNTiles][4] = {};
    for (int kk = 0; kk < kDSteps; ++kk) {
      for (int np = 0; np < kNTiles / 2; ++np) {
        const int mat = lane / 8;
        std::uint32_t b[4];
        ldmatrix_x4(
            b, kb + (np * 16 + lane % 8 + (mat / 2) * 8) * L::kStride + kk * 16 + (mat % 2) * 8);
        mma_16816<T>(s[2 * np], q_frag[kk], b[0], b[1]);
        mma_16816<T>(s[2 * np + 1], q_frag[kk], b[2], b[3]);
      }
    }

    // Mask columns past N_kv (tile tail) and, when causal, right of the bottom-right diagonal.
    const int col0 = nb * kBN + quad_lane * 2;
    for (int nt = 0; nt < kNTiles; ++nt) {
      for (int c = 0; c < 4; ++c) {
        const int col = col0 + nt * 8 + (c & 1);
        const int row = row_of[c / 2];
        if (col >= p.seq_kv || (p.causal && col > row + (p.seq_kv - p.seq_q))) s[nt][c] = kNegInf;
      }
    }

    // Online softmax, per row r of this thread (c = 2r, 2r + 1 in each n-tile).
    for (int r = 0; r < 2; ++r) {
      float mx = row_max[r];
      for (int nt = 0; nt < kNTiles; ++nt) mx = fmaxf(mx, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      // A row that has seen only masked columns keeps max -inf; using 0 as the subtrahend makes
      // every p = exp2(-inf) = 0 instead of exp2(-inf - -inf) = NaN.
      const float max_scaled = mx == kNegInf ? 0.f : mx * p.scale_log2;
      // (m_old - m_new) first, as FA-2 does: exactly 0 -> alpha exactly 1 when the max did not
      // move (a fused m_old*c - m_new*c would leave the product's rounding error instead).
      // m_old = -inf gives alpha = 0; a row still at -inf keeps alpha = 1 (its l and O are 0).
      const float alpha = mx == kNegInf ? 1.f : exp2f((row_max[r] - mx) * p.scale_log2);
      row_max[r] = mx;
      float sum = 0.f;
      for (int nt = 0; nt < kNTiles; ++nt) {
        for (int c = 2 * r; c < 2 * r + 2; ++c) {
          s[nt][c] = exp2f(fmaf(s[nt][c], p.scale_log2, -max_scaled));
          sum += s[nt][c];
        }
      }
      row_sum[r] = fmaf(row_sum[r], alpha, sum);
      for (int dt = 0; dt < kDTiles; ++dt) {
        acc[dt][2 * r] *= alpha;
        acc[dt][2 * r + 1] *= alpha;
      }
    }

    // O += P V: P leaves the S fragments as bf16/fp16 A fragments (two n8 tiles per k16 step).
    for (int kk = 0; kk < kNTiles / 2; ++kk) {
      const std::uint32_t a[4] = {pack2<T>(s[2 * kk][0], s[2 * kk][1]),
                                  pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                                  pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                  pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
      for (int dp = 0; dp < kDTiles / 2; ++dp) {
        const int mat = lane / 8;
        std::uint32_t b[4];
        ldmatrix_x4_trans(
            b, vb + (kk * 16 + lane % 8 + (mat % 2) * 8) * L::kStride + dp * 16 + (mat / 2) * 8);
        mma_16816<T>(acc[2 * dp], a, b[0], b[1]);
        mma_16816<T>(acc[2 * dp + 1], a, b[2], b[3]);
      }
    }
    // The next block must have landed, and every warp must be done with `buf` before the next
    // iteration's prefetch overwrites it.
    cp_async_wait_all();
    __syncthreads();
  }

  // Epilogue: l = quad sum; O = acc / l rounded once to the output type; fully masked rows
  // (l == 0) are defined as O = 0, lse = -inf.
  for (int r = 0; r < 2; ++r) {
    float l = row_sum[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int row = row_of[r];
    if (row >= p.seq_q) continue;
    const float inv_l = l == 0.f ? 0.f : 1.f / l;
    T* o_row = p.o + (head * p.seq_q + row) * kD;  // (d)
    for (int dt = 0; dt < kDTiles; ++dt) {
      const std::uint32_t packed = pack2<T>(acc[dt][2 * r] * inv_l, acc[dt][2 * r + 1] * inv_l);
      memcpy(o_row + dt * 8 + quad_lane * 2, &packed, 4);
    }
    if (quad_lane == 0)
      p.lse[head * p.seq_q + row] = l == 0.f ? kNegInf : row_max[r] * p.scale + logf(l);
  }
}

}  // namespace attndev::cuda::tc
