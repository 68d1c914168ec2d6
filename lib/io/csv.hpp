// RFC 4180 CSV: CRLF line ends, one header, fields quoted when they hold a comma, a quote, CR or
// LF, quotes doubled inside quoted fields.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attndev::io {

// A text cell that a spreadsheet would evaluate ("=HYPERLINK(...)", "@SUM(...)") is written with a
// leading apostrophe (io/text_escape.hpp, csv_safe_text); numbers are written as they are.
std::string csv_field(std::string_view text);
std::string csv_record(const std::vector<std::string>& fields);  // ends with CRLF

// Parses a whole CSV text (CRLF or LF line ends). Throws std::runtime_error with the record
// number on an unterminated quote or a quote inside an unquoted field.
std::vector<std::vector<std::string>> parse_csv(std::string_view text);

}  // namespace attndev::io
