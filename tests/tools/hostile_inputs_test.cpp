// Hostile input beyond the archive (docs/RELIABILITY.md "Inputs"): every file
// a tool reads besides the archive (geometry JSON, safetensors headers,
// tokenizer models, tool lists, transcripts, prompts) is type-checked and
// bounded; JSON is read by the one bounded reader; flag values are range
// checked; non-finite values are reported, refused by writers and warned about
// by cact-run; a failed thread creation degrades; an archive truncated while
// mapped is one line, not SIGBUS.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cact/model.h"
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

fs::path tools_model() { return models_dir() / "tools" / "tools-tiny.cact"; }

// A command that must fail cleanly: within 30 s, exit 1, one line naming `needle`.
void check_refused(const AppRun& r, const std::string& tool, const std::string& needle) {
  CHECK_MESSAGE(r.code != 124, "timed out (a hang)");
  CHECK_MESSAGE(!r.signaled, "signal: " << r.code << " " << r.err);
  CHECK_MESSAGE(r.code == 1, "exit " << r.code << ": " << r.err);
  CHECK_MESSAGE(r.err_lines() == 1, r.err);
  CHECK_MESSAGE(r.err.rfind(tool + ": ", 0) == 0, r.err);
  CHECK_MESSAGE(r.err.find(needle) != std::string::npos, "no \"" << needle << "\" in: " << r.err);
}

// `prefix`: shell run first (limits); `wrapper`: a command the tool runs under.
AppRun timed(const std::string& tool, const std::vector<std::string>& args, const std::string& prefix = "",
             const std::string& wrapper = "") {
  std::string cmd = prefix;
  cmd.append("timeout 30 ").append(wrapper).append(shell_quote((binary_dir() / "apps" / tool).string()));
  for (const auto& a : args) cmd.append(" ").append(shell_quote(a));
  return run_shell(cmd);
}

std::vector<fs::path> temporaries(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp-") != std::string::npos) out.push_back(e.path());
  }
  return out;
}

// The tiny archive dequantised: a float checkpoint + geometry, made once.
struct Checkpoint {
  fs::path dir, ckpt, geom;
};
const Checkpoint& checkpoint() {
  static const Checkpoint c = [] {
    Checkpoint k;
    k.dir = scratch_dir("hostile-inputs-ckpt");
    k.ckpt = k.dir / "tiny.safetensors";
    k.geom = k.dir / "tiny.json";
    const AppRun r =
        run_app("cact-quant", {"dequantize", (models_dir() / "license-tiny.cact").string(), k.ckpt.string()});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    return k;
  }();
  return c;
}

std::string text_of(const fs::path& p) { return slurp(p); }
void write_text(const fs::path& p, const std::string& s) { write_bytes(p, Bytes(s.begin(), s.end())); }

// `depth` nested arrays as the value of key "deep", followed by another key:
// the shape that crashed the recursive readers.
std::string deep_json(size_t depth) {
  // Built with append: GCC 12 misreports -Wrestrict on chained string operator+.
  std::string json = "{\"deep\": ";
  json.append(depth, '[').append(depth, ']').append(", \"next\": 1}");
  return json;
}

// The safetensors file with `extra` inserted as the first member of its header
// (the header length adjusted; the data section unchanged).
Bytes with_header_member(const Bytes& st, const std::string& extra) {
  uint64_t n = 0;
  std::memcpy(&n, st.data(), 8);
  std::string header = "{";
  header.append(extra).append(st.begin() + 9, st.begin() + 8 + std::ptrdiff_t(n));
  const uint64_t len = header.size();
  std::string file(reinterpret_cast<const char*>(&len), 8);
  file.append(header).append(st.begin() + 8 + std::ptrdiff_t(n), st.end());
  return Bytes(file.begin(), file.end());
}

// The tiny archive with one FP16 value of its CQ record `index`'s norms (or
// of an FP16 record) replaced by `bits`.
Bytes with_half(size_t record, size_t element, uint16_t bits, bool cq_norm) {
  Bytes b = tiny();
  const cact::Model& m = cact::test::malformed::tiny_model();
  size_t at = size_t(m.blob(record).data() - m.bytes().data());
  if (cq_norm) {
    const auto cq = m.matrix(record);
    at += size_t(cq.norms - m.blob(record).data());
  }
  at += 2 * element;
  std::memcpy(b.data() + at, &bits, 2);
  return b;
}

