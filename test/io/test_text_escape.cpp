// Names are data (io/text_escape.hpp): control characters escaped for terminals and markdown,
// spreadsheet formulas defused in CSV, file names unique and reversible.
#include <catch2/catch.hpp>

#include <string>

#include "io/csv.hpp"
#include "io/markdown.hpp"
#include "io/text_escape.hpp"

using namespace attndev::io;

TEST_CASE("printable escapes controls, C1, invalid UTF-8 and backslash, keeps printable UTF-8",
          "[io][names]") {
  CHECK(printable("flash2-bf16") == "flash2-bf16");
  CHECK(printable("a\x1b]0;pwned\x07z") == "a\\x1B]0;pwned\\x07z");
  CHECK(printable("line\nbreak\x7f") == "line\\x0Abreak\\x7F");
  CHECK(printable("back\\slash") == "back\\\\slash");
  CHECK(printable("\xc2\x9b"
                  "31m") == "\\xC2\\x9B31m");  // U+009B, the 8-bit CSI
  CHECK(printable("\xff\xfe") == "\\xFF\\xFE");
  CHECK(printable("\xc3\xa9t\xc3\xa9 \xe2\x88\x9a") == "\xc3\xa9t\xc3\xa9 \xe2\x88\x9a");
  CHECK(is_printable("\xc3\xa9t\xc3\xa9"));
  CHECK_FALSE(is_printable("a\tb"));
}

TEST_CASE("markdown cells: pipes, newlines and escapes cannot break a table or a terminal",
          "[io][names]") {
  CHECK(markdown_cell("a|b\nc\x1b[2J") == "a\\|b c\\x1B[2J");
  const std::string md = markdown_table({"variant"}, {{"x\x1b[31m|y"}});
  CHECK(md.find('\x1b') == std::string::npos);
  CHECK(md.find("x\\x1B[31m\\|y") != std::string::npos);
}

TEST_CASE("csv: a text cell that a spreadsheet would evaluate gets a leading apostrophe",
          "[io][names]") {
  CHECK(csv_field("=HYPERLINK(\"http://x\",\"y\")") ==
        "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"");
  CHECK(csv_field("@SUM(A1)") == "'@SUM(A1)");
  CHECK(csv_field("+cmd") == "'+cmd");
  CHECK(csv_field("-x") == "'-x");
  // Numbers, non-finite ones included, and a lone "-" are data, not formulas.
  CHECK(csv_field("-1.5e-03") == "-1.5e-03");
  CHECK(csv_field("-inf") == "-inf");
  CHECK(csv_field("+2") == "+2");
  CHECK(csv_field("-") == "-");
  CHECK(csv_field("flash2") == "flash2");
}

TEST_CASE("file names from variant names are unique and decode back", "[io][names]") {
  CHECK(file_name_encode("x/y") == "x%2Fy");
  CHECK(file_name_encode("x_y") == "x_y");
  CHECK(file_name_encode("x/y") != file_name_encode("x_y"));
  CHECK(file_name_encode(".hidden") == "%2Ehidden");
  CHECK(file_name_encode("a.b") == "a.b");
  CHECK(file_name_encode("50%") == "50%25");
  for (const std::string name : {"x/y", "x_y", "../..", "50%", "a b\x1b", "\xc3\xa9", "%2F"})
    CHECK(file_name_decode(file_name_encode(name)) == name);
}
