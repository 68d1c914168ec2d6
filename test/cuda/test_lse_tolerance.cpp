// Host-only: the GPU test's lse tolerance (lse_tolerance.hpp) on rows built by hand. It must
// accept a one-ulp difference of log(l) (glibc vs libdevice) even where lse nearly cancels, which
// the former bound 4 eps |lse| rejected, and still reject a real difference.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "attention/attention.hpp"
#include "cuda/lse_tolerance.hpp"

using namespace attndev;

namespace {

// One query row, two keys with equal scores x (d = 1, q = 1, k = x, scale 1): M = x, l = 2,
// lse = x + log 2.
attention::Inputs two_equal_keys(double x) {
  attention::Inputs in;
  in.q = attention::Tensor(1, 1, 1, 1);
  in.k = attention::Tensor(1, 1, 2, 1);
  in.v = attention::Tensor(1, 1, 2, 1);
  in.q.data = {1.0};
  in.k.data = {x, x};
  in.v.data = {1.0, 1.0};
  return in;
}

}  // namespace

TEST_CASE("lse tolerance: a one-ulp log difference passes where lse nearly cancels", "[cuda]") {
  attention::Options opt;
  opt.scale = 1.0;
  const double log2 = std::log(2.0);
  const attention::Inputs in = two_equal_keys(-log2);  // lse = -log 2 + log 2 ~ 0
  const double cpu = -log2 + log2;
  const double gpu = -log2 + std::nextafter(log2, 1.0);  // libdevice's log one ulp away
  REQUIRE(cpu != gpu);
  const double eps = std::numeric_limits<double>::epsilon();
  CHECK_FALSE(std::fabs(cpu - gpu) <= 4 * eps * std::fabs(cpu));  // the former bound
  CHECK(cuda::tests::lse_close(in, opt, {cpu}, {gpu}));
}

TEST_CASE("lse tolerance: a real difference fails", "[cuda]") {
  attention::Options opt;
  opt.scale = 1.0;
  const attention::Inputs in = two_equal_keys(3.0);
  const double lse = 3.0 + std::log(2.0);
  CHECK(cuda::tests::lse_close(in, opt, {lse}, {lse}));
  CHECK_FALSE(cuda::tests::lse_close(in, opt, {lse}, {lse * (1 + 1e-12)}));
  CHECK_FALSE(cuda::tests::lse_close(in, opt, {lse}, {std::nan("")}));
  CHECK_FALSE(cuda::tests::lse_close(in, opt, {lse}, {lse, lse}));  // sizes differ
  // A fully masked row is -inf on both sides, or a failure.
  attention::Options causal = opt;
  causal.causal = true;
  attention::Inputs masked = in;
  masked.q = attention::Tensor(1, 1, 3, 1);  // N_q = 3 > N_kv = 2: row 0 sees no key
  masked.q.data = {1.0, 1.0, 1.0};
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(cuda::tests::lse_close(masked, causal, {-inf, lse, lse}, {-inf, lse, lse}));
  CHECK_FALSE(cuda::tests::lse_close(masked, causal, {-inf, lse, lse}, {0.0, lse, lse}));
}
