// What an external variant's command template may hold, checked when the config is read (so that
// validate, plan and run refuse the same commands) and again by experiment/run/external.cpp before
// a command is expanded.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace attndev::experiment {

// Why `command` cannot be run safely (a placeholder inside quotes, an unclosed brace), or nullopt.
// A placeholder's value reaches the shell as an environment variable reference; inside quotes it
// would be pasted into text that a nested shell (sh -c, eval) parses again.
std::optional<std::string> external_template_problem(const std::string& command);

// The environment variable a placeholder names ("output" -> "ATTNDEV_OUTPUT",
// "seq_len" -> "ATTNDEV_AXIS_SEQ_LEN").
std::string placeholder_variable(std::string_view name);

}  // namespace attndev::experiment
