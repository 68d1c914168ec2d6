// Names are data: a variant name, a config name, a failure message or a value read back from a
// results file is written into terminals, markdown and CSV that other programs interpret. These
// helpers make such text inert where it lands, each reversible enough for a reader to recover
// what was meant.
//
// Why: a variant named "\x1b]8;;http://x\x07" rewrote the terminal title when its summary was
// printed, "a|b" split a markdown table cell, a newline broke a markdown row, and a cell starting
// with '=' ("=HYPERLINK(...)") became a formula when results.csv was opened in a spreadsheet.
#pragma once

#include <string>
#include <string_view>

namespace attndev::io {

// The text with every byte that a terminal or a one-line format could act on written as \xNN:
// C0 controls (newline, ESC, ...), DEL, the C1 controls U+0080..U+009F and bytes that are not
// valid UTF-8. A backslash becomes "\\" so the result decodes unambiguously. Printable ASCII and
// valid UTF-8 of printable characters pass unchanged.
std::string printable(std::string_view text);

// True when printable(text) == text and text has no backslash: nothing to escape.
bool is_printable(std::string_view text);

// A markdown table cell on one line: newlines as spaces, then printable(), then '|' as "\|" (a
// pipe would start a new cell).
std::string markdown_cell(std::string_view text);

// A spreadsheet-safe CSV cell text (before RFC 4180 quoting): a text that starts with '=', '+',
// '-' or '@' and is not a number gets a leading apostrophe, which
// spreadsheets show as text instead of evaluating (the OWASP rule for CSV injection). Numbers,
// "-inf" and negative values included, pass unchanged.
std::string csv_safe_text(std::string_view text);

// A name as one component of a file name, unique and reversible: bytes outside [A-Za-z0-9_-]
// and '.' at the start are written as %XX (so "x/y" -> "x%2Fy" and "x_y" stay apart), '%' itself
// included. file_name_decode reverses it.
std::string file_name_encode(std::string_view name);
std::string file_name_decode(std::string_view encoded);

}  // namespace attndev::io
