// libFuzzer target for the config loader: any byte string must either parse into a Config whose
// plan expands, or be refused with a ConfigError; never crash, hang, leak or throw anything else.
//
// An input whose first line starts with "@" carries `-a` overrides on that line, separated by
// ';' (e.g. "@seq_len=[64];block_c=0"), so the override path is fuzzed too.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "experiment/spec/config.hpp"
#include "experiment/spec/plan.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  if (!text.empty() && text.front() == '@') {
    const std::size_t eol = text.find('\n');
    std::string_view line =
        text.substr(1, eol == std::string_view::npos ? std::string_view::npos : eol - 1);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    while (!line.empty()) {
      const std::size_t semi = line.find(';');
      overrides.emplace_back(line.substr(0, semi));
      line = semi == std::string_view::npos ? std::string_view() : line.substr(semi + 1);
    }
  }
  try {
    const attndev::experiment::Config config = attndev::experiment::parse_config(text, overrides);
    // Expansion is linear in the plan size; keep each input fast (the limit itself is tested).
    if (attndev::experiment::plan_size_bound(config) <= 20000)
      attndev::experiment::make_plan(config);
  } catch (const attndev::experiment::ConfigError&) {
    // The expected outcome for most inputs.
  }
  return 0;
}
