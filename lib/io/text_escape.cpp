#include "io/text_escape.hpp"

#include <cstdlib>

namespace attndev::io {

namespace {

constexpr char kHex[] = "0123456789ABCDEF";

void append_hex(std::string& out, char lead, unsigned char byte) {
  out += lead;
  if (lead == '\\') out += 'x';
  out += kHex[byte >> 4];
  out += kHex[byte & 15];
}

// The length of the valid UTF-8 sequence of a printable character at text[i], or 0.
std::size_t printable_utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  std::size_t n = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 && b <= 0xDF ? 2 : 0;
  if (b >= 0xF5) n = 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  unsigned code = b & (0x7Fu >> n);
  for (std::size_t k = 1; k < n; ++k) code = (code << 6) | (byte(i + k) & 0x3Fu);
  const unsigned smallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < smallest[n] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  if (code <= 0x9F) return 0;  // C1 controls: CSI (U+009B) acts like ESC [ on some terminals
  return n;
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\\') {
      out += "\\\\";
      ++i;
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
    } else if (const std::size_t n = c >= 0x80 ? printable_utf8_length(text, i) : 0; n > 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      append_hex(out, '\\', c);
      ++i;
    }
  }
  return out;
}

bool is_printable(std::string_view text) {
  return text.find('\\') == std::string_view::npos && printable(text) == text;
}

std::string markdown_cell(std::string_view text) {
  std::string flat(text);
  for (char& c : flat)
    if (c == '\n' || c == '\r') c = ' ';
  std::string out;
  for (char c : printable(flat)) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string csv_safe_text(std::string_view text) {
  if (text.empty() || text == "-") return std::string(text);
  const char first = text.front();
  if (first != '=' && first != '+' && first != '-' && first != '@') return std::string(text);
  const std::string copy(text);
  char* end = nullptr;
  (void)std::strtod(copy.c_str(), &end);
  if (end == copy.c_str() + copy.size()) return copy;  // a number: -1.5e-3, -inf
  return "'" + copy;
}

std::string file_name_encode(std::string_view name) {
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-' || (c == '.' && i > 0);
    if (plain) {
      out += static_cast<char>(c);
    } else {
      append_hex(out, '%', c);
    }
  }
  return out;
}

std::string file_name_decode(std::string_view encoded) {
  std::string out;
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] == '%' && i + 2 < encoded.size()) {
      const std::string hex(encoded.substr(i + 1, 2));
      out += static_cast<char>(std::strtoul(hex.c_str(), nullptr, 16));
      i += 2;
    } else {
      out += encoded[i];
    }
  }
  return out;
}

}  // namespace attndev::io
