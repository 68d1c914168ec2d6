// wgmma m64n8k16 .f32.bf16.bf16, A from registers, B from shared memory through a matrix
// descriptor (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"): one
// warpgroup (128 threads) per case. B is K-major without swizzle: two 8 x 8 core matrices (k 0-7,
// k 8-15), each 8 rows of n holding 8 consecutive k (16 bytes), 128 bytes apart (the leading
// byte offset, between core matrices along K). A and D use mma.m16n8k16's fragment layout per
// warp, warp w holding rows 16 w .. 16 w + 15.
#include <cuda_runtime.h>

#include "tc_probe/wgmma.hpp"

namespace attndev::tc_probe {

namespace {

__global__ void wgmma_bf16_kernel(const std::uint16_t* a, const std::uint16_t* bt, const float* c,
                                  float* d) {
  __shared__ alignas(128) std::uint16_t sb[2 * 8 * 8];  // (k core, n, k in core)
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
  const std::uint16_t* A = a + blockIdx.x * 64 * 16;
  const std::uint16_t* B = bt + blockIdx.x * 8 * 16;
  const float* C = c + blockIdx.x * 64 * 8;
  for (int e = tid; e < 128; e += 128) {
    const int n = e / 16, k = e % 16;
    sb[(k / 8) * 64 + n * 8 + k % 8] = B[n * 16 + k];
  }
  __syncthreads();
  const auto pack = [](std::uint16_t lo, std::uint16_t hi) {
    return static_cast<std::uint32_t>(lo) | (static_cast<std::uint32_t>(hi) << 16);
  };
  const int r0 = 16 * warp + g, r1 = r0 + 8;
  const std::uint32_t a0 = pack(A[r0 * 16 + 2 * q], A[r0 * 16 + 2 * q + 1]);
  const std::uint32_t a1 = pack(A[r1 * 16 + 2 * q], A[r1 * 16 + 2 * q + 1]);
  const std::uint32_t a2 = pack(A[r0 * 16 + 8 + 2 * q], A[r0 * 16 + 8 + 2 * q + 1]);
  const std::uint32_t a3 = pack(A[r1 * 16 + 8 + 2 * q], A[r1 * 16 + 8 + 2 * q + 1]);
  float d0 = C[r0 * 8 + 2 * q], d1 = C[r0 * 8 + 2 * q + 1];
  float d2 = C[r1 * 8 + 2 * q], d3 = C[r1 * 8 + 2 * q + 1];
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  const std::uint64_t addr = static_cast<std::uint64_t>(__cvta_generic_to_shared(sb));
  const std::uint64_t desc = ((addr & 0x3FFFF) >> 4) |
                             (static_cast<std::uint64_t>(128 >> 4) << 16) |
                             (static_cast<std::uint64_t>(256 >> 4) << 32);
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, "
      "1, 1, 0;\n}\n"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc));
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#endif
  float* D = d + blockIdx.x * 64 * 8;
  D[r0 * 8 + 2 * q] = d0;
  D[r0 * 8 + 2 * q + 1] = d1;
  D[r1 * 8 + 2 * q] = d2;
  D[r1 * 8 + 2 * q + 1] = d3;
}

}  // namespace

bool run_wgmma_bf16(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& bt,
                    const std::vector<float>& c, std::vector<float>& d, std::string* why) {
  const std::size_t cases = c.size() / (64 * 8);
  std::uint8_t *da = nullptr, *db = nullptr;
  float *dc = nullptr, *dd = nullptr;
  const auto fail = [&](cudaError_t e) {
    if (why) *why = cudaGetErrorString(e);
    cudaFree(da), cudaFree(db), cudaFree(dc), cudaFree(dd);
    return false;
  };
  cudaError_t e;
  if ((e = cudaMalloc(&da, a.size())) != cudaSuccess) return fail(e);
  if ((e = cudaMalloc(&db, bt.size())) != cudaSuccess) return fail(e);
  if ((e = cudaMalloc(&dc, c.size() * 4)) != cudaSuccess) return fail(e);
  if ((e = cudaMalloc(&dd, c.size() * 4)) != cudaSuccess) return fail(e);
  cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(db, bt.data(), bt.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(dc, c.data(), c.size() * 4, cudaMemcpyHostToDevice);
  wgmma_bf16_kernel<<<static_cast<unsigned>(cases), 128>>>(
      reinterpret_cast<const std::uint16_t*>(da), reinterpret_cast<const std::uint16_t*>(db), dc,
      dd);
  if ((e = cudaGetLastError()) != cudaSuccess) return fail(e);
  if ((e = cudaDeviceSynchronize()) != cudaSuccess) return fail(e);
  d.resize(c.size());
  cudaMemcpy(d.data(), dd, c.size() * 4, cudaMemcpyDeviceToHost);
  cudaFree(da), cudaFree(db), cudaFree(dc), cudaFree(dd);
  return true;
}

}  // namespace attndev::tc_probe
