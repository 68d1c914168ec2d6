// Stable 64-bit hashes for point ids and config hashes.
//
// Ids must be identical on every machine, compiler and run (resume and shards match points by
// id), so this is a fixed algorithm over bytes, never std::hash: FNV-1a over the canonical JSON
// text, then the SplitMix64 finalizer so that nearby texts land far apart (shard assignment takes
// the id modulo the shard count and must spread points evenly).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace attndev::experiment {

inline constexpr std::uint64_t kFnv1a64Offset = 0xcbf29ce484222325ull;

// `h` continues a hash over earlier text: fnv1a64(b, fnv1a64(a)) == fnv1a64(a + b), so a text
// built of pieces is hashed without concatenating it.
constexpr std::uint64_t fnv1a64(std::string_view text, std::uint64_t h = kFnv1a64Offset) {
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

constexpr std::uint64_t splitmix64_finalize(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline std::string hex16(std::uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = kDigits[v & 0xf];
  return out;
}

inline std::string stable_hash_hex(std::string_view text) {
  return hex16(splitmix64_finalize(fnv1a64(text)));
}

// Inverse of hex16 for ids read back from files; false if `text` is not 16 hex digits.
inline bool parse_hex16(std::string_view text, std::uint64_t& out) {
  if (text.size() != 16) return false;
  std::uint64_t v = 0;
  for (char c : text) {
    v <<= 4;
    if (c >= '0' && c <= '9') {
      v |= static_cast<std::uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      v |= static_cast<std::uint64_t>(c - 'a' + 10);
    } else {
      return false;
    }
  }
  out = v;
  return true;
}

}  // namespace attndev::experiment
