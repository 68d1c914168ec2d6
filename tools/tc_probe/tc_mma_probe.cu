// attndev_tc_mma_probe: runs the tensor cores' own instructions on random and adversarial vectors
// (mma_cases.hpp) and compares every D with the tensor-core model (numerics/mma.hpp) bit for bit:
//   mma.sync m16n8k16 .f32.bf16.bf16 / .f32.f16.f16      every GPU of sm_80 and newer
//   mma.sync m16n8k32 .f32.e4m3.e4m3                     sm_89 and newer
//   wgmma m64n8k16 .f32.bf16.bf16 (A in registers)       sm_90 (built for sm_90a, wgmma.cu)
// One summary line per (instruction, type): identical elements / compared, and the share; a JSON
// report with the first mismatches (inputs, model, device) in --out. Exit 0 when every share is
// 100%, 1 otherwise, 77 without a device (ctest's skip).
//
// Usage: attndev_tc_mma_probe [--out FILE.json] [--cases N] [--seed S]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tc_probe/mma_cases.hpp"
#include "tc_probe/wgmma.hpp"

namespace {

using namespace attndev;
constexpr int kExitSkipped = 77;

#define PROBE_CUDA(call)                                                                          \
  do {                                                                                            \
    const cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

// One warp per case: A (16, 16) row-major, Bt (8, 16) = B's columns as rows, C and D (16, 8).
// Fragments as the PTX ISA lays out m16n8k16 (.row.col): lane = 4 g + q.
template <bool kBf16>
__global__ void mma16_kernel(const std::uint16_t* a, const std::uint16_t* bt, const float* c,
                             float* d) {
  const int lane = threadIdx.x, g = lane / 4, q = lane % 4;
  const std::uint16_t* A = a + blockIdx.x * 256;
  const std::uint16_t* B = bt + blockIdx.x * 128;
  const auto pack = [](std::uint16_t lo, std::uint16_t hi) {
    return static_cast<std::uint32_t>(lo) | (static_cast<std::uint32_t>(hi) << 16);
  };
  const std::uint32_t a0 = pack(A[g * 16 + 2 * q], A[g * 16 + 2 * q + 1]);
  const std::uint32_t a1 = pack(A[(g + 8) * 16 + 2 * q], A[(g + 8) * 16 + 2 * q + 1]);
  const std::uint32_t a2 = pack(A[g * 16 + 8 + 2 * q], A[g * 16 + 8 + 2 * q + 1]);
  const std::uint32_t a3 = pack(A[(g + 8) * 16 + 8 + 2 * q], A[(g + 8) * 16 + 8 + 2 * q + 1]);
  const std::uint32_t b0 = pack(B[g * 16 + 2 * q], B[g * 16 + 2 * q + 1]);
  const std::uint32_t b1 = pack(B[g * 16 + 8 + 2 * q], B[g * 16 + 8 + 2 * q + 1]);
  const float* C = c + blockIdx.x * 128;
  float d0 = C[g * 8 + 2 * q], d1 = C[g * 8 + 2 * q + 1];
  float d2 = C[(g + 8) * 8 + 2 * q], d3 = C[(g + 8) * 8 + 2 * q + 1];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (kBf16)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
  float* D = d + blockIdx.x * 128;
  D[g * 8 + 2 * q] = d0;
  D[g * 8 + 2 * q + 1] = d1;
  D[(g + 8) * 8 + 2 * q] = d2;
  D[(g + 8) * 8 + 2 * q + 1] = d3;
}

// m16n8k32 e4m3: A (16, 32) bytes, Bt (8, 32), four elements per register.
__global__ void mma_e4m3_kernel(const std::uint8_t* a, const std::uint8_t* bt, const float* c,
                                float* d) {
  const int lane = threadIdx.x, g = lane / 4, q = lane % 4;
  const std::uint8_t* A = a + blockIdx.x * 512;
  const std::uint8_t* B = bt + blockIdx.x * 256;
  const auto word = [](const std::uint8_t* p) {
    return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
           (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
  };
  const std::uint32_t a0 = word(A + g * 32 + 4 * q), a1 = word(A + (g + 8) * 32 + 4 * q);
  const std::uint32_t a2 = word(A + g * 32 + 16 + 4 * q), a3 = word(A + (g + 8) * 32 + 16 + 4 * q);
  const std::uint32_t b0 = word(B + g * 32 + 4 * q), b1 = word(B + g * 32 + 16 + 4 * q);
  const float* C = c + blockIdx.x * 128;
  float d0 = C[g * 8 + 2 * q], d1 = C[g * 8 + 2 * q + 1];
  float d2 = C[(g + 8) * 8 + 2 * q], d3 = C[(g + 8) * 8 + 2 * q + 1];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
  float* D = d + blockIdx.x * 128;
  D[g * 8 + 2 * q] = d0;
  D[g * 8 + 2 * q + 1] = d1;
  D[(g + 8) * 8 + 2 * q] = d2;
  D[(g + 8) * 8 + 2 * q + 1] = d3;
}

template <class T>
T* to_device(const std::vector<T>& v) {
  T* p = nullptr;
  PROBE_CUDA(cudaMalloc(&p, v.size() * sizeof(T) + 16));
  PROBE_CUDA(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

struct Tally {
  std::string name;
  std::size_t compared = 0, identical = 0;
  std::vector<std::string> mismatches;  // the first few, as JSON objects
};

// Cases of one type, laid out for the kernels: A row-major, B transposed, C row-major.
struct Batch {
  std::vector<tc_probe::MmaCase> cases;
  std::vector<std::uint8_t> a, bt;  // raw element bits, elem_bytes each
  std::vector<float> c;
};

Batch make_batch(int m, int n, int k, numerics::Format f, int per_generator, std::uint64_t seed) {
  Batch b;
  const int bytes = numerics::traits(f).storage_bits / 8;
  for (const char* gen : tc_probe::kGenerators)
    for (int i = 0; i < per_generator; ++i) {
      tc_probe::MmaCase c = tc_probe::make_case(m, n, k, f, gen, seed++);
      for (double x : c.a) {
        const std::uint64_t bits = numerics::encode(f, x, numerics::Overflow::saturate);
        for (int y = 0; y < bytes; ++y) b.a.push_back(static_cast<std::uint8_t>(bits >> (8 * y)));
      }
      for (int j = 0; j < n; ++j)
        for (int kk = 0; kk < k; ++kk) {
          const std::uint64_t bits =
              numerics::encode(f, c.b[kk * n + j], numerics::Overflow::saturate);
          for (int y = 0; y < bytes; ++y)
            b.bt.push_back(static_cast<std::uint8_t>(bits >> (8 * y)));
        }
      for (double x : c.c) b.c.push_back(static_cast<float>(x));
      b.cases.push_back(std::move(c));
    }
  return b;
}

void compare(const Batch& b, const std::vector<float>& d, numerics::mma::Arch arch,
             numerics::mma::Instruction ins, numerics::mma::Kind kind, Tally& t) {
  const numerics::mma::DotFunction dot = numerics::mma::dot_function(arch, ins, kind);
  if (!dot) return;
  const std::size_t per = static_cast<std::size_t>(b.cases[0].m) * b.cases[0].n;
  for (std::size_t ci = 0; ci < b.cases.size(); ++ci) {
    const tc_probe::MmaCase& c = b.cases[ci];
    const std::vector<double> model =
        tc_probe::model_d(c, dot, numerics::mma::operands(c.format, c.format));
    for (std::size_t e = 0; e < per; ++e) {
      ++t.compared;
      const float dev = d[ci * per + e];
      if (tc_probe::same_d(model[e], dev)) {
        ++t.identical;
      } else if (t.mismatches.size() < 8) {
        std::ostringstream s;
        s << "{\"generator\": \"" << c.generator << "\", \"case\": " << ci << ", \"element\": " << e
          << ", \"model_bits\": " << numerics::bits_of(static_cast<float>(model[e]))
          << ", \"device_bits\": " << numerics::bits_of(dev) << "}";
        t.mismatches.push_back(s.str());
      }
    }
  }
}

std::vector<float> run_mma16(const Batch& b, bool bf16) {
  const int n = static_cast<int>(b.cases.size());
  auto* a = to_device(b.a);
  auto* bt = to_device(b.bt);
  auto* c = to_device(b.c);
  float* d = nullptr;
  PROBE_CUDA(cudaMalloc(&d, b.c.size() * sizeof(float)));
  if (bf16)
    mma16_kernel<true><<<n, 32>>>(reinterpret_cast<const std::uint16_t*>(a),
                                  reinterpret_cast<const std::uint16_t*>(bt), c, d);
  else
    mma16_kernel<false><<<n, 32>>>(reinterpret_cast<const std::uint16_t*>(a),
                                   reinterpret_cast<const std::uint16_t*>(bt), c, d);
  PROBE_CUDA(cudaGetLastError());
  std::vector<float> out(b.c.size());
  PROBE_CUDA(cudaMemcpy(out.data(), d, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  cudaFree(a), cudaFree(bt), cudaFree(c), cudaFree(d);
  return out;
}

std::vector<float> run_e4m3(const Batch& b) {
  auto* a = to_device(b.a);
  auto* bt = to_device(b.bt);
  auto* c = to_device(b.c);
  float* d = nullptr;
  PROBE_CUDA(cudaMalloc(&d, b.c.size() * sizeof(float)));
  mma_e4m3_kernel<<<static_cast<int>(b.cases.size()), 32>>>(a, bt, c, d);
  PROBE_CUDA(cudaGetLastError());
  std::vector<float> out(b.c.size());
  PROBE_CUDA(cudaMemcpy(out.data(), d, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  cudaFree(a), cudaFree(bt), cudaFree(c), cudaFree(d);
  return out;
}

numerics::mma::Arch arch_of(const cudaDeviceProp& p) {
  const int cc = p.major * 10 + p.minor;
  if (cc >= 100) return numerics::mma::Arch::sm100;
  if (cc >= 90) return numerics::mma::Arch::sm90;
  if (cc >= 89) return numerics::mma::Arch::sm89;
  return numerics::mma::Arch::sm80;  // sm_86 and sm_87 add as the A100 does
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  int per_generator = 256;
  std::uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (arg == "--cases" && i + 1 < argc) {
      per_generator = std::atoi(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: %s [--out FILE.json] [--cases N per generator] [--seed S]\n",
                   argv[0]);
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("tc-mma: SKIPPED: no CUDA device\n");
    return kExitSkipped;
  }
  cudaDeviceProp prop{};
  PROBE_CUDA(cudaGetDeviceProperties(&prop, 0));
  const numerics::mma::Arch arch = arch_of(prop);
  const int cc = prop.major * 10 + prop.minor;
  std::vector<Tally> tallies;
  using numerics::Format;
  using numerics::mma::Instruction;
  using numerics::mma::Kind;
  for (bool bf16 : {true, false}) {
    const Batch b = make_batch(16, 8, 16, bf16 ? Format::bf16 : Format::fp16, per_generator, seed);
    Tally t;
    t.name = std::string("mma.sync m16n8k16 ") + (bf16 ? "bf16" : "fp16");
    compare(b, run_mma16(b, bf16), arch, Instruction::mma, Kind::f16, t);
    tallies.push_back(t);
  }
  if (cc >= 89) {
    const Batch b = make_batch(16, 8, 32, Format::fp8_e4m3, per_generator, seed + 7);
    Tally t;
    t.name = "mma.sync m16n8k32 e4m3";
    compare(b, run_e4m3(b), arch, Instruction::mma, Kind::f8, t);
    tallies.push_back(t);
  }
  if (cc == 90) {
    const Batch b = make_batch(64, 8, 16, Format::bf16, per_generator / 4 + 1, seed + 13);
    Tally t;
    t.name = "wgmma m64n8k16 bf16";
    std::vector<float> d(b.c.size());
    std::string why;
    if (!tc_probe::run_wgmma_bf16(b.a, b.bt, b.c, d, &why)) {
      t.mismatches.push_back("{\"error\": \"" + why + "\"}");
      t.compared = 1;  // a probe that could not run is not a pass
    } else {
      compare(b, d, arch, Instruction::wgmma, Kind::f16, t);
    }
    tallies.push_back(t);
  }
  bool all = true;
  std::ostringstream json;
  json << "{\"gpu\": \"" << prop.name << "\", \"compute_capability\": " << cc << ", \"profile\": \""
       << numerics::mma::arch_name(arch) << "\", \"results\": [";
  for (std::size_t i = 0; i < tallies.size(); ++i) {
    const Tally& t = tallies[i];
    const double share = t.compared ? 100.0 * static_cast<double>(t.identical) / t.compared : 0.0;
    const bool pass = t.compared > 0 && t.identical == t.compared;
    all = all && pass;
    std::printf("tc-mma: %-24s %s %s: %zu/%zu identical (%.4f%%) %s\n", t.name.c_str(), prop.name,
                numerics::mma::arch_name(arch), t.identical, t.compared, share,
                pass ? "PASS" : "FAIL");
    json << (i ? ", " : "") << "{\"instruction\": \"" << t.name
         << "\", \"compared\": " << t.compared << ", \"identical\": " << t.identical
         << ", \"first_mismatches\": [";
    for (std::size_t m = 0; m < t.mismatches.size(); ++m)
      json << (m ? ", " : "") << t.mismatches[m];
    json << "]}";
  }
  json << "]}\n";
  if (!out.empty()) std::ofstream(out) << json.str();
  return all ? 0 : 1;
}
