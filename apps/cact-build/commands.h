#pragma once
// cact-build subcommands; each file registers one on the CLI11 app.
#include <CLI/CLI.hpp>
#include <functional>

namespace cact::build {
// Each returns an action that runs the subcommand if it was chosen (returning
// its exit code) or returns -1 if another subcommand was chosen.
std::function<int()> add_synth_command(CLI::App& app);       // synth.cpp: seeded synthetic archives
std::function<int()> add_checkpoint_command(CLI::App& app);  // checkpoint.cpp: safetensors + geometry -> archive
}  // namespace cact::build
