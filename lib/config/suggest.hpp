// "Did you mean ...?" for names typed by a user (config keys, presets, formats, flags).
//
// Every user-facing error about an unknown name should say what was meant and what is valid, so
// that a typo costs one rerun, not a trip to the docs.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace attndev::config {

// Optimal-string-alignment distance (insertions, deletions, substitutions and adjacent
// transpositions, each costing 1), compared case-insensitively.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The valid name nearest to `bad`, if it is near enough to be a plausible typo: distance at most
// max(1, len/3) (rounded up), or `bad` is a prefix of exactly one candidate. Ties go to the
// candidate listed first.
std::optional<std::string_view> nearest_name(std::string_view bad,
                                             std::span<const std::string_view> valid);

// " (did you mean \"prob\"?)" or "" when nothing is near enough; append to an error message.
std::string did_you_mean(std::string_view bad, std::span<const std::string_view> valid);

// "a, b, c": the valid names, for "valid: ..." tails of error messages.
std::string join_names(std::span<const std::string_view> names, std::string_view separator = ", ");

}  // namespace attndev::config
