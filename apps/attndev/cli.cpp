// The one translation unit that compiles CLI11 for attndev (cli.hpp says why).
#include "cli.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <algorithm>
#include <exception>
#include <memory>
#include <string_view>

#include "config/suggest.hpp"
#include "io/text_escape.hpp"
#include "exit_codes.hpp"

namespace attndev::app::cli {

Option* Option::required(bool value) {
  impl_->required(value);
  return this;
}
Option* Option::capture_default_str() {
  impl_->capture_default_str();
  return this;
}
Option* Option::check(Range range) {
  if (range.integral)
    impl_->check(CLI::Range(static_cast<long long>(range.min), static_cast<long long>(range.max)));
  else
    impl_->check(CLI::Range(range.min, range.max));
  return this;
}
Option* Option::delimiter(char separator) {
  impl_->delimiter(separator);
  return this;
}
Option* Option::hidden() {
  impl_->group("");
  return this;
}
Option* Option::non_empty() {
  const std::string name = impl_->get_name();
  impl_->check(CLI::Validator(
      [name](std::string& value) -> std::string {
        if (!value.empty()) return {};
        return "an empty value; give a non-empty one, or omit " + name + " for its default";
      },
      "", "non-empty"));
  return this;
}
Option* Option::unsigned_decimal() {
  impl_->check(CLI::Validator(
      [](std::string& value) -> std::string {
        constexpr std::string_view kMax = "18446744073709551615";  // 2^64 - 1
        const bool digits =
            !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
        const std::string_view trimmed = digits
                                             ? std::string_view(value).substr(std::min(
                                                   value.find_first_not_of('0'), value.size() - 1))
                                             : std::string_view{};
        const bool fits = digits && (trimmed.size() < kMax.size() ||
                                     (trimmed.size() == kMax.size() && trimmed <= kMax));
        if (fits) return {};
        return "expected a decimal integer in [0, 2^64 - 1], got \"" + value +
               "\" (a negative or fractional value would be wrapped or rounded, not used)";
      },
      "", "UINT64"));
  return this;
}
std::size_t Option::count() const {
  return impl_->count();
}

Command::~Command() = default;

Option* Command::keep(CLI::Option* option) {
  options_.push_back(std::make_unique<Option>(option));
  return options_.back().get();
}

Command* Command::add_subcommand(const std::string& name, const std::string& description) {
  subcommands_.push_back(std::make_unique<Command>(impl_->add_subcommand(name, description)));
  return subcommands_.back().get();
}

template <class T>
Option* Command::add_option(const std::string& name, T& value, const std::string& description) {
  return keep(impl_->add_option(name, value, description));
}
template Option* Command::add_option(const std::string&, int&, const std::string&);
template Option* Command::add_option(const std::string&, long&, const std::string&);
template Option* Command::add_option(const std::string&, unsigned long&, const std::string&);
template Option* Command::add_option(const std::string&, double&, const std::string&);
template Option* Command::add_option(const std::string&, std::string&, const std::string&);
template Option* Command::add_option(const std::string&, std::vector<std::string>&,
                                     const std::string&);
template Option* Command::add_option(const std::string&, std::vector<int>&, const std::string&);

Option* Command::add_flag(const std::string& name, bool& value, const std::string& description) {
  return keep(impl_->add_flag(name, value, description));
}
Option* Command::add_flag(const std::string& name, int& count, const std::string& description) {
  return keep(impl_->add_flag(name, count, description));
}
void Command::fallthrough() {
  impl_->fallthrough();
}
void Command::callback(std::function<void()> run) {
  impl_->callback(std::move(run));
}
void Command::parse_complete_callback(std::function<void()> run) {
  impl_->parse_complete_callback(std::move(run));
}
std::string Command::get_name() const {
  return impl_->get_name();
}

namespace {

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

const CLI::App* find_command(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->get_name() == name) return sub;
  return nullptr;
}

// Every spelling of the options of `cmd` and of its parents (global flags fall through).
std::vector<std::string> option_spellings(const CLI::App* cmd) {
  std::vector<std::string> names;
  for (; cmd != nullptr; cmd = cmd->get_parent()) {
    for (const CLI::Option* opt : cmd->get_options()) {
      for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
      for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
    }
  }
  return names;
}

// A parse error in attndev's voice: "attndev run: error: unknown option '--hepl' (did you mean
// "--help"?)", then where the options are listed. CLI11 checks required arguments before it
// looks at unknown ones, so `run --hepl` would say "config is required": the word that was not
// understood is reported first, because it is usually why the rest is missing.
int report_parse_error(const CLI::App& app, const CLI::ParseError& e, const AppInfo& info) {
  const CLI::App* cmd = &app;
  while (!cmd->get_subcommands().empty()) cmd = cmd->get_subcommands().back();
  const std::string where = cmd == &app ? info.name : info.name + " " + cmd->get_name();
  const std::string help =
      cmd == &app ? info.name + " --help" : info.name + " help " + cmd->get_name();
  std::string what;
  for (const std::string& word : app.remaining(/*recurse=*/true)) {
    if (word.size() > 1 && word[0] == '-' && word != "--") {
      const std::string name = word.substr(0, word.find('='));
      const std::vector<std::string> names = option_spellings(cmd);
      const std::vector<std::string_view> views(names.begin(), names.end());
      what = "unknown option '" + io::printable(name) + "'" + config::did_you_mean(name, views);
      break;
    }
    if (what.empty()) what = "unexpected argument '" + io::printable(word) + "'";
  }
  if (what.empty()) {
    what = e.what();
    // "Could not convert: --seq-len = abc"
    constexpr std::string_view kConvert = "Could not convert: ";
    if (what.rfind(kConvert, 0) == 0) {
      const std::string rest = what.substr(kConvert.size());
      const auto eq = rest.find(" = ");
      if (eq != std::string::npos)
        what = rest.substr(0, eq) + ": '" + rest.substr(eq + 3) +
               "' is not a value of the kind it takes (a number, for most options)";
    }
    // CLI11 names a missing positional by its lowercase name ("config is required").
    if (const auto pos = what.find(" is required"); pos != std::string::npos) {
      const std::string name = what.substr(0, pos);
      if (!name.empty() && name[0] != '-')
        what = "the " + name + " argument is missing (usage: " + where + " " + name + " [OPTIONS])";
    }
  }
  std::fprintf(stderr, "%s: error: %s\n'%s' lists the arguments and options\n", where.c_str(),
               what.c_str(), help.c_str());
  return kExitUsage;
}

// `attndev help [COMMAND]`: the same text as `--help`, for people who type it the other way.
void add_help_command(CLI::App& app, const AppInfo& info, int& status) {
  auto topic = std::make_shared<std::string>();
  CLI::App* help =
      app.add_subcommand("help", "Print the help of attndev, or of one command: attndev help run");
  help->add_option("command", *topic, "The command whose options to list");
  help->callback([&app, &info, &status, topic] {
    if (topic->empty()) {
      // Not app.help(): with `help` selected, CLI11 would print the help of `help` itself.
      std::fputs(
          app.get_formatter()->make_help(&app, info.name, CLI::AppFormatMode::Normal).c_str(),
          stdout);
      status = kExitOk;
      return;
    }
    const CLI::App* cmd = find_command(app, *topic);
    if (cmd == nullptr || cmd->get_name() == "help") {
      const std::vector<std::string> names = command_names(app);
      const std::vector<std::string_view> views(names.begin(), names.end());
      std::fprintf(stderr, "%s help: error: no command '%s'%s\ncommands: %s\n", info.name.c_str(),
                   topic->c_str(), config::did_you_mean(*topic, views).c_str(),
                   config::join_names(views).c_str());
      status = kExitUsage;
      return;
    }
    std::fputs(cmd->help(info.name).c_str(), stdout);
    status = kExitOk;
  });
}

}  // namespace

