#pragma once
// `--version` of every cact-* tool: the project version, the git revision the
// build was configured from, and the kernel tables this CPU can run.
#include <string>

namespace cact::app {

// "cact-inspect 1.0.0 (git 687e0f6-dirty)\nkernels: scalar avx2\n".
std::string version_text(const char* tool);

}  // namespace cact::app
