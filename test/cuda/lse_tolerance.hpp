// The GPU test's lse comparison (test/cuda/gpu_kernels.cpp), in a header so that a host test
// (test_lse_tolerance.cpp) can show that it accepts what it must and rejects what it must.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention/attention.hpp"
#include "attention/rows/mask.hpp"

namespace attndev::cuda::tests {

// lse = M + log(l), M the row's (scaled) score maximum, goes through log() in double, which glibc
// and CUDA's libdevice may round differently in the last place. The difference is bounded by the
// terms, not by lse itself, which nearly cancels when M ~ -log(l) (a bound of 4 eps |lse| failed
// once in 9,600 random rows with a one-ulp difference of log): |cpu - gpu| <= 4 eps (|M| + |log
// l|). M is recomputed here from the inputs in double (max over the visible keys of scale q.k); the
// policy's rounding of the scores moves it by far less than the factor 4 leaves room for, and
// |log l| is then |lse - M|. Everything else is compared bit for bit.
inline bool lse_close(const attention::Inputs& in, const attention::Options& opt,
                      const std::vector<double>& cpu, const std::vector<double>& gpu) {
  if (cpu.size() != gpu.size()) return false;
  const attention::Shape s = in.shape();
  const double scale = opt.scale ? *opt.scale : 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  const double eps = std::numeric_limits<double>::epsilon();
  std::size_t row = 0;
  for (int b = 0; b < s.batch; ++b) {
    for (int h = 0; h < s.heads; ++h) {
      for (int i = 0; i < s.seq_q; ++i, ++row) {
        if (cpu[row] == gpu[row]) continue;  // includes -inf == -inf
        const int seen = attention::rows::visible_count(i, s.seq_q, s.seq_kv, opt.causal);
        double m = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < seen; ++j) {
          double dot = 0;
          for (int t = 0; t < s.head_dim; ++t) dot += in.q.at(b, h, i, t) * in.k.at(b, h, j, t);
          m = std::max(m, scale * dot);
        }
        if (!std::isfinite(m) || !std::isfinite(cpu[row])) return false;
        const double terms = std::fabs(m) + std::fabs(cpu[row] - m);
        if (!(std::fabs(cpu[row] - gpu[row]) <= 4 * eps * terms)) return false;
      }
    }
  }
  return true;
}

}  // namespace attndev::cuda::tests
