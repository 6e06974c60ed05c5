#include "common/run_tool.h"

#include <cstdio>

#include "common/error_policy.h"

namespace cact::app {

int run_tool(const char* tool, CLI::App& cli, int argc, char** argv, const std::function<int()>& body) {
  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cli.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return cli.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", tool, e.what());
    return 2;
  }
  return run_guarded(tool, body);
}

}  // namespace cact::app
