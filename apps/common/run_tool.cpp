#include "common/run_tool.h"

#include <cstdio>
#include <exception>
#include <new>

#include "cact/error.h"

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
  try {
    return body();
  } catch (const cact::Error& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: out of memory\n", tool);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
  }
  return 1;
}

}  // namespace cact::app
