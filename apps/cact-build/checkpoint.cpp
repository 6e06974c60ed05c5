// Placeholder: the checkpoint importer lands with the cact-build/cact-quant issue.
#include "cact/error.h"
#include "commands.h"

namespace cact::build {
std::function<int()> add_checkpoint_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("checkpoint", "build from a safetensors checkpoint (not yet)");
  return [sub]() -> int {
    if (!sub->parsed()) return -1;
    fail("checkpoint import is not implemented yet");
  };
}
}  // namespace cact::build
