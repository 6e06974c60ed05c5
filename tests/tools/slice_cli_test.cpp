// cact-slice, run as a program: plans, dry runs, outputs that pass the check,
// and bad requests that fail with one line and leave no file behind.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cact/model.h"
#include "cact/slice.h"
#include "cact/synth.h"
#include "support/run_app.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;

namespace {

using Args = std::vector<std::string>;

cact::test::AppRun slice_tool(const Args& args, const std::string& prefix = "") {
  return cact::test::run_app("cact-slice", args, {}, prefix);
}
using cact::test::slurp;

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

size_t entries(const fs::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

fs::path tiny() { return cact::test::models_dir() / "license-tiny.cact"; }

}  // namespace

TEST_CASE("cact-slice: --layers writes a checked rung") {
  const fs::path dir = cact::test::scratch_dir("slice-cli");
  const fs::path out = dir / "tiny-3.cact";
  const cact::test::AppRun r = slice_tool({tiny(), out, "--layers", "3"});
  CHECK(r.code == 0);
  CHECK(r.out.find("blocks:  0 1 3 (3 of 4)") != std::string::npos);
  // The plan is the result (stdout); the written file is reported on stderr like every tool's.
  CHECK(r.out.find("wrote") == std::string::npos);
  CHECK(r.err == "wrote " + out.string() + ": 3 layers, " + std::to_string(fs::file_size(out)) + " bytes\n");
  REQUIRE(fs::exists(out));
  const cact::Model src = cact::Model::open(tiny());
  const cact::Model m = cact::Model::open(out);  // the full archive check
  CHECK(m.header().num_layers == 3);
  const std::vector<uint8_t> expected = cact::slice_bytes(src, cact::plan_slice(src, cact::rung(4, 3)));
  CHECK(slurp(out) == std::string(expected.begin(), expected.end()));
  CHECK(entries(dir) == 1);
}

TEST_CASE("cact-slice: full depth reproduces the input byte for byte") {
  const fs::path dir = cact::test::scratch_dir("slice-cli");
  const fs::path out = dir / "same.cact";
  CHECK(slice_tool({tiny(), out, "--layers", "4"}).code == 0);
  CHECK(slurp(out) == slurp(tiny()));
  CHECK(slice_tool({tiny(), dir / "b.cact", "--blocks", "0,1,2,3"}).code == 0);
  CHECK(slurp(dir / "b.cact") == slurp(tiny()));
}

TEST_CASE("cact-slice: --dry-run prints the plan and writes nothing") {
  const fs::path dir = cact::test::scratch_dir("slice-cli");
  const fs::path out = dir / "never.cact";
  cact::test::AppRun r = slice_tool({tiny(), out, "--layers", "2", "--dry-run"});
  CHECK(r.code == 0);
  CHECK(r.out.find("blocks:  0 3 (2 of 4)") != std::string::npos);
  CHECK(r.out.find("sites:   0 -> 0 (dropped: 2)") != std::string::npos);
  CHECK(r.out.find("global:  3 -> 1 (dropped: 1)") != std::string::npos);
  CHECK(r.out.find("dry run: nothing written") != std::string::npos);
  const cact::Model src = cact::Model::open(tiny());
  const cact::SlicePlan plan = cact::plan_slice(src, cact::rung(4, 2));
  CHECK(r.out.find(std::to_string(plan.output_bytes) + " bytes") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  CHECK(entries(dir) == 0);

  // OUT may be left out of a dry run; --json is one object.
  r = slice_tool({tiny(), "--layers", "3", "--dry-run", "--json", "--context", "128"});
  CHECK(r.code == 0);
  CHECK(lines(r.out) == 1);
  CHECK(r.out.find("\"written\":false") != std::string::npos);
  CHECK(r.out.find("\"output\":null") != std::string::npos);
  CHECK(r.out.find("\"blocks\":[0,1,3]") != std::string::npos);
  CHECK(r.out.find("\"sites\":[{\"old\":0,\"new\":0}]") != std::string::npos);
  CHECK(r.out.find("\"global_layers\":[{\"old\":1,\"new\":1},{\"old\":3,\"new\":2}]") != std::string::npos);
  CHECK(r.out.find("\"max_seq_len\":128") != std::string::npos);
  CHECK(r.out.find("\"sliding_window\":64") != std::string::npos);
  CHECK(entries(dir) == 0);
}

TEST_CASE("cact-slice: --blocks warns when an end block is dropped") {
  const fs::path dir = cact::test::scratch_dir("slice-cli");
  const fs::path out = dir / "mid.cact";
  const cact::test::AppRun r = slice_tool({tiny(), out, "--blocks", "1,2", "--json"});
  CHECK(r.code == 0);
  CHECK(lines(r.err) == 3);  // two warnings and the wrote line
  CHECK(r.err.find("cact-slice: warning: block 0") != std::string::npos);
  CHECK(r.err.find("cact-slice: warning: block 3") != std::string::npos);
  CHECK(r.err.find("wrote " + out.string() + ": 2 layers") != std::string::npos);
  CHECK(r.out.find("\"written\":true") != std::string::npos);
  CHECK(r.out.find("\"sites\":[{\"old\":2,\"new\":1}]") != std::string::npos);
  const cact::Model m = cact::Model::open(out);
  CHECK(m.header().num_layers == 2);
}

TEST_CASE("cact-slice: bad requests fail with one line and leave no output") {
  const fs::path dir = cact::test::scratch_dir("slice-cli");
  const std::string in = tiny(), out = dir / "out.cact";
  const struct {
    Args args;
    int code;
    const char* message;
  } cases[] = {
      {{in, out, "--layers", "1"}, 1, "--layers 1: must be between 2 and 4"},
      {{in, out, "--layers", "5"}, 1, "--layers 5: must be between 2 and 4"},
      {{in, out, "--blocks", "0,4"}, 1, "block 4 is out of range"},
      {{in, out, "--blocks", "0,2,2"}, 1, "block 2 is listed twice"},
      {{in, out, "--blocks", "3,0"}, 1, "ascending"},
      {{in, out, "--blocks", "0,x"}, 1, "--blocks"},
      {{in, out, "--layers", "2", "--context", "0"}, 2, "--context 0"},
      {{in, out}, 2, "--layers"},
      {{in, out, "--layers", "2", "--blocks", "0,3"}, 2, "--layers"},
      {{in, "--layers", "2"}, 2, "OUT is required"},
      {{cact::test::models_dir() / "corpus.txt", out, "--layers", "2"}, 1, "not a .cact archive"},
      {{dir / "missing.cact", out, "--layers", "2"}, 1, "missing.cact"},
      {{in, dir / "no-such-dir" / "out.cact", "--layers", "2"}, 1, "no-such-dir"},
  };
  for (const auto& c : cases) {
    std::string cmdline;
    for (const auto& a : c.args) cmdline.append(" ").append(a);
    CAPTURE(cmdline);
    const cact::test::AppRun r = slice_tool(c.args);
    CHECK(r.code == c.code);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.rfind("cact-slice: ", 0) == 0);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(r.out.empty());
    CHECK(entries(dir) == 0);
  }
}

TEST_CASE("cact-slice: refuses to overwrite its input") {
  const fs::path dir = cact::test::scratch_dir("slice-cli");
  const fs::path in = dir / "model.cact";
  fs::copy_file(tiny(), in);
  fs::create_symlink(in, dir / "alias.cact");
  for (const fs::path& target : {in, dir / "alias.cact", dir / "." / "model.cact"}) {
    const cact::test::AppRun r = slice_tool({in, target, "--layers", "2"});
    CHECK(r.code == 1);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find("input") != std::string::npos);
    CHECK(slurp(in) == slurp(tiny()));
    CHECK(entries(dir) == 2);
  }
}