size_t first_record(cact::Dtype dtype) {
  const cact::Model& m = cact::test::malformed::tiny_model();
  for (size_t i = 0; i < m.records().size(); ++i) {
    if (m.record(i).dtype == dtype) return i;
  }
  FAIL("no record of the dtype");
  return 0;
}

}  // namespace

TEST_CASE("hostile inputs: JSON nested 100 000 deep is refused by every JSON input, no crash") {
  const Checkpoint& c = checkpoint();
  const fs::path dir = scratch_dir("hostile-deep");
  const std::string deep = deep_json(100000);
  write_text(dir / "deep.json", deep);
  // The geometry file.
  check_refused(
      timed("cact-build", {"checkpoint", c.ckpt.string(), (dir / "deep.json").string(), (dir / "o.cact").string(),
                           "--tokenizer", (models_dir() / "license-tiny.cact").string()}),
      "cact-build", "JSON nested deeper than 64 levels");
  // A safetensors header (a deep metadata-like member), read by checkpoint and report --reference.
  std::string deep_member = "\"x\": ";
  deep_member.append(100000, '[').append(100000, ']').append(", ");
  write_bytes(dir / "deep.safetensors", with_header_member(read_bytes(c.ckpt), deep_member));
  check_refused(
      timed("cact-build", {"checkpoint", (dir / "deep.safetensors").string(), c.geom.string(),
                           (dir / "o.cact").string(), "--tokenizer", (models_dir() / "license-tiny.cact").string()}),
      "cact-build", "JSON nested deeper");
  check_refused(timed("cact-quant", {"report", (models_dir() / "license-tiny.cact").string(), "--reference",
                                     (dir / "deep.safetensors").string()}),
                "cact-quant", "JSON nested deeper");
  // A tool list and a transcript.
  write_text(dir / "deep-list.json", std::string("[").append(deep).append("]"));
  check_refused(
      timed("cact-run", {tools_model().string(), "--chat", "--tools", (dir / "deep-list.json").string(), "-p", "hi"}),
      "cact-run", "JSON nested deeper");
  check_refused(
      timed("cact-run", {tools_model().string(), "--chat", "--load", (dir / "deep.json").string(), "-p", "hi"}),
      "cact-run", "JSON nested deeper");
  CHECK(!fs::exists(dir / "o.cact"));
}

TEST_CASE("hostile inputs: a NUL byte does not end the JSON (the rest is not ignored)") {
  const Checkpoint& c = checkpoint();
  const fs::path dir = scratch_dir("hostile-nul");
  std::string geometry = text_of(c.geom);
  geometry.append(std::string("\0{\"junk\": 1}", 12));
  write_text(dir / "nul.json", geometry);
  check_refused(
      timed("cact-build", {"checkpoint", c.ckpt.string(), (dir / "nul.json").string(), (dir / "o.cact").string(),
                           "--tokenizer", (models_dir() / "license-tiny.cact").string()}),
      "cact-build", "NUL byte");
  const std::string tools = text_of(models_dir() / "tools" / "tools.json");
  write_text(dir / "nul-tools.json", std::string(tools).append(std::string("\0garbage", 8)));
  check_refused(
      timed("cact-run", {tools_model().string(), "--chat", "--tools", (dir / "nul-tools.json").string(), "-p", "hi"}),
      "cact-run", "NUL byte");
  // A safetensors header padded with NUL instead of spaces.
  write_bytes(dir / "nul.safetensors", with_header_member(read_bytes(c.ckpt), std::string("\"a\": \"b\"\0, ", 11)));
  check_refused(
      timed("cact-build", {"checkpoint", (dir / "nul.safetensors").string(), c.geom.string(), (dir / "o.cact").string(),
                           "--tokenizer", (models_dir() / "license-tiny.cact").string()}),
      "cact-build", "NUL byte");
  // A tool list that is not a list.
  write_text(dir / "object.json", "{\"name\": \"f\"}");
  check_refused(
      timed("cact-run", {tools_model().string(), "--chat", "--tools", (dir / "object.json").string(), "-p", "hi"}),
      "cact-run", "--tools");
}