int run(int argc, char** argv, const AppInfo& info,
        const std::function<void(Command& app)>& register_commands) {
  CLI::App app{info.description, info.name};
  app.require_subcommand(1);
  app.set_version_flag("--version", info.version_text);
  Command root(&app);
  root.fallthrough();
  register_commands(root);
  int help_status = -1;
  add_help_command(app, info, help_status);
  try {
    app.parse(argc, argv);
    if (help_status >= 0) return help_status;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::RequiredError& e) {
    // With require_subcommand(1) an unknown command word surfaces as "subcommand required";
    // name the word and the nearest command instead.
    const bool word = argc > 1 && argv[1][0] != '-';
    if (app.get_subcommands().empty() && (word || app.remaining(true).empty())) {
      const std::vector<std::string> names = command_names(app);
      const std::vector<std::string_view> views(names.begin(), names.end());
      if (word)
        std::fprintf(stderr, "%s: error: unknown command '%s'%s\n", info.name.c_str(), argv[1],
                     config::did_you_mean(argv[1], views).c_str());
      else
        std::fprintf(stderr, "%s: error: a command is required: %s COMMAND [OPTIONS]\n",
                     info.name.c_str(), info.name.c_str());
      std::fprintf(stderr, "commands: %s\n'%s help COMMAND' lists a command's options\n",
                   config::join_names(views).c_str(), info.name.c_str());
      return kExitUsage;
    }
    return report_parse_error(app, e, info);
  } catch (const CLI::ParseError& e) {
    return report_parse_error(app, e, info);
  }
  return kExitOk;
}

}  // namespace attndev::app::cli
