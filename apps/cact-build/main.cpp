// cact-build: makes .cact archives (seeded synthetic, or from a checkpoint).
#include <vector>

#include "commands.h"
#include "common/run_tool.h"

int main(int argc, char** argv) {
  CLI::App cli{"cact-build: make .cact archives"};
  cli.require_subcommand(1);
  const std::vector<std::function<int()>> actions{cact::build::add_synth_command(cli),
                                                  cact::build::add_checkpoint_command(cli)};
  return cact::app::run_tool("cact-build", cli, argc, argv, [&] {
    for (const auto& action : actions) {
      const int rc = action();
      if (rc >= 0) return rc;
    }
    return 2;
  });
}