TEST_CASE("hostile inputs: a FIFO, /dev/zero or a directory as a whole-file input is refused at once") {
  const Checkpoint& c = checkpoint();
  const fs::path dir = scratch_dir("hostile-special");
  const fs::path fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  const std::string tiny_path = (models_dir() / "license-tiny.cact").string(), out = (dir / "o.cact").string();
  for (const fs::path& special : {fifo, fs::path("/dev/zero"), dir}) {
    CAPTURE(special.string());
    const std::string s = special.string();
    const std::string kind = special == fifo ? "a FIFO" : special == dir ? "a directory" : "a character device";
    check_refused(timed("cact-build", {"checkpoint", c.ckpt.string(), s, out, "--tokenizer", tiny_path}), "cact-build",
                  kind);
    check_refused(timed("cact-build", {"checkpoint", c.ckpt.string(), c.geom.string(), out, "--tokenizer", s}),
                  "cact-build", kind);
    for (const char* flag : {"--tools", "--load"}) {
      const AppRun r = timed("cact-run", {tools_model().string(), "--chat", flag, s, "-p", "hi"});
      check_refused(r, "cact-run", kind);
      CHECK_MESSAGE(r.err.find(s) != std::string::npos, "the message does not name the path: " << r.err);
    }
    check_refused(timed("cact-run", {tools_model().string(), "-f", s}), "cact-run", kind);
  }
  CHECK(!fs::exists(out));
}

TEST_CASE("hostile inputs: flag values out of range are refused as such") {
  const fs::path dir = scratch_dir("hostile-flags");
  const std::string out = (dir / "s.cact").string();
  // --set reads decimal ("010" is ten, not octal eight) and names an out-of-range value.
  REQUIRE(run_app("cact-build", {"synth", out, "--set", "kv_window=010"}).code == 0);
  CHECK(cact::Model::from_bytes(read_bytes(out)).header().kv_window == 10);
  const AppRun big = run_app("cact-build", {"synth", out, "--set", "kv_window=4294967296"});
  CHECK(big.code == 1);
  CHECK_MESSAGE(big.err.find("out of range") != std::string::npos, big.err);
  CHECK(
      run_app("cact-build", {"synth", out, "--set", "kv_window=0x10"}).err.find("not a non-negative decimal integer") !=
      std::string::npos);
  // A key given twice in one --bits map.
  const AppRun twice = run_app("cact-build", {"synth", out, "--bits", "layers=3,layers=4"});
  CHECK(twice.code == 1);
  CHECK_MESSAGE(twice.err.find("given more than once") != std::string::npos, twice.err);
  // Sampling and attention values.
  CHECK(run_app("cact-run", {tools_model().string(), "-p", "hi", "--top-p", "2"}).code == 2);
  const AppRun sinks =
      run_app("cact-run", {tools_model().string(), "-p", "hi", "--sinks", "100000", "--kv-window", "16"});
  CHECK(sinks.code == 2);
  CHECK_MESSAGE(sinks.err.find("--sinks 100000 is beyond the context") != std::string::npos, sinks.err);
  // A number the flag's type cannot hold is out of range; a word is not a number.
  const AppRun huge = run_app("cact-run", {tools_model().string(), "-p", "hi", "--threads", "99999999999"});
  CHECK(huge.code == 2);
  CHECK_MESSAGE(huge.err.find("--threads: 99999999999 is out of range") != std::string::npos, huge.err);
  const AppRun word = run_app("cact-run", {tools_model().string(), "-p", "hi", "--threads", "many"});
  CHECK(word.code == 2);
  CHECK_MESSAGE(word.err.find("--threads: many is not a number") != std::string::npos, word.err);
}

