#include "io/markdown.hpp"

#include <cctype>

#include "io/text_escape.hpp"

namespace attndev::io {

namespace {

// Control characters (ESC, newlines) as \xNN and pipes escaped: a name or a failure message can
// neither break the table nor reach a terminal that prints summary.md.
std::string escape_cell(const std::string& text) {
  return markdown_cell(text);
}

bool looks_numeric(const std::string& s) {
  if (s.empty() || s == "nan" || s == "inf" || s == "-inf" || s == "-") return true;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '+' &&
        c != 'e' && c != 'x')
      return false;
  return true;
}

}  // namespace

std::string markdown_table(const std::vector<std::string>& header,
                           const std::vector<std::vector<std::string>>& rows) {
  std::string out = "|";
  // Appended piece by piece: `" " + std::string&&` trips GCC 12's -Wrestrict false positive
  // (GCC bug 105329) once inlined.
  for (const std::string& h : header) {
    out += ' ';
    out += escape_cell(h);
    out += " |";
  }
  out += "\n|";
  for (std::size_t c = 0; c < header.size(); ++c) {
    bool numeric = !rows.empty();
    for (const auto& row : rows)
      if (c < row.size() && !looks_numeric(row[c])) numeric = false;
    out += numeric ? " ---: |" : " --- |";
  }
  out += "\n";
  for (const auto& row : rows) {
    out += "|";
    for (std::size_t c = 0; c < header.size(); ++c) {
      out += ' ';
      if (c < row.size()) out += escape_cell(row[c]);
      out += " |";
    }
    out += "\n";
  }
  return out;
}

}  // namespace attndev::io
