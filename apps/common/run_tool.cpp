#include "common/run_tool.h"

#include <cstdio>
#include <memory>
#include <string>

#include "common/error_policy.h"
#include "common/output.h"
#include "common/signals.h"
#include "common/suggest.h"
#include "common/version.h"

namespace cact::app {

namespace {

// -q/--quiet on `app` and its subcommands (a subcommand does not see its
// parent's flags after its own name), unless the tool declares it itself.
void add_quiet(CLI::App& app, const std::shared_ptr<bool>& quiet) {
  if (app.get_option_no_throw("--quiet") == nullptr && app.get_option_no_throw("-q") == nullptr) {
    app.add_flag_callback(
        "-q,--quiet", [quiet] { *quiet = true; }, "no notices, warnings, progress or \"wrote\" lines on stderr");
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App* s) { return !s->get_name().empty(); })) add_quiet(*sub, quiet);
}

// CLI11 says "Could not convert: --threads = VALUE" both for "abc" and for a
// number its type cannot hold; tell the two apart for the user.
std::string conversion_message(const CLI::ConversionError& e) {
  const std::string what = e.what();
  const std::string prefix = "Could not convert: ";
  const size_t eq = what.find(" = ");
  if (!what.starts_with(prefix) || eq == std::string::npos) return what;
  const std::string name = what.substr(prefix.size(), eq - prefix.size());
  const std::string value = what.substr(eq + 3);
  // A decimal number (sign, digits, one point, exponent) that did not fit.
  const bool numeric = !value.empty() && value.find_first_not_of("+-0123456789.eE") == std::string::npos &&
                       value.find_first_of("0123456789") != std::string::npos;
  if (numeric) return name + ": " + value + " is out of range";
  return name + ": " + value + " is not a number";
}

}  // namespace

int run_tool(const char* tool, CLI::App& cli, int argc, char** argv, const std::function<int()>& body) {
  cli.set_version_flag(
      "--version",
      [tool] {
        std::string text = version_text(tool);
        text.pop_back();  // printed with a newline like every help text
        return text;
      },
      "print the version, the git revision and the kernel tables of this CPU, then exit");
  const auto quiet_flag = std::make_shared<bool>(false);
  add_quiet(cli, quiet_flag);
  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    // Output like any other (write_out): a failed write is exit 1 with its reason.
    return run_guarded(tool, [&] { return write_out(cli.help()) ? 0 : 1; });  // help() of the subcommand given, if any
  } catch (const CLI::CallForVersion& e) {
    return run_guarded(tool, [&] { return write_out(std::string(e.what()) + "\n") ? 0 : 1; });
  } catch (const CLI::ConversionError& e) {
    const std::string hint = unknown_name_hint(cli, argc, argv);
    std::fprintf(stderr, "%s: %s (see --help)\n", tool, hint.empty() ? conversion_message(e).c_str() : hint.c_str());
    return 2;
  } catch (const CLI::ParseError& e) {
    // A mistyped name is the likeliest cause of any parse error it appears in
    // (a value then lands on the wrong option): name it first.
    const std::string hint = unknown_name_hint(cli, argc, argv);
    std::fprintf(stderr, "%s: %s (see --help)\n", tool, hint.empty() ? e.what() : hint.c_str());
    return 2;
  } catch (...) {
    // A callback run during parsing failed (--version with an unknown
    // CACT_ISA): the same one-line message and exit code as in the body.
    return run_guarded(tool, []() -> int { throw; });
  }
  // A tool's own --quiet (cact-run's) is read the same way.
  const CLI::Option* own = cli.get_option_no_throw("--quiet");
  set_quiet(*quiet_flag || (own != nullptr && own->count() > 0));
  install_signal_handlers(tool);  // interrupted writes leave no temporary; a truncated mapping is one line
  return run_guarded(tool, body);
}

}  // namespace cact::app
