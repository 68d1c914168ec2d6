#include "experiment/spec/external_template.hpp"

#include <cctype>

namespace attndev::experiment {

std::string placeholder_variable(std::string_view name) {
  if (name == "inputs" || name == "output" || name == "format") {
    std::string out = "ATTNDEV_";
    for (char c : name) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
  }
  std::string out = "ATTNDEV_AXIS_";
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
               : '_';
  return out;
}

std::optional<std::string> external_template_problem(const std::string& command) {
  char quote = 0;  // ' or " while inside quotes
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (c == '\\' && quote != '\'') {
      ++i;  // an escaped character is never a quote
      continue;
    }
    if (quote == 0 && (c == '\'' || c == '"')) {
      quote = c;
    } else if (quote != 0 && c == quote) {
      quote = 0;
    } else if (c == '{' && (i == 0 || command[i - 1] != '$')) {  // ${VAR} is the shell's
      const std::size_t close = command.find('}', i);
      if (close == std::string::npos)
        return "a '{' without its '}' at character " + std::to_string(i + 1);
      const std::string name = command.substr(i + 1, close - i - 1);
      if (quote != 0)
        return "the placeholder {" + name + "} is inside " +
               (quote == '"' ? std::string("double") : std::string("single")) +
               " quotes: its value would be pasted into quoted text that a shell may parse "
               "again (sh -c, eval). Write {" +
               name +
               "} unquoted (attndev passes it as one word, whatever it holds), or refer to \"$" +
               placeholder_variable(name) + "\" in nested shell code";
      i = close;
    }
  }
  return std::nullopt;
}

}  // namespace attndev::experiment
