// cact-quant: CQ widths of an archive, archive -> float checkpoint, and
// error reports (docs/QUANT.md).
//
//   cact-quant requantize IN.cact OUT.cact --bits MAP [--requantize] [--json]
//   cact-quant dequantize IN.cact OUT.safetensors [--geometry OUT.json]
//   cact-quant report IN.cact [--reference CKPT.safetensors] [--json]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cact/checkpoint.h"
#include "cact/error.h"
#include "cact/model.h"
#include "cact/requantize.h"
#include "common/error_policy.h"
#include "common/output.h"
#include "common/progress.h"
#include "common/run_tool.h"
#include "common/std_paths.h"
#include "common/suggest.h"

namespace {

struct Common {
  unsigned threads = 0;
  bool progress = false, json = false;
};

void add_common(CLI::App* sub, Common& c, bool json) {
  sub->add_option("--threads", c.threads, "worker threads (0 = all cores)")->capture_default_str();
  sub->add_flag("--progress", c.progress, "progress on stderr even when it is not a terminal");
  if (json) sub->add_flag("--json", c.json, "the report as JSON instead of a table");
}

std::filesystem::path default_geometry_path(const std::filesystem::path& out) {
  std::filesystem::path p = out;
  if (p.extension() == ".safetensors") return p.replace_extension(".json");
  return std::filesystem::path(out.string() + ".json");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"cact-quant: CQ widths, float export and error reports of .cact archives"};
  cli.require_subcommand(1);

  // requantize
  struct {
    std::string in, out, bits;
    bool requantize = false;
    Common c;
  } rq;
  CLI::App* requantize =
      cli.add_subcommand("requantize", "change the CQ widths of an archive's matrices; everything else is copied");
  requantize->add_option("in", rq.in, "input .cact (- = standard input)")->required();
  requantize->add_option("out", rq.out, "output .cact")->required();
  requantize
      ->add_option("--bits", rq.bits,
                   "width map, e.g. 'default=2,embedding=4' or 'q_proj=3' (tensors no key names keep their width)")
      ->required();
  requantize->add_flag(
      "--requantize", rq.requantize,
      "allow width changes: the source is already quantised, so they dequantise and quantise again (errors compound)");
  add_common(requantize, rq.c, true);

  // dequantize
  struct {
    std::string in, out, geometry;
    Common c;
  } dq;
  CLI::App* dequantize =
      cli.add_subcommand("dequantize", "write every tensor as F32 safetensors (CQ dequantised) plus the geometry JSON");
  dequantize->add_option("in", dq.in, "input .cact (- = standard input)")->required();
  dequantize->add_option("out", dq.out, "output .safetensors")->required();
  dequantize->add_option("--geometry", dq.geometry, "geometry JSON path (default: OUT with .json for .safetensors)");
  add_common(dequantize, dq.c, false);

  // report
  struct {
    std::string in, reference;
    Common c;
  } rp;
  CLI::App* report = cli.add_subcommand(
      "report", "per-tensor kinds, bits per weight and (with --reference) error against a float checkpoint");
  report->add_option("in", rp.in, "input .cact (- = standard input)")->required();
  report->add_option("--reference", rp.reference, "float checkpoint (canon names) to measure the error against");
  add_common(report, rp.c, true);

  // `cact-quant IN OUT --bits MAP` (no subcommand) means requantize: the short
  // form build scripts use. A word near a command name that is no file is a
  // mistyped command (`dequantise`), left for the parser to name.
  std::vector<char*> args(argv, argv + argc);
  static char requantize_word[] = "requantize";
  const std::vector<std::string> commands = {"requantize", "dequantize", "report"};
  const std::string first = argc > 1 ? argv[1] : "";
  const bool command_typo = !cact::app::nearest(first, commands).empty() && !std::filesystem::exists(first);
  if (!first.empty() && (first[0] != '-' || first == "-") && !command_typo &&
      std::find(commands.begin(), commands.end(), first) == commands.end()) {
    args.insert(args.begin() + 1, requantize_word);
  }
  return cact::app::run_tool("cact-quant", cli, int(args.size()), args.data(), [&]() -> int {
    using namespace cact;
    if (requantize->parsed()) {
      app::refuse_stdout(rq.out, "OUT");
      const app::InputFile in(rq.in);
      const Model model = app::open_model(in);
      const RequantizePlan plan = plan_requantize(model, rq.bits);
      RequantizeOptions options;
      options.allow_requantize = rq.requantize;
      options.threads = rq.c.threads;
      app::ProgressBar bar("cact-quant", rq.c.progress);
      options.progress = bar.callback();
      const std::filesystem::path inputs[] = {rq.in};
      Report r = requantize_archive(model, plan, rq.out, options, inputs);
      bar.finish();
      r.title = rq.out + " from " + in.name();
      app::write_out(rq.c.json ? format_report_json(r) : format_report_text(r));
      if (plan.changes() == 0) {
        app::info("cact-quant", "no width changes: " + rq.out + " is a byte-identical copy of " + in.name());
      } else {
        app::info("cact-quant",
                  "warning: re-quantised " + std::to_string(plan.changes()) + " already-quantised tensor" +
                      (plan.changes() == 1 ? "" : "s") + " (" + plan.describe_changes(model, 3) +
                      "); against the original float weights their error now compounds two quantisations");
      }
      return 0;
    }
    if (dequantize->parsed()) {
      app::refuse_stdout(dq.out, "OUT");
      app::refuse_stdout(dq.geometry, "--geometry");
      const app::InputFile in(dq.in);
      const Model model = app::open_model(in);
      const std::filesystem::path geometry =
          dq.geometry.empty() ? default_geometry_path(dq.out) : std::filesystem::path(dq.geometry);
      ExportOptions options;
      options.threads = dq.c.threads;
      options.source = app::is_dash(dq.in) ? in.name() : std::filesystem::path(dq.in).filename().string();
      app::ProgressBar bar("cact-quant", dq.c.progress);
      options.progress = bar.callback();
      const std::filesystem::path inputs[] = {dq.in};
      const ExportResult r = export_checkpoint(model, dq.out, geometry, options, inputs);
      bar.finish();
      app::wrote(dq.out, std::to_string(r.tensors) + " tensors as F32, " + std::to_string(r.bytes) + " bytes; widths " +
                             r.bits);
      app::wrote(geometry.string(), "the geometry");
      return 0;
    }
    app::refuse_stdin(rp.reference, "--reference");
    const app::InputFile in(rp.in);
    const Model model = app::open_model(in);
    std::unique_ptr<safetensors::File> reference;
    if (!rp.reference.empty()) reference = std::make_unique<safetensors::File>(safetensors::File::open(rp.reference));
    app::ProgressBar bar("cact-quant", rp.c.progress);
    Report r = archive_report(model, reference.get(), rp.c.threads, bar.callback());
    bar.finish();
    r.title = in.name();
    app::write_out(rp.c.json ? format_report_json(r) : format_report_text(r));
    return 0;
  });
}