TEST_CASE("cact-slice: a failed write (file size limit) leaves nothing behind") {
  const fs::path dir = cact::test::scratch_dir("slice-cli");
  const fs::path out = dir / "big.cact";
  // 64 blocks of the shell's ulimit unit is far below the ~340 KB output; with
  // SIGXFSZ ignored the write fails with EFBIG, like a full disk fails with ENOSPC.
  const cact::test::AppRun r = slice_tool({tiny(), out, "--layers", "2"}, "ulimit -f 64; trap '' XFSZ; ");
  CHECK(r.code == 1);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find("write failed") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  CHECK(entries(dir) == 0);

  // An existing output is left as it was.
  fs::copy_file(tiny(), out);
  const cact::test::AppRun again = slice_tool({tiny(), out, "--layers", "2"}, "ulimit -f 64; trap '' XFSZ; ");
  CHECK(again.code == 1);
  CHECK(slurp(out) == slurp(tiny()));
  CHECK(entries(dir) == 1);
}

TEST_CASE("cact-slice: the engine runs sliced archives unchanged") {
  const fs::path dir = cact::test::scratch_dir("slice-cli");
  // The bundled model at rungs 2 and 3 (one with a smaller context).
  for (const Args& args : {Args{"--layers", "2", "--context", "128"}, Args{"--layers", "3"}, Args{"--blocks", "1,2"}}) {
    Args full{tiny(), dir / "s.cact"};
    full.insert(full.end(), args.begin(), args.end());
    REQUIRE(slice_tool(full).code == 0);
    const cact::test::AppRun run =
        cact::test::run_app("cact-run", {dir / "s.cact", "-p", "The GNU General Public License", "-n", "8", "--json"});
    CHECK(run.code == 0);
    CHECK(run.err.empty());
    CHECK(run.out.find("\"generated_tokens\":8") != std::string::npos);
  }
  // A synthetic archive with three heads (confidence among them), sliced to two blocks.
  cact::write_synth_archive(dir / "heads.cact", cact::synth_preset("micro-heads"));
  REQUIRE(slice_tool({dir / "heads.cact", dir / "heads-2.cact", "--layers", "2"}).code == 0);
  const cact::test::AppRun run =
      cact::test::run_app("cact-run", {dir / "heads-2.cact", "-p", "hello", "-n", "4", "--json"});
  CHECK(run.code == 0);
  CHECK(run.out.find("\"confidence\":null") == std::string::npos);
  CHECK(run.out.find("\"confidence\":") != std::string::npos);
}
