// The log of the libraries and the app (stderr; stdout carries only results): fmt-style messages,
// written by spdlog's default logger, which only log.cpp sees.
//
// Why not spdlog's templates at the call sites: every unit that calls spdlog::info(format, args...)
// instantiates spdlog's and fmt's whole formatting path, about 4.5 s of CPU per unit at -O3
// (GCC 12) whatever the unit does besides; here a call site costs one fmt::format (fmt/core.h:
// the formatting itself is compiled in libfmt) and spdlog is instantiated once. The messages are
// the same: spdlog would format them with the same fmt.
#pragma once

#include <string_view>
#include <utility>

#include <fmt/core.h>

namespace attndev::log {

enum class Level { trace, debug, info, warn, error, off };

// The process-wide threshold: messages below it are neither formatted nor written.
void set_level(Level level);
bool enabled(Level level);

// The app's logger: stderr, "[HH:MM:SS level] message", threshold info unless SPDLOG_LEVEL says
// otherwise (SPDLOG_LEVEL=debug etc.). Without it (a library used on its own, the tests) messages
// go to spdlog's default logger.
void init_cli_logger();

void write(Level level, std::string_view message);

template <class... Args>
void at(Level level, fmt::format_string<Args...> format, Args&&... args) {
  if (enabled(level)) write(level, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void debug(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::debug, format, std::forward<Args>(args)...);
}
template <class... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::info, format, std::forward<Args>(args)...);
}
template <class... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::warn, format, std::forward<Args>(args)...);
}
template <class... Args>
void error(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::error, format, std::forward<Args>(args)...);
}

}  // namespace attndev::log
