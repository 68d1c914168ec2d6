// libFuzzer target for the checkpoint readers (safetensors and .npy) and the W1 that consumes
// their output. Every input must either parse or throw TensorFileError: a crash, a sanitizer
// report (out-of-bounds read, overflow, leak) or any other exception is a bug.
//
// Oracle beyond "no crash": whatever parses is written back with the writers and read again; the
// values (already representable in their dtype) must survive bit for bit, NaN payloads aside.
//
//   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_tensor_readers
//   build/fuzz/fuzz/fuzz_tensor_readers -max_total_time=60 -rss_limit_mb=2048
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "io/npy.hpp"
#include "io/safetensors.hpp"
#include "metrics/wasserstein.hpp"

namespace {

void check_same(const attndev::io::NamedTensor& x, const attndev::io::NamedTensor& y) {
  if (x.name != y.name || x.dtype != y.dtype || x.shape != y.shape ||
      x.values.size() != y.values.size()) {
    std::abort();
  }
  for (std::size_t i = 0; i < x.values.size(); ++i) {
    const double a = x.values[i], b = y.values[i];
    if (std::isnan(a) != std::isnan(b)) std::abort();
    if (!std::isnan(a) && (a != b || std::signbit(a) != std::signbit(b))) std::abort();
  }
}

// W1 on the first tensors read, bounded so that one input stays fast.
void exercise_w1(const attndev::io::NamedTensor& t) {
  if (t.values.size() > (1u << 16)) return;
  const std::span<const double> v(t.values);
  const double w = attndev::metrics::wasserstein1(v, v.subspan(v.size() / 2));
  if (w < 0) std::abort();  // NaN is allowed (NaN values, empty half); negative never
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const unsigned char> bytes(data, size);
  try {
    const auto st = attndev::io::parse_safetensors(bytes, "fuzz");
    const auto again = attndev::io::parse_safetensors(
        attndev::io::encode_safetensors(st.tensors, st.metadata), "fuzz-roundtrip");
    if (again.tensors.size() != st.tensors.size() || again.metadata != st.metadata) std::abort();
    for (std::size_t i = 0; i < st.tensors.size(); ++i) {
      // The writer lays tensors out in the order given; the reader returns offset order: same.
      check_same(st.tensors[i], again.tensors[i]);
    }
    if (!st.tensors.empty()) exercise_w1(st.tensors.front());
  } catch (const attndev::io::TensorFileError&) {
  }
  try {
    const auto t = attndev::io::parse_npy(bytes, "fuzz", "x");
    check_same(t, attndev::io::parse_npy(attndev::io::encode_npy(t), "fuzz-roundtrip", "x"));
    exercise_w1(t);
  } catch (const attndev::io::TensorFileError&) {
  }
  return 0;
}
