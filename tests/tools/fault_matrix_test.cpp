// The fault matrix (docs/RELIABILITY.md "Faults"): every writing tool against
// every way its output can go wrong. For each writer x fault the exit code,
// the message, the inputs (byte-identical afterwards), the old target (kept)
// and the temporaries (none left, except after SIGKILL, which cannot be
// caught) are asserted.
//
// Writers: cact-build synth / checkpoint, cact-quant requantize / dequantize,
// cact-slice, cact-run --dump-golden. Faults: the output is the input (same
// path, a symlink, a hard link), a device node, a FIFO, in a missing or a
// read-only directory, on a full disk (a small tmpfs; root only), and the
// process gets SIGINT, SIGTERM or SIGKILL while its temporary exists.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/run_app.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;
using cact::test::slurp;

namespace {

const std::string kOld = "old target\n";

// A writer's command line: {archive}, {ckpt}, {geom} are the shared inputs,
// {out} the output; `primary` is the input the same-file faults aim at.
struct Writer {
  std::string name;
  std::string tool;
  std::vector<std::string> args;
  std::string primary = "{archive}";
  std::string out_ext = ".cact";
};

const std::vector<Writer> kWriters = {
    // vocab 1024: the tokenizer copied from the tiny archive has 1024 pieces.
    {"synth",
     "cact-build",
     {"synth", "{out}", "--preset", "micro", "--set", "vocab=1024", "--tokenizer-from", "{archive}"}},
    {"checkpoint", "cact-build", {"checkpoint", "{ckpt}", "{geom}", "{out}", "--tokenizer", "{archive}"}, "{ckpt}"},
    {"requantize", "cact-quant", {"requantize", "{archive}", "{out}", "--bits", "default=4"}},
    {"dequantize", "cact-quant", {"dequantize", "{archive}", "{out}"}, "{archive}", ".safetensors"},
    {"slice", "cact-slice", {"{archive}", "{out}", "--layers", "2"}},
    {"golden", "cact-run", {"{archive}", "-p", "hello", "--dump-golden", "{out}"}, "{archive}", ".json"},
};

struct Inputs {
  fs::path archive, ckpt, geom;
  std::vector<fs::path> all() const { return {archive, ckpt, geom}; }
};

std::vector<std::string> expand(const Writer& w, const Inputs& in, const fs::path& out) {
  std::vector<std::string> v;
  for (const std::string& a : w.args) {
    v.push_back(a == "{archive}" ? in.archive.string()
                : a == "{ckpt}"  ? in.ckpt.string()
                : a == "{geom}"  ? in.geom.string()
                : a == "{out}"   ? out.string()
                                 : a);
  }
  return v;
}

fs::path primary_of(const Writer& w, const Inputs& in) { return w.primary == "{ckpt}" ? in.ckpt : in.archive; }

struct Outcome {
  bool timed_out = false, signaled = false, signal_sent = false;
  int code = -1;  // exit code, or the signal when signaled
  std::string err;
  size_t err_lines() const {
    size_t n = 0;
    for (char c : err) n += c == '\n';
    return n;
  }
};

struct RunOptions {
  bool as_nobody = false;  // drop to uid/gid 65534 (a read-only directory binds root too little)
  int signal = 0;          // sent as soon as a temporary appears in `watch`
  fs::path watch;
  double timeout_s = 120;
};

// fork/exec with stdin/stdout on /dev/null and stderr to a file; optionally a
// signal the moment a "*.tmp-*" file is created in `watch` (inotify, set up
// before the fork so the creation cannot be missed).
Outcome run_writer(const std::string& tool, const std::vector<std::string>& args, const fs::path& scratch,
                   const RunOptions& opt = {}) {
  const fs::path exe = cact::test::binary_dir() / "apps" / tool;
  const fs::path err_file = scratch / "stderr.txt";
  int watch_fd = -1;
  if (opt.signal != 0) {
    watch_fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    REQUIRE(watch_fd >= 0);
    REQUIRE(::inotify_add_watch(watch_fd, opt.watch.c_str(), IN_CREATE) >= 0);
  }
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int in_fd = ::open("/dev/null", O_RDONLY);
    const int out_fd = ::open("/dev/null", O_WRONLY);
    const int err_fd = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (in_fd < 0 || out_fd < 0 || err_fd < 0) ::_exit(126);
    ::dup2(in_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    // As from an interactive shell: a background job's ignored SIGINT would be kept ignored.
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
    if (opt.as_nobody && (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(125);
    std::vector<std::string> copy = args;
    std::vector<char*> argv;
    std::string name = exe.string();
    argv.push_back(name.data());
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  Outcome r;
  int status = 0;
  for (;;) {
    if (watch_fd >= 0 && !r.signal_sent) {
      pollfd p{watch_fd, POLLIN, 0};
      if (::poll(&p, 1, 1) > 0) {
        alignas(inotify_event) char buf[4096];
        const ssize_t n = ::read(watch_fd, buf, sizeof buf);
        for (ssize_t at = 0; at < n;) {
          const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
          if (e->len > 0 && std::string(e->name).find(".tmp-") != std::string::npos && !r.signal_sent) {
            ::kill(pid, opt.signal);
            r.signal_sent = true;
          }
          at += ssize_t(sizeof(inotify_event) + e->len);
        }
      }
    } else {
      ::usleep(2000);
    }
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    REQUIRE(done >= 0);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() - start > std::chrono::duration<double>(opt.timeout_s)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
  }
  if (watch_fd >= 0) ::close(watch_fd);
  r.signaled = WIFSIGNALED(status);
  r.code = r.signaled ? WTERMSIG(status) : WEXITSTATUS(status);
  r.err = slurp(err_file);
  fs::remove(err_file);
  return r;
}

std::vector<fs::path> temporaries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().find(".tmp-") != std::string::npos) out.push_back(e.path());
  }
  return out;
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

// What every failed run must show: exit 1, one line "tool: ..." carrying
// `needle`, the inputs byte-identical, no temporary in `dirs`.
struct Expect {
  const Writer& w;
  const Inputs& in;
  const std::vector<std::string>& digests;  // the inputs' bytes before
};

void check_inputs(const Expect& x) {
  const std::vector<fs::path> paths = x.in.all();
  for (size_t i = 0; i < paths.size(); ++i)
    CHECK_MESSAGE(slurp(paths[i]) == x.digests[i], "input changed: " << paths[i]);
}

void check_refused(const Expect& x, const Outcome& r, const std::string& needle, const std::vector<fs::path>& dirs) {
  CHECK_MESSAGE(!r.timed_out, "no result within the timeout");
  CHECK_MESSAGE(!r.signaled, "killed by signal " << r.code << ": " << r.err);
  CHECK_MESSAGE(r.code == 1, "exit " << r.code << ": " << r.err);
  CHECK_MESSAGE(r.err_lines() == 1, "stderr is not one line: " << r.err);
  CHECK_MESSAGE(r.err.rfind(x.w.tool + ": ", 0) == 0, r.err);
  CHECK_MESSAGE(r.err.find(needle) != std::string::npos, "no \"" << needle << "\" in: " << r.err);
  check_inputs(x);
  for (const fs::path& d : dirs) CHECK_MESSAGE(temporaries(d).empty(), "temporary left in " << d);
}

bool is_root() { return ::geteuid() == 0; }

}  // namespace

TEST_CASE("fault matrix: every writer x every output fault") {
  const fs::path apps = cact::test::binary_dir() / "apps";
  const fs::path base = cact::test::scratch_dir("fault-matrix");
  fs::permissions(base, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                            fs::perms::others_exec);
  const fs::path in_dir = base / "inputs";
  fs::create_directories(in_dir);
  Inputs in{in_dir / "tiny.cact", in_dir / "tiny.safetensors", in_dir / "tiny.json"};
  fs::copy_file(cact::test::models_dir() / "license-tiny.cact", in.archive);
  // The checkpoint inputs: the tiny archive dequantised (a float safetensors + its geometry).
  if (!fs::exists(apps / "cact-quant")) {
    MESSAGE("skipped: cact-quant not built");
    return;
  }
  REQUIRE(run_writer("cact-quant", {"dequantize", in.archive.string(), in.ckpt.string()}, base).code == 0);
  REQUIRE(fs::exists(in.geom));
  std::vector<std::string> digests;
  for (const fs::path& p : in.all()) digests.push_back(slurp(p));

  size_t runs = 0, caught_signals = 0;
  std::vector<std::string> skipped;
  for (const Writer& w : kWriters) {
    if (!fs::exists(apps / w.tool)) {
      skipped.push_back(w.name + " (not built)");
      continue;
    }
    const Expect x{w, in, digests};
    const fs::path dir = base / w.name;
    fs::create_directories(dir);
    const fs::path out = dir / ("out" + w.out_ext);
    // The invocation must work, or it tests nothing (the CLI may have changed).
    const Outcome ok = run_writer(w.tool, expand(w, in, out), dir);
    if (ok.code != 0 || ok.signaled || !fs::exists(out)) {
      skipped.push_back(w.name + " (the valid invocation failed: " + ok.err + ")");
      continue;
    }
    const std::string complete = slurp(out);  // the writers are deterministic
    fs::remove(out);
    fs::remove(fs::path(out).replace_extension(".json"));
    CAPTURE(w.name);

    {  // The output is the input: same path, a symlink, a hard link.
      const fs::path primary = primary_of(w, in);
      const fs::path link = in_dir / "link", hard = in_dir / "hard";
      fs::remove(link);
      fs::remove(hard);
      fs::create_symlink(primary, link);
      fs::create_hard_link(primary, hard);
      for (const fs::path& target : {primary, link, hard}) {
        CAPTURE(target.string());
        check_refused(x, run_writer(w.tool, expand(w, in, target), dir), "refusing to overwrite", {in_dir, dir});
        ++runs;
      }
      fs::remove(link);
      fs::remove(hard);
    }
    {  // A device node: refused, never renamed over (as root that would replace it).
      fs::path node = "/dev/null";
      if (is_root()) {
        node = dir / "null-device";
        REQUIRE(::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
      }
      CAPTURE(node.string());
      check_refused(x, run_writer(w.tool, expand(w, in, node), dir), "character device", {in_dir, dir});
      struct stat st {};
      CHECK((::stat(node.c_str(), &st) == 0 && S_ISCHR(st.st_mode)));
      if (is_root()) fs::remove(node);
      ++runs;
    }
    {  // A FIFO: refused without blocking, still a FIFO.
      const fs::path fifo = dir / "out.fifo";
      REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
      RunOptions quick;
      quick.timeout_s = 60;
      check_refused(x, run_writer(w.tool, expand(w, in, fifo), dir, quick), "FIFO", {in_dir, dir});
      CHECK(fs::is_fifo(fifo));
      fs::remove(fifo);
      ++runs;
    }
    {  // A missing directory: the message names the path.
      const fs::path missing = dir / "missing" / ("out" + w.out_ext);
      const Outcome r = run_writer(w.tool, expand(w, in, missing), dir);
      check_refused(x, r, "No such file or directory", {in_dir, dir});
      CHECK_MESSAGE(r.err.find(missing.string()) != std::string::npos, r.err);
      CHECK(!fs::exists(dir / "missing"));
      ++runs;
    }
    {  // A read-only directory (root ignores permissions: the writer runs as nobody then).
      const fs::path ro = dir / "ro";
      fs::create_directories(ro);
      fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                              fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
      RunOptions nobody;
      nobody.as_nobody = is_root();
      const bool reachable = !is_root() || cact::test::nobody_can_reach({in_dir, dir});
      const Outcome r =
          reachable ? run_writer(w.tool, expand(w, in, ro / ("out" + w.out_ext)), dir, nobody) : Outcome{};
      if (!reachable) {
        skipped.push_back(w.name + " read-only directory (uid 65534 cannot reach the build tree)");
      } else if (r.code == 125) {
        skipped.push_back(w.name + " read-only directory (cannot drop to uid 65534)");
      } else {
        check_refused(x, r, "Permission denied", {in_dir, dir});
        CHECK(fs::is_empty(ro));
      }
      fs::permissions(ro, fs::perms::owner_all);
      ++runs;
    }
    {  // A full disk: a tmpfs filled up to its last page, with an old target on it.
      const fs::path full = dir / "full";
      fs::create_directories(full);
      if (!is_root() || ::mount("tmpfs", full.c_str(), "tmpfs", 0, "size=256k") != 0) {
        skipped.push_back(w.name + " disk full (mounting a tmpfs needs root)");
      } else {
        const fs::path target = full / ("out" + w.out_ext);
        write_text(target, kOld);
        {
          std::ofstream filler(full / "filler", std::ios::binary);
          const std::string block(4096, 'x');
          while (filler.write(block.data(), std::streamsize(block.size())) && filler.flush()) {
          }
        }
        const Outcome r = run_writer(w.tool, expand(w, in, target), dir);
        check_refused(x, r, "No space left on device", {in_dir, dir, full});
        CHECK(slurp(target) == kOld);
        ::umount(full.c_str());
        ++runs;
      }
    }
    // Signals while the temporary exists. A writer can finish before the
    // signal lands (its temporary lives a few milliseconds): then it is tried
    // again, and reported when it was never caught.
    for (const int sig : {SIGINT, SIGTERM, SIGKILL}) {
      CAPTURE(sig);
      const fs::path target = dir / ("out" + w.out_ext);
      bool caught = false;
      for (int attempt = 0; attempt < 5 && !caught; ++attempt) {
        write_text(target, kOld);
        RunOptions on_temp;
        on_temp.signal = sig;
        on_temp.watch = dir;
        const Outcome r = run_writer(w.tool, expand(w, in, target), dir, on_temp);
        ++runs;
        REQUIRE(!r.timed_out);
        if (!r.signal_sent || (!r.signaled && r.code == 0)) {
          for (const fs::path& t : temporaries(dir)) fs::remove(t);
          continue;  // finished first: try again
        }
        caught = true;
        ++caught_signals;
        CAPTURE(r.code);
        CAPTURE(r.err);
        check_inputs(x);
        // Never a partial target: the old one, or (the signal landed just
        // after the rename) the complete new one.
        const std::string now = slurp(target);
        CHECK((now == kOld || now == complete));
        if (sig == SIGKILL) {
          CHECK((r.signaled && r.code == SIGKILL));
          // SIGKILL's leftover, documented: one per output file at most.
          CHECK(temporaries(dir).size() <= (w.name == "dequantize" ? 2u : 1u));
          for (const fs::path& t : temporaries(dir)) fs::remove(t);
        } else {
          CHECK_MESSAGE(!r.signaled, "died of signal " << r.code << " instead of exiting");
          CHECK(r.code == 128 + sig);
          CHECK(temporaries(dir).empty());
        }
      }
      if (!caught) skipped.push_back(w.name + " signal " + std::to_string(sig) + " (the write always finished first)");
      fs::remove(target);
      fs::remove(fs::path(target).replace_extension(".json"));
    }
  }
  for (const auto& s : skipped) MESSAGE("skipped: " << s);
  MESSAGE(runs << " faulted runs, " << caught_signals << " signals caught mid-write");
  CHECK(runs > 0);
}
