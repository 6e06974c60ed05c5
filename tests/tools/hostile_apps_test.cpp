// Every built app that reads an archive, run on a sample of the malformed
// archives of tests/container/malformed_cases.h: each run must end by itself
// within a timeout, not by a signal, with a non-zero exit and exactly one line
// "tool: message" on stderr; a writing tool leaves no output and no temporary.
// An app that is still a placeholder ("not yet implemented") is skipped, and
// so is an invocation whose arguments the app does not accept on the valid
// archive (the CLI changed: update kInvocations below).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "container/malformed_cases.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;
using namespace cact::test::malformed;

namespace {

struct Result {
  bool timed_out = false;
  int signal = 0;  // non-zero: killed by this signal
  int code = -1;
  std::string out, err;
  double seconds = 0;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// fork/exec with stdout/stderr to files, stdin from /dev/null, and a deadline
// after which the child is killed (and the run counted as a hang).
Result run(const fs::path& exe, const std::vector<std::string>& args, const fs::path& scratch,
           double timeout_s = 20.0) {
  const fs::path out = scratch / "stdout.txt", err = scratch / "stderr.txt";
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int in_fd = ::open("/dev/null", O_RDONLY);
    const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in_fd < 0 || out_fd < 0 || err_fd < 0) ::_exit(126);
    ::dup2(in_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    std::vector<char*> argv;
    std::string name = exe.string();
    argv.push_back(name.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  Result r;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    REQUIRE(done >= 0);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() - start > std::chrono::duration<double>(timeout_s)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

size_t count_lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

bool placeholder(const fs::path& exe, const fs::path& scratch) {
  const Result r = run(exe, {}, scratch);
  return r.err.find("not yet implemented") != std::string::npos;
}

// How each app is invoked on an archive. {in} is the archive, {out} an output
// path (which must not exist afterwards when the input is bad).
struct Invocation {
  const char* app;
  std::vector<std::string> args;
  const char* out_ext = ".cact";   // extension of {out}
  bool message_on_stdout = false;  // --check lists the problems on stdout, a summary on stderr
};
const std::vector<Invocation> kInvocations = {
    {"cact-inspect", {"{in}"}},
    {"cact-inspect", {"--tensors", "{in}"}},
    {"cact-inspect", {"--json", "{in}"}},
    {"cact-inspect", {"--check", "{in}"}, ".cact", true},
    {"cact-slice", {"{in}", "{out}", "--layers", "2"}},
    {"cact-slice", {"--dry-run", "{in}", "--layers", "2"}},
    {"cact-run", {"{in}", "--prompt", "hello", "--max-tokens", "2"}},
    {"cact-run", {"{in}", "--float", "--prompt", "hello", "--max-tokens", "2"}},
    {"cact-quant", {"report", "{in}"}},
    {"cact-quant", {"requantize", "{in}", "{out}", "--bits", "default=4"}},
    {"cact-quant", {"dequantize", "{in}", "{out}"}, ".safetensors"},
};

std::vector<std::string> expand(const std::vector<std::string>& args, const fs::path& in, const fs::path& out) {
  std::vector<std::string> v;
  for (const std::string& a : args) v.push_back(a == "{in}" ? in.string() : a == "{out}" ? out.string() : a);
  return v;
}

// A sample of the table: every 6th case plus the ones that matter most for a
// tool (other generation, non-archives, lying sizes, truncation, content).
std::vector<Case> sample() {
  std::vector<Case> all = all_cases(), picked;
  const char* always[] = {"tag Needle 2",
                          "tag Needle 2, 120-byte file",
                          "tag unknown",
                          "a text file",
                          "all zeros",
                          "truncated to 0 bytes",
                          "truncated to 6027 bytes",
                          "truncated to 593616 bytes",
                          "record offset + nbytes wraps u64",
                          "record offset near 2^64",
                          "record nbytes huge",
                          "header num_tensors = 4294967295",
                          "header num_tensors = 131",
                          "tokenizer n_pieces 2^32-1",
                          "tokenizer surface_len past end",
                          "tokenizer more pieces than vocab",
                          "ternary blob with crumb 2",
                          "record CQ group 24 (not a power of two)",
                          "header rope_theta = NaN",
                          "a SentencePiece model"};
  for (size_t i = 0; i < all.size(); ++i) {
    bool take = i % 6 == 0;
    for (const char* name : always) take = take || all[i].name == name;
    if (take) picked.push_back(std::move(all[i]));
  }
  return picked;
}

}  // namespace

TEST_CASE("hostile input: every archive-reading app refuses malformed archives cleanly") {
  const fs::path scratch = cact::test::scratch_dir("hostile-apps");
  const fs::path apps = cact::test::binary_dir() / "apps";
  const fs::path valid = cact::test::models_dir() / "license-tiny.cact";
  const std::vector<Case> cases = sample();
  REQUIRE(cases.size() >= 40);
  std::vector<fs::path> files;
  for (size_t i = 0; i < cases.size(); ++i) {
    files.push_back(scratch / ("bad-" + std::to_string(i) + ".cact"));
    write_bytes(files.back(), cases[i].bytes);
  }
  size_t runs = 0, tested_invocations = 0;
  std::vector<std::string> skipped;
  for (const Invocation& inv : kInvocations) {
    const fs::path exe = apps / inv.app;
    std::string what = inv.app;
    for (const auto& a : inv.args) what += " " + a;
    if (!fs::exists(exe)) {
      skipped.push_back(what + " (not built)");
      continue;
    }
    if (placeholder(exe, scratch)) {
      skipped.push_back(what + " (placeholder)");
      continue;
    }
    // The invocation must work on the valid archive, or it tests nothing.
    const fs::path good_out = scratch / (std::string("good-out") + inv.out_ext);
    const Result ok = run(exe, expand(inv.args, valid, good_out), scratch, 120.0);
    fs::remove(good_out);
    fs::remove(fs::path(good_out).replace_extension(".json"));
    if (ok.code != 0) {
      skipped.push_back(what + " (refused the valid archive, exit " + std::to_string(ok.code) + ": " + ok.err + ")");
      continue;
    }
    ++tested_invocations;
    const std::string prefix = std::string(inv.app) + ": ";
    for (size_t i = 0; i < cases.size(); ++i) {
      CAPTURE(what);
      CAPTURE(cases[i].name);
      const fs::path out = scratch / ("out-" + std::to_string(i) + inv.out_ext);
      const Result r = run(exe, expand(inv.args, files[i], out), scratch);
      ++runs;
      CHECK_MESSAGE(!r.timed_out, "no result within the timeout");
      CHECK_MESSAGE(r.signal == 0, "killed by signal " << r.signal << "; stderr: " << r.err);
      CHECK_MESSAGE(r.code != 0, "exit 0 on a malformed archive");
      CHECK_MESSAGE(r.code != 2, "exit 2 is bad usage, not bad input: " << r.err);
      CHECK_MESSAGE(count_lines(r.err) == 1, "stderr is not exactly one line: " << r.err);
      CHECK_MESSAGE(r.err.rfind(prefix, 0) == 0, "stderr does not start with the tool name: " << r.err);
      // The line carries check_archive's first message (after "tool: path: ").
      const std::string& first = cases[i].expected;
      const std::string& where = inv.message_on_stdout ? r.out : r.err;
      CHECK_MESSAGE(where.find(first) != std::string::npos,
                    "the output does not carry the check message \"" << first << "\": " << where);
      CHECK_MESSAGE(!fs::exists(out), "an output was left behind");
      CHECK_MESSAGE(!fs::exists(fs::path(out).replace_extension(".json")), "a geometry JSON was left behind");
    }
    for (const auto& e : fs::directory_iterator(scratch)) {
      const std::string name = e.path().filename().string();
      CHECK_MESSAGE(name.find(".tmp-") == std::string::npos, "temporary left behind: " << name);
    }
  }
  for (const auto& s : skipped) MESSAGE("skipped: " << s);
  MESSAGE(runs << " hostile runs over " << tested_invocations << " invocations, " << cases.size()
               << " malformed archives");
  CHECK(tested_invocations >= 1);
}

TEST_CASE("hostile input: apps given a directory, a missing file, /dev/null or a FIFO fail with one line") {
  const fs::path scratch = cact::test::scratch_dir("hostile-paths");
  const fs::path apps = cact::test::binary_dir() / "apps";
  for (const char* app : {"cact-inspect", "cact-run", "cact-slice", "cact-quant"}) {
    const fs::path exe = apps / app;
    if (!fs::exists(exe) || placeholder(exe, scratch)) continue;
    const fs::path fifo = scratch / "fifo.cact";  // opening must not wait for a writer
    if (!fs::exists(fifo)) REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
    for (const fs::path& in : {scratch, scratch / "missing.cact", fs::path("/dev/null"), fifo}) {
      CAPTURE(app);
      CAPTURE(in.string());
      std::vector<std::string> args = {in.string()};
      if (std::string(app) == "cact-slice") args = {in.string(), (scratch / "o.cact").string(), "--layers", "2"};
      const Result r = run(exe, args, scratch);
      CHECK(!r.timed_out);
      CHECK(r.signal == 0);
      CHECK(r.code != 0);
      CHECK_MESSAGE(count_lines(r.err) == 1, r.err);
    }
  }
}

namespace {

std::string text_of(const Bytes& b) { return std::string(b.begin(), b.end()); }
Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }

// Replace the first `from` in `s` (which must occur) by `to`.
std::string replace_first(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "no " << from);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("hostile input: cact-build checkpoint refuses malformed checkpoints, geometries and tokenizer sources") {
  const fs::path scratch = cact::test::scratch_dir("hostile-build");
  const fs::path apps = cact::test::binary_dir() / "apps";
  const fs::path build = apps / "cact-build", quant = apps / "cact-quant";
  if (!fs::exists(build) || !fs::exists(quant) || placeholder(quant, scratch)) {
    MESSAGE("skipped: cact-build / cact-quant not built");
    return;
  }
  // A valid float checkpoint + geometry: the tiny archive dequantised.
  const fs::path ckpt = scratch / "tiny.safetensors", geometry = scratch / "tiny.json";
  const fs::path tiny_path = cact::test::models_dir() / "license-tiny.cact";
  REQUIRE(run(quant, {"dequantize", tiny_path.string(), ckpt.string()}, scratch, 120.0).code == 0);
  REQUIRE(fs::exists(geometry));
  const fs::path out = scratch / "out.cact";
  const Result ok =
      run(build, {"checkpoint", ckpt.string(), geometry.string(), out.string(), "--tokenizer", tiny_path.string()},
          scratch, 120.0);
  if (ok.code != 0) {
    MESSAGE("skipped: cact-build checkpoint refused the valid checkpoint (CLI changed?): " << ok.err);
    return;
  }
  fs::remove(out);

  struct Input {
    std::string name;
    fs::path ckpt, geometry, tokenizer;
  };
  std::vector<Input> inputs;
  auto file = [&](const std::string& name, const Bytes& b) {
    const fs::path p = scratch / name;
    write_bytes(p, b);
    return p;
  };
  // Checkpoints.
  const Bytes st = read_bytes(ckpt);
  uint64_t header_len = 0;
  std::memcpy(&header_len, st.data(), 8);
  const std::string header = text_of(Bytes(st.begin() + 8, st.begin() + 8 + std::ptrdiff_t(header_len)));
  auto with_header = [&](const std::string& h) {
    REQUIRE(h.size() == header.size());
    Bytes b = st;
    std::memcpy(b.data() + 8, h.data(), h.size());
    return b;
  };
  auto ckpt_case = [&](const std::string& name, const Bytes& b) {
    inputs.push_back(
        {"checkpoint " + name, file("ckpt-" + std::to_string(inputs.size()) + ".safetensors", b), geometry, tiny_path});
  };
  ckpt_case("empty", {});
  ckpt_case("truncated", Bytes(st.begin(), st.begin() + std::ptrdiff_t(st.size() / 2)));
  {
    Bytes b = st;
    const uint64_t huge = uint64_t(1) << 63;
    std::memcpy(b.data(), &huge, 8);
    ckpt_case("header length 2^63", b);
    const uint64_t past = st.size();
    std::memcpy(b.data(), &past, 8);
    ckpt_case("header length past the end", b);
  }
  ckpt_case("dtype F99", with_header(replace_first(header, "\"F32\"", "\"F99\"")));
  ckpt_case("header not an object", with_header(replace_first(header, "{", "[")));
  ckpt_case("unknown tensor key", with_header(replace_first(header, "\"shape\"", "\"shapE\"")));
  {
    Bytes b = st;
    b.insert(b.end(), 16, 0xAB);
    ckpt_case("trailing bytes", b);
  }
  ckpt_case("an archive instead", tiny());
  // Geometries.
  const std::string g = text_of(read_bytes(geometry));
  auto geometry_case = [&](const std::string& name, const std::string& text) {
    inputs.push_back({"geometry " + name, ckpt,
                      file("geometry-" + std::to_string(inputs.size()) + ".json", bytes_of(text)), tiny_path});
  };
  geometry_case("kv_bits 5", replace_first(g, "\"kv_bits\": 8", "\"kv_bits\": 5"));
  geometry_case("unknown key", replace_first(g, "{", "{\n  \"colour\": 1,"));
  geometry_case("missing key", replace_first(g, "\"kv_window\": 0,", ""));
  geometry_case("not JSON", "hello\n");
  geometry_case("empty", "");
  geometry_case(
      "d_model differs from the checkpoint",
      replace_first(replace_first(g, "\"d_model\": 128", "\"d_model\": 256"), "\"hada_n\": 128", "\"hada_n\": 256"));
  // Tokenizer sources: malformed archives, a broken SentencePiece model, text.
  size_t picked = 0;
  for (const Case& c : all_cases()) {
    if (c.name.rfind("tokenizer", 0) == 0 || c.name == "tag Needle 2" || c.name == "truncated to 593616 bytes" ||
        c.name == "record offset + nbytes wraps u64") {
      inputs.push_back(
          {"tokenizer from " + c.name, ckpt, geometry, file("tok-" + std::to_string(picked++) + ".cact", c.bytes)});
    }
  }
  const Bytes model = read_bytes(cact::test::models_dir() / "tok.model");
  inputs.push_back({"tokenizer: truncated .model", ckpt, geometry,
                    file("tok-half.model", Bytes(model.begin(), model.begin() + std::ptrdiff_t(model.size() / 2)))});
  inputs.push_back({"tokenizer: text", ckpt, geometry, file("tok.txt", bytes_of("not a tokenizer\n"))});
  inputs.push_back({"tokenizer: missing", ckpt, geometry, scratch / "missing.model"});
  REQUIRE(inputs.size() >= 25);

  for (const Input& in : inputs) {
    CAPTURE(in.name);
    const Result r =
        run(build,
            {"checkpoint", in.ckpt.string(), in.geometry.string(), out.string(), "--tokenizer", in.tokenizer.string()},
            scratch);
    CHECK_MESSAGE(!r.timed_out, "no result within the timeout");
    CHECK_MESSAGE(r.signal == 0, "killed by signal " << r.signal << "; stderr: " << r.err);
    CHECK_MESSAGE(r.code == 1, "exit " << r.code << "; stderr: " << r.err);
    CHECK_MESSAGE(count_lines(r.err) == 1, "stderr is not exactly one line: " << r.err);
    CHECK_MESSAGE(r.err.rfind("cact-build: ", 0) == 0, r.err);
    CHECK_MESSAGE(!fs::exists(out), "an output was left behind");
  }
  for (const auto& e : fs::directory_iterator(scratch)) {
    CHECK_MESSAGE(e.path().filename().string().find(".tmp-") == std::string::npos, "temporary left: " << e.path());
  }
  MESSAGE(inputs.size() << " malformed cact-build inputs");
}
