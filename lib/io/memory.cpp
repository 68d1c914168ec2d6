#include "io/memory.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "io/text_escape.hpp"

namespace attndev::io {

namespace {

// First whitespace-separated word of a file as a number; empty when unreadable or not a number
// ("max" in cgroup v2 means no limit).
std::optional<std::uint64_t> read_number(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word)) return std::nullopt;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(word.c_str(), &end, 10);
  if (end == word.c_str() || *end != '\0') return std::nullopt;
  return v;
}

std::optional<std::uint64_t> meminfo_available() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::uint64_t value = 0;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return sat_mul(value, 1024);  // reported in kB
  }
  return std::nullopt;
}

std::optional<std::uint64_t> cgroup_headroom() {
  // v2 (unified), then v1. A v1 "no limit" is a huge number, which the min below ignores.
  for (const auto& [limit_file, usage_file] :
       {std::pair{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
        std::pair{"/sys/fs/cgroup/memory/memory.limit_in_bytes",
                  "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    const std::optional<std::uint64_t> limit = read_number(limit_file);
    const std::optional<std::uint64_t> usage = read_number(usage_file);
    if (limit && usage) return *limit > *usage ? *limit - *usage : 0;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> available_memory_bytes() {
  std::optional<std::uint64_t> available = meminfo_available();
  if (const std::optional<std::uint64_t> cgroup = cgroup_headroom())
    available = available ? std::min(*available, *cgroup) : *cgroup;
  if (const std::optional<std::uint64_t> limit = memory_limit_from_env())
    available = available ? std::min(*available, *limit) : *limit;
  return available;
}

std::optional<std::uint64_t> memory_limit_from_env() {
  const char* text = std::getenv("ATTNDEV_MEMORY_LIMIT");
  if (!text) return std::nullopt;
  // Digits only: strtoull alone reads "-5" as 2^64 - 5 and "8G" as 8, and a limit that is not
  // the one the user meant is worse than none.
  const std::string_view s(text);
  const bool digits =
      !s.empty() && s.size() <= 20 && s.find_first_not_of("0123456789") == std::string_view::npos;
  errno = 0;
  const unsigned long long v = digits ? std::strtoull(text, nullptr, 10) : 0;
  if (!digits || errno == ERANGE || v == 0)
    throw MemoryError("ATTNDEV_MEMORY_LIMIT=\"" + printable(s.substr(0, 64)) +
                      "\" is not a memory limit: give a positive whole number of bytes (e.g. "
                      "ATTNDEV_MEMORY_LIMIT=8000000000 for 8 GB), or unset it");
  return v;
}

std::string format_bytes(std::uint64_t bytes) {
  if (bytes == kBytesOverflow) return "more than 2^64 bytes (the sizes overflow)";
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 6) {
    v /= 1024;
    ++unit;
  }
  char buffer[96];
  if (unit == 0) {
    std::snprintf(buffer, sizeof buffer, "%llu bytes", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buffer, sizeof buffer, "%.1f %s (%llu bytes)", v, kUnits[unit],
                  static_cast<unsigned long long>(bytes));
  }
  return buffer;
}

void require_memory(std::uint64_t needed, std::string_view what) {
  const std::optional<std::uint64_t> available = available_memory_bytes();
  if (needed == kBytesOverflow)
    throw MemoryError(std::string(what) + " needs " + format_bytes(needed) + "; " +
                      (available ? format_bytes(*available) : std::string("unknown")) +
                      " available: make the shape smaller");
  if (available && needed > *available)
    throw MemoryError(std::string(what) + " needs about " + format_bytes(needed) + " but only " +
                      format_bytes(*available) +
                      " of memory is available: make the shape smaller, or free memory");
}

}  // namespace attndev::io
