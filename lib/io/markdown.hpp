// GitHub-flavoured markdown tables for summary.md.
#pragma once

#include <string>
#include <vector>

namespace attndev::io {

// Columns whose every body cell looks numeric are right-aligned. Cells pass through
// io::markdown_cell: pipes escaped, newlines flattened, control characters as \xNN, so a failure
// message or a hostile name can neither break the table nor reach the terminal raw.
std::string markdown_table(const std::vector<std::string>& header,
                           const std::vector<std::vector<std::string>>& rows);

}  // namespace attndev::io
