#include "common/version.h"

#include "cact/kernels.h"

// Set by apps/CMakeLists.txt (cmake/git_describe.cmake) at configure time.
#ifndef CACT_PROJECT_VERSION
#error "CACT_PROJECT_VERSION must be defined by the build"
#endif
#ifndef CACT_GIT_DESCRIBE
#define CACT_GIT_DESCRIBE "unknown"
#endif

namespace cact::app {

std::string version_text(const char* tool) {
  std::string text = std::string(tool) + " " + CACT_PROJECT_VERSION + " (git " + CACT_GIT_DESCRIBE + ")\nkernels:";
  for (const kernels::KernelTable* table : kernels::available_kernels()) text += std::string(" ") + table->name;
  return text + " (in use: " + kernels::best_kernels().name + ")\n";
}

}  // namespace cact::app
