// attndev_exp2_probe: measures the device's ex2.approx.ftz.f32 (inline PTX; nothing here is built
// with fast-math) at every fp32 input a softmax can give it (attention/twins/exp2_table_model.hpp:
// x from -0 to -127, past the flush-to-zero limit, and x in [0, 1)), finds on this machine which
// structural hypothesis the measurements follow (attention/twins/exp2_table.cpp's fitting: does
// the result depend only on x's fraction once the integer part is split off, at which
// resolution; how many values differ from the reference 2^x), stores the best form with every
// value it misses, and checks ON THE DEVICE, against a fresh measurement, that the stored form
// reproduces every value. Writes the table the twins load (the GPU's name and driver in its
// header) and prints one summary line per hypothesis and per check.
//
// Usage: attndev_exp2_probe --out FILE.table [--threads N]
// Exit 0: table written and reproduced everywhere; 1: no form fits or a value is not reproduced;
// 77: no device.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "attention/parallel.hpp"
#include "attention/twins/exp2_table.hpp"

namespace {

using namespace attndev::attention::twins;
constexpr int kExitSkipped = 77;

#define PROBE_CUDA(call)                                                                          \
  do {                                                                                            \
    const cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

__device__ float ex2_approx_ftz(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__global__ void measure_kernel(std::uint32_t* y, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    y[i] = attndev::numerics::bits_of(
        ex2_approx_ftz(attndev::numerics::float_from_bits(exp2_domain_bits(i))));
}

// Every x measured afresh and compared with the stored form; counts the misses.
__global__ void verify_kernel(Exp2TableView t, std::uint64_t n, unsigned long long* misses) {
  unsigned long long local = 0;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    const float x = attndev::numerics::float_from_bits(exp2_domain_bits(i));
    local += attndev::numerics::bits_of(exp2_table_value(t, x)) !=
             attndev::numerics::bits_of(ex2_approx_ftz(x));
  }
  if (local) atomicAdd(misses, local);
}

template <class T>
T* upload(const std::vector<T>& v) {
  T* p = nullptr;
  PROBE_CUDA(cudaMalloc(&p, v.size() * sizeof(T) + 16));
  if (!v.empty()) PROBE_CUDA(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

std::string now_utc() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  int threads = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (arg == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s --out FILE.table [--threads N]\n", argv[0]);
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "%s: --out FILE.table is required\n", argv[0]);
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("exp2-table: SKIPPED: no CUDA device\n");
    return kExitSkipped;
  }
  cudaDeviceProp prop{};
  PROBE_CUDA(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  const auto t0 = std::chrono::steady_clock::now();

  // 1. Measure every x of the domain on the device (4 bytes each, kExp2DomainSize values).
  std::uint32_t* d_y = nullptr;
  PROBE_CUDA(cudaMalloc(&d_y, kExp2DomainSize * sizeof(std::uint32_t)));
  measure_kernel<<<prop.multiProcessorCount * 8, 256>>>(d_y, kExp2DomainSize);
  PROBE_CUDA(cudaGetLastError());
  std::vector<std::uint32_t> y(kExp2DomainSize);
  PROBE_CUDA(cudaMemcpy(y.data(), d_y, y.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  PROBE_CUDA(cudaFree(d_y));
  std::printf("exp2-table: measured ex2.approx.ftz.f32 at %llu inputs on %s\n",
              static_cast<unsigned long long>(kExp2DomainSize), prop.name);

  // How far the device is from a correctly rounded 2^x (double exp2, then one rounding).
  std::atomic<std::uint64_t> not_cr_count{0};
  constexpr std::uint64_t kChunk = 1ull << 24;
  attndev::attention::parallel_for(
      (kExp2DomainSize + kChunk - 1) / kChunk, threads, 0, [&](std::size_t c) {
        std::uint64_t n = 0;
        for (std::uint64_t i = c * kChunk; i < std::min(kExp2DomainSize, (c + 1) * kChunk); ++i) {
          const float x = attndev::numerics::float_from_bits(exp2_domain_bits(i));
          float cr = static_cast<float>(std::exp2(static_cast<double>(x)));
          if (cr < 0x1p-126f) cr = 0.0f;  // ftz
          n += attndev::numerics::bits_of(cr) != y[i];
        }
        not_cr_count += n;
      });
  const std::uint64_t not_cr = not_cr_count.load();
  std::printf("exp2-table: hypothesis correctly-rounded 2^x (ftz): %llu exceptions (%.4f%%)\n",
              static_cast<unsigned long long>(not_cr), 100.0 * not_cr / kExp2DomainSize);

  // 2. Fit on the host, from the measured values.
  Exp2FitOptions opt;
  opt.threads = threads;
  const Exp2Fit fit = fit_exp2_table(
      {{0, kExp2DomainSize}},
      [&](std::uint64_t i) { return attndev::numerics::float_from_bits(y[i]); }, opt);
  for (const Exp2Hypothesis& h : fit.hypotheses)
    std::printf("exp2-table: hypothesis %-24s %s %llu exceptions%s\n", h.name.c_str(),
                h.feasible ? "" : "(infeasible)", static_cast<unsigned long long>(h.exceptions),
                h.full_count ? "" : " (estimated from a sample)");
  if (!fit.ok) {
    std::printf("exp2-table: FAIL: %s\n", fit.why.c_str());
    return 1;
  }

  // 3. The stored form against a fresh measurement of every value, on the device.
  Exp2Table table = fit.table;
  auto* d_delta = upload(table.delta);
  auto* d_x = upload(table.exc_x);
  auto* d_e = upload(table.exc_y);
  Exp2TableView v = table.view();
  v.delta = d_delta, v.exc_x = d_x, v.exc_y = d_e;
  unsigned long long* d_miss = nullptr;
  PROBE_CUDA(cudaMalloc(&d_miss, sizeof(unsigned long long)));
  PROBE_CUDA(cudaMemset(d_miss, 0, sizeof(unsigned long long)));
  verify_kernel<<<prop.multiProcessorCount * 8, 256>>>(v, kExp2DomainSize, d_miss);
  PROBE_CUDA(cudaGetLastError());
  unsigned long long misses = 0;
  PROBE_CUDA(cudaMemcpy(&misses, d_miss, sizeof misses, cudaMemcpyDeviceToHost));
  std::printf(
      "exp2-table: device check of the stored form (%s, %zu exceptions, %llu bytes): "
      "%llu of %llu values not reproduced %s\n",
      table.hypothesis().c_str(), table.exc_x.size(),
      static_cast<unsigned long long>(table.file_bytes()), misses,
      static_cast<unsigned long long>(kExp2DomainSize), misses == 0 ? "PASS" : "FAIL");
  if (misses != 0) return 1;

  // 4. The file, with its provenance.
  char cc[16];
  std::snprintf(cc, sizeof cc, "%d.%d", prop.major, prop.minor);
  std::string report;
  for (const Exp2Hypothesis& h : fit.hypotheses)
    report += (report.empty() ? "" : "; ") + h.name + ":" + std::to_string(h.exceptions);
  table.meta = {{"gpu", prop.name},
                {"compute_capability", cc},
                {"driver", std::to_string(driver)},
                {"cuda_runtime", std::to_string(runtime)},
                {"instruction", "ex2.approx.ftz.f32"},
                {"domain", "x in [-127, -0] and [0, 1): every float"},
                {"measured", std::to_string(kExp2DomainSize)},
                {"not_correctly_rounded", std::to_string(not_cr)},
                {"hypotheses", report},
                {"created", now_utc()}};
  write_exp2_table(out, table);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("exp2-table: PASS: wrote %s (%s, %.1f s)\n", out.c_str(), table.hypothesis().c_str(),
              secs);
  return 0;
}
