// cact-build synth: a seeded synthetic archive of a preset geometry, with
// optional overrides of any header field, widths and tokenizer.
#include <fmt/core.h>

#include "cact/atomic_file.h"
#include "cact/error.h"
#include "cact/model.h"
#include "cact/synth.h"
#include "commands.h"
#include "common/output.h"
#include "common/std_paths.h"

namespace cact::build {

namespace {
struct SynthArgs {
  std::string preset = "micro";
  std::string out;
  uint64_t seed = 1;
  std::string bits;
  std::vector<std::string> sets;
  std::string tokenizer_from;
  bool no_heads = false;
};

// "--set num_layers=8": any header field by its docs/spec/FORMAT.md name.
void apply_set(Header& h, const std::string& assignment) {
  try {
    set_header_field(h, assignment);
  } catch (const Error& e) {
    fail(std::string("--set ") + e.what());
  }
}
}  // namespace

std::function<int()> add_synth_command(CLI::App& app) {
  auto args = std::make_shared<SynthArgs>();
  CLI::App* sub = app.add_subcommand("synth", "write a seeded synthetic archive of a preset geometry");
  std::string presets;
  for (const auto& n : synth_preset_names()) presets += (presets.empty() ? "" : ", ") + n;
  sub->add_option("out", args->out, "output .cact path")->required();
  sub->add_option("--preset", args->preset, "geometry preset: " + presets)->capture_default_str();
  sub->add_option("--seed", args->seed, "RNG seed (same seed, same bytes)")->capture_default_str();
  sub->add_option("--bits", args->bits,
                  std::string("CQ width map on top of the preset's (default ") + WidthMap::kShipped + ")");
  sub->add_option("--set", args->sets, "override a header field, e.g. --set num_layers=8 (repeatable)");
  sub->add_option("--tokenizer-from", args->tokenizer_from, "copy the tokenizer of another .cact");
  sub->add_flag("--no-heads", args->no_heads, "drop the preset's probe heads");
  return [sub, args]() -> int {
    if (!sub->parsed()) return -1;
    app::refuse_stdout(args->out, "OUT");
    SynthSpec spec = synth_preset(args->preset);
    spec.seed = args->seed;
    for (const auto& s : args->sets) apply_set(spec.geometry, s);
    if (!args->bits.empty()) spec.widths = spec.widths.with(args->bits);
    if (args->no_heads) spec.heads.clear();
    if (!args->tokenizer_from.empty()) {
      // The output must not replace the archive the tokenizer comes from.
      if (same_file(args->out, args->tokenizer_from))
        fail(args->out + ": output path is the input file; refusing to overwrite it");
      const Model source = Model::open(args->tokenizer_from);
      spec.tokenizer = parse_tokenizer_blob(source.tokenizer_blob());
    }
    write_synth_archive(args->out, spec);
    const Model written = Model::open(args->out);
    app::wrote(args->out, fmt::format("{} tensors, {} bytes", written.records().size(), written.bytes().size()));
    return 0;
  };
}

}  // namespace cact::build
