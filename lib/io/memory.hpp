// How much memory a piece of work needs against how much the machine can give it now.
//
// Sizes in attndev are products (B*H*N*d elements, parameters x optimizer state, ...) that wrap
// silently in size_t (65536 x 65536 x 2^20 x 2^20 = 2^64 = 0): a wrapped size allocates a short
// buffer that is then written past its end. Estimates are therefore computed with saturating
// arithmetic (an overflow is kBytesOverflow, larger than any machine) and compared with the memory
// available before anything large is allocated, so that the user gets "needs X, Y available"
// (exit 2) instead of a segfault, std::bad_alloc or the kernel's OOM killer.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace attndev::io {

inline constexpr std::uint64_t kBytesOverflow = UINT64_MAX;

constexpr std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
  return a > kBytesOverflow - b ? kBytesOverflow : a + b;
}

constexpr std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kBytesOverflow / b ? kBytesOverflow : a * b;
}

// The memory this process can still get: /proc/meminfo's MemAvailable, lowered to the limit of
// its cgroup (v2 memory.max - memory.current, or v1 limit - usage) when one is set. Empty where
// none of these can be read (then no check is made).
std::optional<std::uint64_t> available_memory_bytes();

// "12.3 GiB (13207024435 bytes)"; "more than 2^64 bytes (the sizes overflow)" for kBytesOverflow.
std::string format_bytes(std::uint64_t bytes);

// Work that cannot fit: the message names what, the bytes needed and the bytes available.
class MemoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ATTNDEV_MEMORY_LIMIT as a byte count; empty when unset. Throws MemoryError (a message that
// names the variable and the fix) for anything but a positive decimal integer: a limit that was
// meant but not applied would let work through that the user wanted refused.
std::optional<std::uint64_t> memory_limit_from_env();

// Throws MemoryError when `needed` exceeds the available memory (ATTNDEV_MEMORY_LIMIT, a byte
// count in the environment, lowers it: for tests and for sharing a machine).
void require_memory(std::uint64_t needed, std::string_view what);

}  // namespace attndev::io