TEST_CASE("hostile inputs: non-finite values are reported by --check, refused by writers, warned about by cact-run") {
  const fs::path dir = scratch_dir("hostile-nonfinite");
  const size_t cq = first_record(cact::Dtype::CQ), fp16 = first_record(cact::Dtype::FP16);
  write_bytes(dir / "inf-norm.cact", with_half(cq, 0, 0x7C00, true));
  write_bytes(dir / "nan-fp16.cact", with_half(fp16, 1, 0x7E00, false));
  // --check: the archive is valid by the format, but not its values.
  const AppRun norm = run_app("cact-inspect", {"--check", (dir / "inf-norm.cact").string()});
  CHECK(norm.code == 1);
  CHECK_MESSAGE(norm.out.find("1 CQ norm is not finite (first: row 0, group 0, +inf)") != std::string::npos, norm.out);
  const AppRun half = run_app("cact-inspect", {"--check", (dir / "nan-fp16.cact").string()});
  CHECK(half.code == 1);
  CHECK_MESSAGE(half.out.find("1 FP16 value is not finite (first: element 1, NaN)") != std::string::npos, half.out);
  CHECK(run_app("cact-inspect", {"--check", (models_dir() / "license-tiny.cact").string()}).code == 0);
  // A writer cannot store them again.
  const AppRun rq = run_app("cact-quant", {"requantize", (dir / "inf-norm.cact").string(), (dir / "rq.cact").string(),
                                           "--bits", "default=3", "--requantize"});
  CHECK(rq.code == 1);
  CHECK_MESSAGE(rq.err.find("does not fit a CQ norm") != std::string::npos, rq.err);
  CHECK(!fs::exists(dir / "rq.cact"));
  // Finite weights whose group norm exceeds FP16: refused, not written as +inf.
  const Checkpoint& c = checkpoint();
  Bytes st = read_bytes(c.ckpt);
  uint64_t n = 0;
  std::memcpy(&n, st.data(), 8);
  const std::string header(st.begin() + 8, st.begin() + 8 + std::ptrdiff_t(n));
  const size_t key = header.find("\"layer00.q_proj\"");
  REQUIRE(key != std::string::npos);
  const size_t offsets = header.find("\"data_offsets\":[", key) + 16;
  const uint64_t begin = std::stoull(header.substr(offsets));
  const float huge = 1e30f;
  std::memcpy(st.data() + 8 + n + begin, &huge, 4);
  write_bytes(dir / "huge.safetensors", st);
  const AppRun build = run_app(
      "cact-build", {"checkpoint", (dir / "huge.safetensors").string(), c.geom.string(), (dir / "huge.cact").string(),
                     "--tokenizer", (models_dir() / "license-tiny.cact").string()});
  CHECK(build.code == 1);
  CHECK_MESSAGE(
      build.err.find("tensor layer00.q_proj: row 0, group 0: the group's norm 9.99999965e+29 does not fit a CQ norm") !=
          std::string::npos,
      build.err);
  CHECK(!fs::exists(dir / "huge.cact"));
  // cact-run says once that its logits are not finite.
  Bytes all = tiny();
  {
    const cact::Model& m = cact::test::malformed::tiny_model();
    const auto e = m.matrix(0);  // the embedding: every token's row
    const size_t at = size_t(e.norms - m.bytes().data());
    for (size_t k = 0; k < size_t(e.out) * e.groups_per_row(); ++k) {
      const uint16_t inf = 0x7C00;
      std::memcpy(all.data() + at + 2 * k, &inf, 2);
    }
  }
  write_bytes(dir / "inf-embedding.cact", all);
  const AppRun run = run_app("cact-run", {(dir / "inf-embedding.cact").string(), "-p", "hello", "-n", "3"});
  CHECK_MESSAGE(run.err.find("logits are not finite") != std::string::npos, run.err);
  size_t warnings = 0;
  for (size_t at = run.err.find("logits are not finite"); at != std::string::npos;
       at = run.err.find("logits are not finite", at + 1)) {
    ++warnings;
  }
  CHECK(warnings == 1);
  const AppRun fine = run_app("cact-run", {(models_dir() / "license-tiny.cact").string(), "-p", "hello", "-n", "3"});
  CHECK(fine.err.find("not finite") == std::string::npos);
}

