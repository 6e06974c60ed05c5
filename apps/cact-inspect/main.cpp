// cact-inspect: what is in an archive, and what differs between two (docs/INSPECT.md).
#include <cstdio>

#include "archive_diff.h"
#include "cact/error.h"
#include "cact/model.h"
#include "common/error_policy.h"
#include "common/output.h"
#include "common/run_tool.h"
#include "common/std_paths.h"
#include "render.h"

namespace {

int diff(const std::vector<std::string>& paths, bool json, bool verbose) {
  if (cact::app::is_dash(paths[0]) && cact::app::is_dash(paths[1]))
    cact::app::usage_error("--diff - -: only one side can be standard input");
  const cact::app::InputFile fa(paths[0]), fb(paths[1]);
  const cact::Model a = cact::app::open_model(fa), b = cact::app::open_model(fb);
  const cact::inspect::ArchiveDiff d = cact::inspect::diff_archives(a, b, fa.name(), fb.name());
  cact::app::write_out(json ? cact::inspect::render_diff_json(d) : cact::inspect::render_diff_text(d, verbose));
  return d.identical() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"cact-inspect: what is in a .cact archive, or what differs between two"};
  std::string path;
  bool json = false, tensors = false, check = false, verbose = false;
  std::string tensor;
  std::vector<std::string> diff_paths;
  size_t limit = 64;
  cli.add_option("archive", path, "the .cact file (- = standard input)");
  cli.add_flag("--json", json, "machine-readable output (schema cact-inspect/1; with --diff cact-inspect-diff/1)");
  cli.add_flag("--tensors", tensors, "one row per tensor, with xxh64 digests of the blobs");
  cli.add_flag("--check", check, "run every check and list all problems (exit 1 if any)");
  cli.add_option("--tensor", tensor, "values of one tensor by positional name (dequantised for CQ)");
  cli.add_option("--limit", limit, "with --tensor: how many values to print (0 = all)")->capture_default_str();
  cli.add_option("--diff", diff_paths, "compare two archives by content (exit 0 identical, 1 different)")
      ->expected(2)
      ->type_name("A B");
  cli.add_flag("-v,--verbose", verbose, "with --diff: list every added, removed and unchanged tensor");
  return cact::app::run_tool("cact-inspect", cli, argc, argv, [&] {
    if (!diff_paths.empty()) {
      if (!path.empty()) cact::app::usage_error("--diff A B compares two archives: no other archive");
      if (tensors || check || !tensor.empty())
        cact::app::usage_error("--diff does not go with --tensors, --check or --tensor");
      return diff(diff_paths, json, verbose);
    }
    if (path.empty()) cact::app::usage_error("archive is required (or --diff A B)");
    if (verbose) cact::app::usage_error("--verbose goes with --diff");
    cact::inspect::Report report;
    report.tensors = tensors;
    report.value_limit = limit;
    std::optional<cact::Model> model;
    const cact::app::InputFile file(path);
    report.path = file.name();
    if (check) {
      report.problems = cact::check_archive(file.bytes());
      if (report.problems->empty()) {
        model = cact::Model::from_bytes(file.bytes());
        report.problems = cact::check_values(*model);  // the values the format checks do not cover
      }
    } else {
      model = cact::app::open_model(file);
    }
    if (model) {
      report.model = &*model;
      if (!tensor.empty()) report.tensor = std::make_pair(tensor, cact::tensor_stats(*model, tensor));
    }
    cact::app::write_out(json ? cact::inspect::render_json(report) : cact::inspect::render_text(report));
    if (report.problems && !report.problems->empty()) {
      cact::app::note("cact-inspect", file.name() + ": " + std::to_string(report.problems->size()) + " problem" +
                                          (report.problems->size() == 1 ? "" : "s") + " found");
      return 1;
    }
    return 0;
  });
}
