// The device primitives flash2-tc (flash2_tc.cuh) is written with: thread index, barriers, warp
// shuffles, cp.async, ldmatrix, mma.sync, bf16/fp16 packing, shared/global vector copies.
//
// The kernel calls nothing else that touches shared memory or other threads, so the host-side
// simulation (test/cuda/tc_sim.hpp) can replace this header with host versions of the same
// functions that run every CUDA thread of a CTA as a host thread, exchange fragments through
// the PTX ISA's layouts and check every shared-memory access for races. The test defines
// ATTNDEV_TC_HOST_SIM and includes its header instead of this one.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#define ATTNDEV_TC_FN __device__ __forceinline__

namespace attndev::cuda::tc {

using Bf16Type = __nv_bfloat16;
using HalfType = __half;

ATTNDEV_TC_FN int thread_id() {
  return static_cast<int>(threadIdx.x);
}
ATTNDEV_TC_FN void sync_cta() {
  __syncthreads();
}
ATTNDEV_TC_FN void sync_warp() {
  __syncwarp();
}
ATTNDEV_TC_FN float shfl_xor(float v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}

ATTNDEV_TC_FN std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global -> shared copy, asynchronous; src_bytes = 0 writes zeros (rows past the end).
ATTNDEV_TC_FN void cp_async_16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(src_bytes));
}
ATTNDEV_TC_FN void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
// Waits until at most `kPending` of this thread's committed groups are still in flight.
template <int kPending>
ATTNDEV_TC_FN void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

ATTNDEV_TC_FN void ldmatrix_x4(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
ATTNDEV_TC_FN void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// D = A B + C, m16n8k16, fp32 accumulators in place.
template <class T>
ATTNDEV_TC_FN void mma_16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
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
// with the smaller column index (the lower half, as the mma fragment and memory order expect).
template <class T>
ATTNDEV_TC_FN std::uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&v);
  }
}

// One 4-byte shared store (the O tile's staging; `p` is 4-byte aligned).
ATTNDEV_TC_FN void st_shared_u32(void* p, std::uint32_t v) {
  *static_cast<std::uint32_t*>(p) = v;
}
// 16 bytes shared -> global as one vector load and one vector store (both 16-byte aligned).
ATTNDEV_TC_FN void copy16_shared_to_global(void* dst, const void* src) {
  *static_cast<uint4*>(dst) = *static_cast<const uint4*>(src);
}
ATTNDEV_TC_FN void st_global_f32(float* p, float v) {
  *p = v;
}

}  // namespace attndev::cuda::tc
