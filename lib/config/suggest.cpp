#include "config/suggest.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace attndev::config {

namespace {
char lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

bool starts_with_ci(std::string_view text, std::string_view prefix) {
  if (prefix.size() > text.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (lower(text[i]) != lower(prefix[i])) return false;
  return true;
}
}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  // Three rows suffice: the transposition case looks two rows back.
  std::vector<std::size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j) prev[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1]))
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

std::optional<std::string_view> nearest_name(std::string_view bad,
                                             std::span<const std::string_view> valid) {
  if (bad.empty() || valid.empty()) return std::nullopt;
  std::optional<std::string_view> best;
  std::size_t best_distance = 0;
  for (std::string_view v : valid) {
    const std::size_t d = edit_distance(bad, v);
    if (!best || d < best_distance) {
      best = v;
      best_distance = d;
    }
  }
  const std::size_t allowed = std::max<std::size_t>(1, (bad.size() + 2) / 3);
  if (best_distance <= allowed) return best;
  // A truncated name ("kern" for "kernel-bf16") is a typo too, but only when unambiguous.
  std::optional<std::string_view> only_prefix;
  for (std::string_view v : valid) {
    if (!starts_with_ci(v, bad)) continue;
    if (only_prefix) return std::nullopt;
    only_prefix = v;
  }
  return only_prefix;
}

std::string did_you_mean(std::string_view bad, std::span<const std::string_view> valid) {
  const auto near = nearest_name(bad, valid);
  if (!near) return {};
  return " (did you mean \"" + std::string(*near) + "\"?)";
}

std::string join_names(std::span<const std::string_view> names, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out += separator;
    out += names[i];
  }
  return out;
}

}  // namespace attndev::config