TEST_CASE("hostile inputs: thread creation failing degrades to fewer threads, no abort, no temporary") {
  const fs::path dir = scratch_dir("hostile-threads");
  const Checkpoint& c = checkpoint();
  const std::string tiny_path = (models_dir() / "license-tiny.cact").string();
  // Root: RLIMIT_NPROC 1 as uid 65534 (root is not bound by it), so no thread
  // at all can be made. Otherwise each thread's stack is RLIMIT_STACK (1 GB)
  // inside a 3 GB address space: the first few threads fit, the rest fail
  // (not under ASan, whose shadow memory needs far more address space).
  std::string limits, wrapper;
  if (::geteuid() == 0) {
    wrapper = "prlimit --nproc=1 setpriv --reuid=65534 --regid=65534 --clear-groups ";
#if defined(__SANITIZE_ADDRESS__)
    // LeakSanitizer needs a thread of its own at exit, which RLIMIT_NPROC 1 denies.
    wrapper = "env ASAN_OPTIONS=\"${ASAN_OPTIONS}:detect_leaks=0\" " + wrapper;
#endif
    fs::permissions(dir, fs::perms::all);
    if (!nobody_can_reach({dir, models_dir(), c.ckpt.parent_path()})) {
      MESSAGE("skipped: uid 65534 cannot reach the build tree (a private parent directory)");
      return;
    }
  } else {
#if defined(__SANITIZE_ADDRESS__)
    MESSAGE("skipped: limiting threads without root needs ulimit -v, which ASan cannot run under");
    return;
#endif
    limits = "ulimit -s 1000000 && ulimit -v 3000000 && ";
  }
  const std::vector<std::vector<std::string>> runs = {
      {"cact-run", tiny_path, "-p", "hello", "-n", "4", "--threads", "16"},
      {"cact-quant", "requantize", tiny_path, (dir / "rq.cact").string(), "--bits", "default=3", "--requantize",
       "--threads", "16"},
      {"cact-quant", "dequantize", tiny_path, (dir / "dq.safetensors").string(), "--threads", "16"},
      {"cact-build", "checkpoint", c.ckpt.string(), c.geom.string(), (dir / "ck.cact").string(), "--tokenizer",
       tiny_path, "--threads", "16"},
  };
  for (const auto& argv : runs) {
    CAPTURE(argv[0] + " " + argv[1]);
    const AppRun r = timed(argv[0], {argv.begin() + 1, argv.end()}, limits, wrapper);
    CHECK_MESSAGE(!r.signaled, r.err);
    CHECK_MESSAGE(r.err.find("terminate called") == std::string::npos, r.err);
    CHECK_MESSAGE(r.code == 0, "exit " << r.code << ": " << r.err);
  }
  CHECK(temporaries(dir).empty());
}

TEST_CASE("hostile inputs: an archive truncated while cact-run has it mapped is one line, exit 1") {
  const fs::path dir = scratch_dir("hostile-sigbus");
  const fs::path archive = dir / "model.cact";
  fs::copy_file(tools_model(), archive);
  // --jsonl: answer one request (the archive is mapped and in use), truncate
  // the file, then send a second request, which reads pages that are gone.
  int to_child[2], from_child[2];
  REQUIRE(::pipe(to_child) == 0);
  REQUIRE(::pipe(from_child) == 0);
  const fs::path err = dir / "stderr.txt";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(to_child[0], 0);
    ::dup2(from_child[1], 1);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(e, 2);
    ::close(to_child[1]);
    ::close(from_child[0]);
    const std::string exe = (binary_dir() / "apps" / "cact-run").string();
    ::execl(exe.c_str(), exe.c_str(), archive.c_str(), "--jsonl", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  const std::string request = "{\"query\": \"set a timer for 10 minutes\", \"max_tokens\": 8}\n";
  REQUIRE(::write(to_child[1], request.data(), request.size()) == ssize_t(request.size()));
  std::string answer;
  char c = 0;
  while (::read(from_child[0], &c, 1) == 1 && c != '\n') answer.push_back(c);
  REQUIRE_MESSAGE(!answer.empty(), slurp(err));
  fs::resize_file(archive, 4096);
  REQUIRE(::write(to_child[1], request.data(), request.size()) == ssize_t(request.size()));
  ::close(to_child[1]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(from_child[0]);
  const std::string message = slurp(err);
  CHECK_MESSAGE(!WIFSIGNALED(status), "killed by signal " << WTERMSIG(status));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  CHECK_MESSAGE(message == "cact-run: " + archive.string() +
                               ": file changed while in use (truncated or rewritten by another process); stopped\n",
                message);
}

TEST_CASE("hostile inputs: multi-file outputs are all or nothing; long output names work") {
  const fs::path dir = scratch_dir("hostile-outputs");
  const std::string tiny_path = (models_dir() / "license-tiny.cact").string();
  // dequantize writes OUT.safetensors and OUT.json: the second refused, the first not written either.
  fs::create_directories(dir / "out.json");
  const AppRun r = run_app("cact-quant", {"dequantize", tiny_path, (dir / "out.safetensors").string()});
  CHECK(r.code == 1);
  CHECK_MESSAGE(r.err.find("a directory") != std::string::npos, r.err);
  CHECK(!fs::exists(dir / "out.safetensors"));
  CHECK(temporaries(dir).empty());
  // An output name of NAME_MAX bytes: the temporary's suffix must not make it fail.
  const fs::path longest = dir / (std::string(255 - 5, 'n') + ".cact");
  const AppRun s = run_app("cact-slice", {tiny_path, longest.string(), "--layers", "2"});
  CHECK_MESSAGE(s.code == 0, s.err);
  CHECK(fs::exists(longest));
  CHECK(temporaries(dir).empty());
}
