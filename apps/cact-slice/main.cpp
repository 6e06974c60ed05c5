// cact-slice: cut a ladder rung (or an explicit block set) out of a .cact
// archive. The result is an ordinary archive the engine runs unchanged; every
// kept byte is copied as stored. Rules: MODEL.md "Slicing a ladder rung";
// usage and invariants: docs/SLICING.md.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cact/atomic_file.h"
#include "cact/error.h"
#include "cact/model.h"
#include "cact/slice.h"
#include "common/error_policy.h"
#include "common/output.h"
#include "common/run_tool.h"
#include "common/std_paths.h"

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

template <typename T, typename F>
std::string join(const std::vector<T>& items, const char* sep, F format) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + format(items[i]);
  return out;
}
std::string num(uint32_t v) { return std::to_string(v); }

void print_json(const cact::SlicePlan& p, const std::string& in, const std::string& out, bool written) {
  const cact::Header& h = p.header;
  std::string s = "{";
  s += "\"input\":" + json_string(in) + ",\"output\":" + (out.empty() ? std::string("null") : json_string(out));
  s += ",\"written\":" + std::string(written ? "true" : "false");
  s += ",\"source_layers\":" + num(p.source_layers) + ",\"layers\":" + num(h.num_layers);
  s += ",\"blocks\":[" + join(p.blocks, ",", num) + "]";
  s += ",\"sites\":[" +
       join(p.sites, ",",
            [](const cact::SitePlan& x) {
              return "{\"old\":" + num(x.old_layer) + ",\"new\":" + num(x.new_layer) + "}";
            }) +
       "]";
  s += ",\"dropped_sites\":[" + join(p.dropped_sites, ",", num) + "]";
  s += ",\"global_layers\":[" +
       join(p.global_layers, ",",
            [](const cact::LayerRemap& x) {
              return "{\"old\":" + num(x.old_layer) + ",\"new\":" + num(x.new_layer) + "}";
            }) +
       "]";
  s += ",\"dropped_global\":[" + join(p.dropped_global, ",", num) + "]";
  s += ",\"max_seq_len\":" + num(h.max_seq_len) + ",\"sliding_window\":" + num(h.sliding_window) +
       ",\"kv_window\":" + num(h.kv_window);
  s += ",\"num_tensors\":" + num(h.num_tensors) + ",\"bytes\":" + std::to_string(p.output_bytes) +
       ",\"input_bytes\":" + std::to_string(p.source_bytes);
  s += ",\"warnings\":[" + join(p.warnings, ",", json_string) + "]";
  s += "}\n";
  cact::app::write_out(s);
}

void print_text(const cact::SlicePlan& p, const std::string& in, bool written) {
  const cact::Header& h = p.header;
  const auto arrow = [](uint32_t a, uint32_t b) { return num(a) + " -> " + num(b); };
  std::printf("input:   %s (%u layers, %llu bytes)\n", in.c_str(), p.source_layers, (unsigned long long)p.source_bytes);
  std::printf("blocks:  %s (%zu of %u)\n", join(p.blocks, " ", num).c_str(), p.blocks.size(), p.source_layers);
  std::string sites =
      p.sites.empty() ? "none"
                      : join(p.sites, ", ", [&](const cact::SitePlan& x) { return arrow(x.old_layer, x.new_layer); });
  if (!p.dropped_sites.empty()) sites += " (dropped: " + join(p.dropped_sites, ", ", num) + ")";
  std::printf("sites:   %s\n", sites.c_str());
  std::string global = p.global_layers.empty() ? "none" : join(p.global_layers, ", ", [&](const cact::LayerRemap& x) {
    return arrow(x.old_layer, x.new_layer);
  });
  if (!p.dropped_global.empty()) global += " (dropped: " + join(p.dropped_global, ", ", num) + ")";
  std::printf("global:  %s\n", global.c_str());
  std::printf("context: max_seq_len %u, sliding_window %u, kv_window %u\n", h.max_seq_len, h.sliding_window,
              h.kv_window);
  std::printf("result:  %u layers, %u tensors, %llu bytes (%.1f%% of the input)\n", h.num_layers, h.num_tensors,
              (unsigned long long)p.output_bytes,
              p.source_bytes ? 100.0 * double(p.output_bytes) / double(p.source_bytes) : 0.0);
  if (!written) std::printf("dry run: nothing written\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"cact-slice: keep a ladder rung (or chosen blocks) of a .cact model; kept bytes are copied verbatim"};
  std::string in, out, blocks_text;
  std::optional<uint32_t> layers, context;
  bool dry_run = false, json = false;
  cli.add_option("IN", in, "input .cact archive (- = standard input)")->required();
  cli.add_option("OUT", out, "output .cact archive (not needed with --dry-run)");
  auto* depth = cli.add_option_group("depth", "what to keep (exactly one)");
  depth->add_option("--layers", layers, "keep the ladder rung of this depth (2..num_layers)");
  depth->add_option("--blocks", blocks_text, "keep these blocks, e.g. 0,4,9,19 (ascending)");
  depth->require_option(1);
  cli.add_option("--context", context, "cap max_seq_len at N (sliding_window and kv_window lowered to N if larger)");
  cli.add_flag("--dry-run", dry_run, "print the plan (blocks, sites, global layers, size) and write nothing");
  cli.add_flag("--json", json, "print the plan as one JSON object");
  return cact::app::run_tool("cact-slice", cli, argc, argv, [&] {
    if (out.empty() && !dry_run) cact::app::usage_error("OUT is required unless --dry-run");
    cact::app::refuse_stdout(out, "OUT");
    if (context && *context == 0) cact::app::usage_error("--context 0: must be at least 1");
    if (!out.empty() && cact::same_file(in, out))
      cact::fail(out + ": output path is the input file; refusing to overwrite it");
    const cact::app::InputFile file(in);
    const cact::Model model = cact::app::open_model(file);
    const uint32_t L = model.header().num_layers;
    const std::vector<uint32_t> blocks = layers ? cact::rung(L, *layers) : cact::parse_block_list(blocks_text);
    const cact::SlicePlan plan = cact::plan_slice(model, blocks, context.value_or(0));
    for (const std::string& w : plan.warnings) cact::app::info("cact-slice", "warning: " + w);
    if (!dry_run) {
      const std::filesystem::path inputs[] = {in};
      cact::write_slice(out, model, plan, inputs);
    }
    if (json) {
      print_json(plan, file.name(), out, !dry_run);
    } else {
      print_text(plan, file.name(), !dry_run);
    }
    if (!dry_run)
      cact::app::wrote(
          out, std::to_string(plan.header.num_layers) + " layers, " + std::to_string(plan.output_bytes) + " bytes");
    return 0;
  });
}
