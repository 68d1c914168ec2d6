// The one translation unit that compiles CLI11 for attndev (cli.hpp says why).
#include "cli.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <algorithm>
#include <exception>
#include <string_view>

#include "config/suggest.hpp"
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

int run(int argc, char** argv, const AppInfo& info,
        const std::function<void(Command& app)>& register_commands) {
  CLI::App app{info.description, info.name};
  app.require_subcommand(1);
  app.set_version_flag("--version", info.version_text);
  Command root(&app);
  root.fallthrough();
  register_commands(root);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::RequiredError& e) {
    // With require_subcommand(1) an unknown command word surfaces as "subcommand required";
    // name the word and the nearest command instead.
    if (argc > 1 && argv[1][0] != '-' && app.get_subcommands().empty()) {
      std::vector<std::string> names;
      const CLI::App& const_app = app;
      for (const CLI::App* sub : const_app.get_subcommands([](const CLI::App*) { return true; }))
        names.push_back(sub->get_name());
      const std::vector<std::string_view> views(names.begin(), names.end());
      std::fprintf(stderr, "%s: error: unknown command '%s'%s\ncommands: %s\n", info.name.c_str(),
                   argv[1], config::did_you_mean(argv[1], views).c_str(),
                   config::join_names(views).c_str());
      return kExitUsage;
    }
    app.exit(e);
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and the usage hint
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace attndev::app::cli
