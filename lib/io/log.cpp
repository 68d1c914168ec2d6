#include "io/log.hpp"

#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace attndev::log {
namespace {

spdlog::level::level_enum to_spdlog(Level level) {
  switch (level) {
    case Level::trace:
      return spdlog::level::trace;
    case Level::debug:
      return spdlog::level::debug;
    case Level::info:
      return spdlog::level::info;
    case Level::warn:
      return spdlog::level::warn;
    case Level::error:
      return spdlog::level::err;
    case Level::off:
      return spdlog::level::off;
  }
  return spdlog::level::info;
}

}  // namespace

void set_level(Level level) {
  spdlog::set_level(to_spdlog(level));
}

bool enabled(Level level) {
  return spdlog::should_log(to_spdlog(level));
}

void init_cli_logger() {
  spdlog::set_default_logger(spdlog::stderr_color_mt("attndev"));
  spdlog::set_pattern("[%H:%M:%S %^%l%$] %v");
  spdlog::set_level(spdlog::level::info);
  spdlog::cfg::load_env_levels();
}

void write(Level level, std::string_view message) {
  // The message is already formatted: spdlog writes it as it is.
  spdlog::default_logger_raw()->log(to_spdlog(level), message);
}

}  // namespace attndev::log
