#include "io/json_values.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace attndev::io {

std::string_view nonfinite_text(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return {};
}

std::string format_double(double value, const char* printf_format) {
  if (const std::string_view text = nonfinite_text(value); !text.empty()) return std::string(text);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, printf_format, value);
  return buffer;
}

Json number_json(double value) {
  if (const std::string_view text = nonfinite_text(value); !text.empty()) return std::string(text);
  return value;
}

bool json_to_double(const Json& value, double& out) {
  if (value.is_number()) {
    out = value.get<double>();
    return true;
  }
  if (!value.is_string()) return false;
  const std::string& s = value.get_ref<const std::string&>();
  if (s == "nan") {
    out = std::nan("");
  } else if (s == "inf") {
    out = INFINITY;
  } else if (s == "-inf") {
    out = -INFINITY;
  } else {
    return false;
  }
  return true;
}

std::string format_number(double value) {
  if (const std::string_view text = nonfinite_text(value); !text.empty()) return std::string(text);
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string cell_text(const Json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer()) return value.dump();
  if (value.is_number()) return format_number(value.get<double>());
  return value.dump();
}

}  // namespace attndev::io
