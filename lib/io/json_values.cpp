#include "io/json_values.hpp"

#include <charconv>
#include <cmath>

namespace attndev::io {

Json number_json(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
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
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
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
