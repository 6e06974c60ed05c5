// cact-build synth: a seeded synthetic archive of a preset geometry, with
// optional overrides of any header field, widths and tokenizer.
#include <fmt/core.h>

#include <cstring>
#include <stdexcept>

#include "cact/atomic_file.h"
#include "cact/error.h"
#include "cact/model.h"
#include "cact/synth.h"
#include "commands.h"

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

// "--set num_layers=8": any header field by its FORMAT.md name.
void apply_set(Header& h, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos) fail("--set '" + assignment + "': expected field=value");
  const std::string key = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  for (size_t i = 0; i < kHeaderFields; ++i) {
    if (key != header_field_name(i)) continue;
    if (i == 0 || i == 1 || i == 2) fail("--set " + key + ": this field is computed by the writer");
    uint8_t raw[kHeaderBytes];
    encode_header(h, raw);
    try {
      size_t used = 0;
      if (i == kHeaderFields - 1) {
        const float f = std::stof(value, &used);
        std::memcpy(raw + 4 * i, &f, 4);
      } else {
        const unsigned long v = std::stoul(value, &used, 0);
        if (v > 0xFFFFFFFFul) throw std::out_of_range(value);
        const uint32_t u = uint32_t(v);
        std::memcpy(raw + 4 * i, &u, 4);
      }
      if (used != value.size()) throw std::invalid_argument(value);
    } catch (const std::logic_error&) {
      fail("--set " + key + ": '" + value + "' is not a number");
    }
    h = decode_header({raw, kHeaderBytes});
    return;
  }
  fail("--set: '" + key + "' is not a header field (see FORMAT.md)");
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
  sub->add_option("--bits", args->bits, std::string("CQ width map on top of the preset's (default ") + WidthMap::kShipped + ")");
  sub->add_option("--set", args->sets, "override a header field, e.g. --set num_layers=8 (repeatable)");
  sub->add_option("--tokenizer-from", args->tokenizer_from, "copy the tokenizer of another .cact");
  sub->add_flag("--no-heads", args->no_heads, "drop the preset's probe heads");
  return [sub, args]() -> int {
    if (!sub->parsed()) return -1;
    SynthSpec spec = synth_preset(args->preset);
    spec.seed = args->seed;
    for (const auto& s : args->sets) apply_set(spec.geometry, s);
    if (!args->bits.empty()) spec.widths = spec.widths.with(args->bits);
    if (args->no_heads) spec.heads.clear();
    if (!args->tokenizer_from.empty()) {
      // The output must not replace the archive the tokenizer comes from.
      if (same_file(args->out, args->tokenizer_from)) fail(args->out + ": output path is the input file; refusing to overwrite it");
      const Model source = Model::open(args->tokenizer_from);
      spec.tokenizer = parse_tokenizer_blob(source.tokenizer_blob());
    }
    write_synth_archive(args->out, spec);
    const Model written = Model::open(args->out);
    fmt::print(stderr, "wrote {}: {} tensors, {} bytes\n", args->out, written.records().size(), written.bytes().size());
    return 0;
  };
}

}  // namespace cact::build
