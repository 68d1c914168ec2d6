#include "io/csv.hpp"

#include <stdexcept>

#include "io/text_escape.hpp"

namespace attndev::io {

std::string csv_field(std::string_view raw) {
  const std::string text = csv_safe_text(raw);
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string csv_record(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += csv_field(fields[i]);
  }
  out += "\r\n";
  return out;
}

std::vector<std::vector<std::string>> parse_csv(std::string_view text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool in_quotes = false;
  bool field_was_quoted = false;
  auto fail = [&](const char* what) {
    throw std::runtime_error("CSV record " + std::to_string(records.size() + 1) + ": " + what);
  };
  auto end_field = [&] {
    record.push_back(std::move(field));
    field.clear();
    field_was_quoted = false;
  };
  auto end_record = [&] {
    end_field();
    records.push_back(std::move(record));
    record.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c != '"') {
        field += c;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else {
        in_quotes = false;
      }
      continue;
    }
    if (c == '"') {
      if (!field.empty() || field_was_quoted) fail("quote inside an unquoted field");
      in_quotes = true;
      field_was_quoted = true;
    } else if (c == ',') {
      end_field();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;
      end_record();
    } else if (c == '\n') {
      end_record();
    } else {
      if (field_was_quoted) fail("text after a closing quote");
      field += c;
    }
  }
  if (in_quotes) fail("unterminated quoted field");
  if (!field.empty() || field_was_quoted || !record.empty()) end_record();
  return records;
}

}  // namespace attndev::io
