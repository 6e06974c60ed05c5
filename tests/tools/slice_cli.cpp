// cact-slice, run as a program: plans, dry runs, outputs that pass the check,
// and bad requests that fail with one line and leave no file behind.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cact/model.h"
#include "cact/slice.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;

namespace {

struct Run {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs cact-slice with `args` (already quoted) under /bin/sh, optionally after
// `prefix` shell commands (limits, traps).
Run slice_tool(const fs::path& dir, const std::string& args, const std::string& prefix = "") {
  const fs::path exe = cact::test::binary_dir() / "apps" / "cact-slice";
  const fs::path o = dir / "stdout.txt", e = dir / "stderr.txt";
  const std::string cmd = prefix + "exec " + quote(exe.string()) + " " + args + " >" + quote(o.string()) + " 2>" + quote(e.string());
  const int status = std::system(("/bin/sh -c " + quote(cmd)).c_str());
  Run r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = slurp(o);
  r.err = slurp(e);
  fs::remove(o);
  fs::remove(e);
  return r;
}

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
  const Run r = slice_tool(dir, quote(tiny().string()) + " " + quote(out.string()) + " --layers 3");
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("blocks:  0 1 3 (3 of 4)") != std::string::npos);
  CHECK(r.out.find("wrote:") != std::string::npos);
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
  CHECK(slice_tool(dir, quote(tiny().string()) + " " + quote(out.string()) + " --layers 4").code == 0);
  CHECK(slurp(out) == slurp(tiny()));
  CHECK(slice_tool(dir, quote(tiny().string()) + " " + quote((dir / "b.cact").string()) + " --blocks 0,1,2,3").code == 0);
  CHECK(slurp(dir / "b.cact") == slurp(tiny()));
}

TEST_CASE("cact-slice: --dry-run prints the plan and writes nothing") {
  const fs::path dir = cact::test::scratch_dir("slice-cli");
  const fs::path out = dir / "never.cact";
  Run r = slice_tool(dir, quote(tiny().string()) + " " + quote(out.string()) + " --layers 2 --dry-run");
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
  r = slice_tool(dir, quote(tiny().string()) + " --layers 3 --dry-run --json --context 128");
  CHECK(r.code == 0);
  CHECK(lines(r.out) == 1);
  CHECK(r.out.find("\"written\":false") != std::string::npos);
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
  const Run r = slice_tool(dir, quote(tiny().string()) + " " + quote(out.string()) + " --blocks 1,2 --json");
  CHECK(r.code == 0);
  CHECK(lines(r.err) == 2);
  CHECK(r.err.find("cact-slice: warning: block 0") != std::string::npos);
  CHECK(r.err.find("cact-slice: warning: block 3") != std::string::npos);
  CHECK(r.out.find("\"written\":true") != std::string::npos);
  CHECK(r.out.find("\"sites\":[{\"old\":2,\"new\":1}]") != std::string::npos);
  const cact::Model m = cact::Model::open(out);
  CHECK(m.header().num_layers == 2);
}

TEST_CASE("cact-slice: bad requests fail with one line and leave no output") {
  const fs::path dir = cact::test::scratch_dir("slice-cli");
  const std::string in = quote(tiny().string());
  const std::string out = quote((dir / "out.cact").string());
  const struct {
    std::string args;
    int code;
    const char* message;
  } cases[] = {
      {in + " " + out + " --layers 1", 1, "--layers 1: must be between 2 and 4"},
      {in + " " + out + " --layers 5", 1, "--layers 5: must be between 2 and 4"},
      {in + " " + out + " --blocks 0,4", 1, "block 4 is out of range"},
      {in + " " + out + " --blocks 0,2,2", 1, "block 2 is listed twice"},
      {in + " " + out + " --blocks 3,0", 1, "ascending"},
      {in + " " + out + " --blocks 0,x", 1, "--blocks"},
      {in + " " + out + " --layers 2 --context 0", 1, "--context 0"},
      {in + " " + out, 2, "--layers"},
      {in + " " + out + " --layers 2 --blocks 0,3", 2, "--layers"},
      {in + " --layers 2", 2, "OUT is required"},
      {quote((cact::test::models_dir() / "corpus.txt").string()) + " " + out + " --layers 2", 1, "not a .cact archive"},
      {quote((dir / "missing.cact").string()) + " " + out + " --layers 2", 1, "missing.cact"},
      {in + " " + quote((dir / "no-such-dir" / "out.cact").string()) + " --layers 2", 1, "no-such-dir"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const Run r = slice_tool(dir, c.args);
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
    const Run r = slice_tool(dir, quote(in.string()) + " " + quote(target.string()) + " --layers 2");
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
  const Run r = slice_tool(dir, quote(tiny().string()) + " " + quote(out.string()) + " --layers 2",
                           "ulimit -f 64; trap '' XFSZ; ");
  CHECK(r.code == 1);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find("write failed") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  CHECK(entries(dir) == 0);

  // An existing output is left as it was.
  fs::copy_file(tiny(), out);
  const Run again = slice_tool(dir, quote(tiny().string()) + " " + quote(out.string()) + " --layers 2",
                               "ulimit -f 64; trap '' XFSZ; ");
  CHECK(again.code == 1);
  CHECK(slurp(out) == slurp(tiny()));
  CHECK(entries(dir) == 1);
}
