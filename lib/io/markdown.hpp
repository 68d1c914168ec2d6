// GitHub-flavoured markdown tables for summary.md.
#pragma once

#include <string>
#include <vector>

namespace attndev::io {

// Columns whose every body cell looks numeric are right-aligned. Pipes in cells are escaped and
// newlines flattened, so a failure message cannot break the table.
std::string markdown_table(const std::vector<std::string>& header,
                           const std::vector<std::vector<std::string>>& rows);

}  // namespace attndev::io
