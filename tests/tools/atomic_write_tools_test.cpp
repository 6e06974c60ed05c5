// Failure-safe writes of the tools themselves (docs/RELIABILITY.md, "Write
// safety"): every writing tool refuses an output that is one of its inputs
// (leaving the input byte-identical), keeps the old target when a write fails
// half way (RLIMIT_FSIZE, SIGXFSZ ignored), and never leaves a partial target
// when it is killed mid-write (a killed process may leave TARGET.tmp-XXXXXX).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "container/malformed_cases.h"
#include "support/run_app.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;
using namespace cact::test;
using cact::test::malformed::Bytes;
using cact::test::malformed::read_bytes;
using cact::test::malformed::tiny;
using cact::test::malformed::write_bytes;

namespace {

const Bytes kOld = {'o', 'l', 'd', '\n'};

bool available(const std::string& tool) {
  const fs::path exe = binary_dir() / "apps" / tool;
  if (!fs::exists(exe)) return false;
  return run_app(tool, {}).err.find("not yet implemented") == std::string::npos;
}

std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp-") != std::string::npos) out.push_back(name);
  }
  return out;
}

// A writing invocation: {in} is the archive, {out} the output path.
struct Writer {
  const char* tool;
  std::vector<std::string> args;
  const char* out_ext = ".cact";
};
const std::vector<Writer> kWriters = {
    {"cact-slice", {"{in}", "{out}", "--layers", "2"}},
    {"cact-quant", {"requantize", "{in}", "{out}", "--bits", "default=4"}},
    {"cact-quant", {"dequantize", "{in}", "{out}"}, ".safetensors"},
    // vocab 1024: the tokenizer copied from the tiny archive has 1024 pieces.
    {"cact-build", {"synth", "{out}", "--preset", "micro", "--set", "vocab=1024", "--tokenizer-from", "{in}"}},
};

std::vector<std::string> expand(const std::vector<std::string>& args, const fs::path& in, const fs::path& out) {
  std::vector<std::string> v;
  for (const std::string& a : args) v.push_back(a == "{in}" ? in.string() : a == "{out}" ? out.string() : a);
  return v;
}

std::string describe(const Writer& w) {
  std::string s = w.tool;
  for (const auto& a : w.args) s += " " + a;
  return s;
}

}  // namespace

TEST_CASE("tool writes: an output that is the input is refused and the input untouched") {
  const fs::path dir = scratch_dir("tool-same");
  const fs::path in = dir / "in.cact";
  write_bytes(in, tiny());
  fs::create_symlink(in, dir / "link.cact");
  size_t tested = 0;
  for (const Writer& w : kWriters) {
    if (!available(w.tool)) continue;
    for (const fs::path& out : {in, dir / "link.cact", dir / "." / "in.cact"}) {
      CAPTURE(describe(w));
      CAPTURE(out.string());
      const AppRun r = run_app(w.tool, expand(w.args, in, out));
      CHECK(r.code == 1);
      CHECK_MESSAGE(r.err_lines() == 1, r.err);
      CHECK_MESSAGE(r.err.find("refusing to overwrite") != std::string::npos, r.err);
      ++tested;
    }
  }
  CHECK(read_bytes(in) == tiny());
  CHECK(temporaries(dir).empty());
  MESSAGE(tested << " same-file invocations refused");
}

TEST_CASE("tool writes: a write that fails half way keeps the old target and leaves no temporary") {
  const fs::path dir = scratch_dir("tool-fsize");
  const fs::path in = dir / "in.cact";
  write_bytes(in, tiny());
  size_t tested = 0;
  for (const Writer& w : kWriters) {
    if (!available(w.tool)) continue;
    CAPTURE(describe(w));
    const fs::path out = dir / (std::string("out") + w.out_ext);
    write_bytes(out, kOld);
    // Files may grow to 40 x 512 bytes; SIGXFSZ ignored, so write(2) fails with EFBIG.
    const AppRun r = run_app(w.tool, expand(w.args, in, out), {}, "trap '' XFSZ; ulimit -f 40; ");
    CHECK_MESSAGE(!r.signaled, r.err);
    CHECK(r.code == 1);
    CHECK_MESSAGE(r.err_lines() == 1, r.err);
    CHECK_MESSAGE(r.err.find("File too large") != std::string::npos, r.err);
    CHECK(read_bytes(out) == kOld);
    CHECK(temporaries(dir).empty());
    fs::remove(out);
    fs::remove(fs::path(out).replace_extension(".json"));
    ++tested;
  }
  CHECK(read_bytes(in) == tiny());
  MESSAGE(tested << " writers failed cleanly half way");
}

TEST_CASE("tool writes: cact-build killed mid-write never leaves a partial target") {
  if (!available("cact-build")) return;
  const fs::path dir = scratch_dir("tool-kill");
  const fs::path out = dir / "needle3.cact";
  write_bytes(out, kOld);
  const fs::path exe = binary_dir() / "apps" / "cact-build";
  // The needle3 preset is a 35 MB archive: long enough to be killed half way.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    ::execl(exe.c_str(), exe.c_str(), "synth", out.c_str(), "--preset", "needle3", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Kill it once its temporary holds some bytes (or after 60 s).
  bool saw_partial = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    for (const auto& name : temporaries(dir)) {
      std::error_code ec;
      if (fs::file_size(dir / name, ec) > 0 && !ec) saw_partial = true;
    }
    int status = 0;
    if (saw_partial || ::waitpid(pid, &status, WNOHANG) == pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  const Bytes now = read_bytes(out);
  if (saw_partial) {
    CHECK(now == kOld);  // never the partial file
    const auto left = temporaries(dir);
    CHECK(left.size() <= 1);  // the killed process's temporary, documented
    for (const auto& name : left) CHECK(name.rfind("needle3.cact.tmp-", 0) == 0);
  } else {
    MESSAGE("cact-build finished before it could be killed mid-write; checking the result only");
    CHECK((now == kOld || cact::check_archive(now).empty()));
  }
}
