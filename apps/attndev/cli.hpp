// The command-line layer of attndev: a thin wrapper over CLI11 whose definitions are compiled
// once, in cli.cpp. CLI11 2.1 (Debian 12) is header-only without a precompiled mode, and a unit
// that includes it generates code for every CLI11 function it touches (about 5 s per command
// unit); the command units include this header instead: declarations only.
//
// The names and chaining follow CLI11's (`cmd->add_option(...)->required()`), so a command reads
// as it would with CLI11 itself. An option type not instantiated in cli.cpp is a link error
// naming Command::add_option<T>: add it to the list there.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace attndev::app::cli {

// A numeric range check (CLI::Range): the value must lie in [min, max]. Integer bounds stay
// integers (the help then reads "INT in [1 - 1000000]", as CLI11's own Range writes it).
struct Range {
  template <class T>
  Range(T min_value, T max_value)
      : min(static_cast<double>(min_value)),
        max(static_cast<double>(max_value)),
        integral(std::is_integral_v<T>) {}
  double min, max;
  bool integral;
};

class Option {
 public:
  explicit Option(CLI::Option* impl) : impl_(impl) {}
  Option* required(bool value = true);
  Option* capture_default_str();
  Option* check(Range range);
  Option* delimiter(char separator);
  // Hidden from --help (an alias kept for old command lines, e.g. run's --force-new).
  Option* hidden();
  // An empty value ('') is refused with the option's name: an empty path or name never means
  // "the default" silently (`--inputs ''` measured random inputs, `-o ''` wrote to results/).
  Option* non_empty();
  // The text must be a decimal integer in [0, 2^64 - 1]: CLI11's own conversion wraps "-1" to
  // 2^64 - 1 and clamps "1e26" (a seed that is not the one typed, with no message).
  Option* unsigned_decimal();
  std::size_t count() const;  // how often it was given

 private:
  CLI::Option* impl_;
};

class Command {
 public:
  explicit Command(CLI::App* impl) : impl_(impl) {}
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;
  ~Command();

  Command* add_subcommand(const std::string& name, const std::string& description);
  template <class T>
  Option* add_option(const std::string& name, T& value, const std::string& description = "");
  Option* add_flag(const std::string& name, bool& value, const std::string& description = "");
  Option* add_flag(const std::string& name, int& count, const std::string& description = "");
  // Options this command does not know go on to its parent: global flags (-q, -v) are accepted
  // after the command word too. Set on the root before the commands are added (they inherit it).
  void fallthrough();
  void callback(std::function<void()> run);
  // Runs after the whole command line is parsed, before any command's callback (global flags).
  void parse_complete_callback(std::function<void()> run);
  std::string get_name() const;

 private:
  Option* keep(CLI::Option* option);
  CLI::App* impl_;
  std::vector<std::unique_ptr<Option>> options_;
  std::vector<std::unique_ptr<Command>> subcommands_;
};

extern template Option* Command::add_option(const std::string&, int&, const std::string&);
extern template Option* Command::add_option(const std::string&, long&, const std::string&);
extern template Option* Command::add_option(const std::string&, unsigned long&, const std::string&);
extern template Option* Command::add_option(const std::string&, double&, const std::string&);
extern template Option* Command::add_option(const std::string&, std::string&, const std::string&);
extern template Option* Command::add_option(const std::string&, std::vector<std::string>&,
                                            const std::string&);
extern template Option* Command::add_option(const std::string&, std::vector<int>&,
                                            const std::string&);

struct AppInfo {
  std::string name;          // "attndev"
  std::string description;   // the first line of --help
  std::string version_text;  // what --version prints
};

// The whole program's command line: builds the app (`register_commands` adds global flags and
// every command), parses argv and runs the chosen command's callback. Returns the exit code of
// what the command line itself decided (exit_codes.hpp): 0 after --help or --version, 2 for bad
// flags or an unknown command (naming the nearest one), 0 when the command returned. What a
// command's callback throws (UsageError, CommandExit, ...) propagates to the caller.
int run(int argc, char** argv, const AppInfo& info,
        const std::function<void(Command& app)>& register_commands);

}  // namespace attndev::app::cli
