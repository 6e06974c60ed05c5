#include "common/run_tool.h"

#include <cstdio>
#include <string>

#include "common/error_policy.h"
#include "common/suggest.h"

namespace cact::app {

int run_tool(const char* tool, CLI::App& cli, int argc, char** argv, const std::function<int()>& body) {
  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return run_guarded(tool, [&] { return cli.exit(e); });  // the help is output too: a failed write is exit 1
  } catch (const CLI::CallForVersion& e) {
    return run_guarded(tool, [&] { return cli.exit(e); });
  } catch (const CLI::ParseError& e) {
    // A mistyped name is the likeliest cause of any parse error it appears in
    // (a value then lands on the wrong option): name it first.
    const std::string hint = unknown_name_hint(cli, argc, argv);
    std::fprintf(stderr, "%s: %s (see --help)\n", tool, hint.empty() ? e.what() : hint.c_str());
    return 2;
  }
  return run_guarded(tool, body);
}

}  // namespace cact::app
