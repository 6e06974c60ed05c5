// cact-inspect: what is in an archive (docs/INSPECT.md).
#include <cstdio>

#include "cact/error.h"
#include "cact/mapped_file.h"
#include "cact/model.h"
#include "common/run_tool.h"
#include "render.h"

int main(int argc, char** argv) {
  CLI::App cli{"cact-inspect: what is in a .cact archive"};
  std::string path;
  bool json = false, tensors = false, check = false;
  std::string tensor;
  size_t limit = 64;
  cli.add_option("archive", path, "the .cact file")->required();
  cli.add_flag("--json", json, "machine-readable output (schema cact-inspect/1)");
  cli.add_flag("--tensors", tensors, "one row per tensor, with xxh64 digests of the blobs");
  cli.add_flag("--check", check, "run every check and list all problems (exit 1 if any)");
  cli.add_option("--tensor", tensor, "values of one tensor by positional name (dequantised for CQ)");
  cli.add_option("--limit", limit, "with --tensor: how many values to print (0 = all)")->capture_default_str();
  return cact::app::run_tool("cact-inspect", cli, argc, argv, [&] {
    cact::inspect::Report report;
    report.path = path;
    report.tensors = tensors;
    report.value_limit = limit;
    std::optional<cact::Model> model;
    const cact::MappedFile file(path);
    if (check) {
      report.problems = cact::check_archive(file.bytes());
      if (report.problems->empty()) model = cact::Model::from_bytes(file.bytes());
    } else {
      try {
        model = cact::Model::from_bytes(file.bytes());
      } catch (const cact::Error& e) {
        cact::fail(path + ": " + e.what());
      }
    }
    if (model) {
      report.model = &*model;
      if (!tensor.empty()) report.tensor = std::make_pair(tensor, cact::tensor_stats(*model, tensor));
    }
    const std::string out = json ? cact::inspect::render_json(report) : cact::inspect::render_text(report);
    std::fwrite(out.data(), 1, out.size(), stdout);
    if (report.problems && !report.problems->empty()) {
      std::fprintf(stderr, "cact-inspect: %s: %zu problem%s found\n", path.c_str(), report.problems->size(),
                   report.problems->size() == 1 ? "" : "s");
      return 1;
    }
    return 0;
  });
}
