// bench_engine: speed and memory of the engine on the synthetic needle3
// archive (and its --layers 8 rung), SIMD kernel table vs scalar.
//
//   bench_engine [--quick] [--slice PATH] [ARCHIVE]
//   bench_engine --rates [ARCHIVE]      (one JSON line, for bench/compare_llama.sh)
//
// ARCHIVE defaults to /tmp/needle3.cact, which is written (synth preset
// needle3) if missing; an ARCHIVE given on the command line must exist. The
// 8-layer rung is read from / written to --slice PATH; without --slice it is
// /tmp/needle3.l8.cact for the default archive, and a temporary file (removed
// at exit) for any other. Nothing else is written except a temporary stripped
// copy of cact-run, also removed. Prints, per archive and kernel table: decode
// tok/s at positions 16, 1024 and 8000 (the cache filled by a prefill first,
// then 64 timed steps; 8000 not with --quick: filling 8000 positions with the
// scalar table takes ~10 minutes per archive), and how much of the archive
// mapping is resident and in 2 MiB pages after decoding (bench/page_state.h),
// prefill tok/s of a 512-token prompt with 1 and 2 threads (each figure the best
// of 3 runs on the SIMD table, of 1 on the scalar one); then peak RSS
// (VmHWM of a freshly exec'd `bench_engine --rss-child ARCHIVE` holding an
// 8k-context session filled to 8000 positions: none of this process's pages
// count), time from spawning the real cact-run to the first byte on its
// stdout, and the stripped size of cact-run.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cact/engine.h"
#include "cact/model.h"
#include "cact/slice.h"
#include "cact/synth.h"
#include "page_state.h"
#include "token_ids.h"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

using cact::bench::ids_for;

// tok/s of `steps` decode steps after filling the cache to `fill` positions;
// the best of `reps` fills (the shared VM's wall clock varies by ±5 % from run to run).
double decode_rate(const cact::Engine& e, uint32_t fill, uint32_t threads, uint32_t reps, uint32_t steps = 64) {
  cact::SessionOptions so;
  so.context = std::min<uint32_t>(e.header().max_seq_len, fill + steps + 1);
  so.threads = threads;
  cact::Session s(e, so);
  const std::vector<int32_t> ids = ids_for(e.header().vocab, fill, 11);
  const std::vector<int32_t> next = ids_for(e.header().vocab, steps, 5);
  double best = 0.0;
  for (uint32_t r = 0; r < reps; ++r) {
    s.reset();
    s.prefill(ids);
    const auto t0 = Clock::now();
    for (uint32_t i = 0; i < steps; ++i) s.step(next[i]);
    best = std::max(best, double(steps) / since(t0));
  }
  return best;
}

// tok/s of a prefill of n tokens, the best of `reps`.
double prefill_rate(const cact::Engine& e, uint32_t n, uint32_t threads, uint32_t reps) {
  cact::SessionOptions so;
  so.context = n + 1;
  so.threads = threads;
  cact::Session s(e, so);
  const std::vector<int32_t> ids = ids_for(e.header().vocab, n, 3);
  s.prefill(std::span(ids).first(16));  // warm the mapping
  double best = 0.0;
  for (uint32_t r = 0; r < reps; ++r) {
    s.reset();
    const auto t0 = Clock::now();
    s.prefill(ids);
    best = std::max(best, double(n) / since(t0));
  }
  return best;
}

long vm_hwm_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

// --rss-child: open, session of 8192 positions, prefill 8000 tokens; print "VmHWM_kB state_bytes".
int rss_child(const char* archive) {
  const cact::Model model = cact::Model::open(archive);
  const cact::Engine e(model);
  cact::SessionOptions so;
  so.context = std::min<uint32_t>(8192, e.header().max_seq_len);
  cact::Session s(e, so);
  s.prefill(ids_for(e.header().vocab, std::min<uint32_t>(8000, so.context - 1), 9));
  s.step(5);
  std::printf("%ld %zu\n", vm_hwm_kb(), s.state_bytes());
  return 0;
}

// Peak RSS of a fresh process: this executable re-exec'd in --rss-child mode
// (exec gives it a new address space, so nothing of this process counts).
void peak_rss(const std::filesystem::path& archive) {
  int fd[2];
  if (pipe(fd) != 0) return;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    close(fd[1]);
    const char* argv[] = {"bench_engine", "--rss-child", archive.c_str(), nullptr};
    execv("/proc/self/exe", const_cast<char* const*>(argv));
    _exit(127);
  }
  close(fd[1]);
  char buf[128] = {};
  size_t got = 0;
  for (ssize_t n; got < sizeof buf - 1 && (n = read(fd[0], buf + got, sizeof buf - 1 - got)) > 0;) got += size_t(n);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  long hwm = 0;
  size_t state = 0;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && std::sscanf(buf, "%ld %zu", &hwm, &state) == 2) {
    std::printf(
        "  peak RSS at 8k context (8000 positions + 1 step, fresh process): %.1f MiB (VmHWM); state_bytes %.2f MiB\n",
        double(hwm) / 1024.0, double(state) / 1048576.0);
  } else {
    std::printf("  peak RSS: the --rss-child process failed\n");
  }
}

// Wall time from fork to the first byte cact-run writes to stdout (best of `reps`).
double first_token_ms(const std::string& exe, const std::filesystem::path& archive, bool scalar, int reps = 5) {
  double best = 1e9;
  for (int r = 0; r < reps; ++r) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    const auto t0 = Clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(fd[1], 1);
      close(fd[0]);
      close(fd[1]);
      const int null = open("/dev/null", O_WRONLY);  // its "confidence:" line is not ours to print
      if (null >= 0) dup2(null, 2);
      const char* argv[] = {exe.c_str(),
                            archive.c_str(),
                            "-p",
                            "hello",
                            "-n",
                            "4",
                            scalar ? "--scalar" : "--threads",
                            scalar ? nullptr : "0",
                            nullptr};
      execv(exe.c_str(), const_cast<char* const*>(argv));
      _exit(127);
    }
    close(fd[1]);
    char c;
    const ssize_t got = read(fd[0], &c, 1);
    const double t = since(t0) * 1e3;
    char sink[4096];
    while (read(fd[0], sink, sizeof sink) > 0) {
    }
    close(fd[0]);
    waitpid(pid, nullptr, 0);
    if (got == 1) best = std::min(best, t);
  }
  return best;
}

// --rates: one line of JSON with the figures bench/compare_llama.sh sets beside
// llama-bench's tg128 and pp512 (decode after a one-token prompt: llama-bench starts from an empty cache).
int print_rates(const std::filesystem::path& archive) {
  const cact::Model model = cact::Model::open(archive);
  const cact::Engine e(model);
  constexpr uint32_t kDecodeSteps = 128, kPrompt = 512;
  std::printf(
      "{\"table\": \"%s\", \"decode_1t\": %.1f, \"decode_2t\": %.1f, \"prefill512_1t\": %.1f, "
      "\"prefill512_2t\": %.1f}\n",
      e.kernels().name, decode_rate(e, 1, 1, 1, kDecodeSteps), decode_rate(e, 1, 2, 1, kDecodeSteps),
      prefill_rate(e, kPrompt, 1, 1), prefill_rate(e, kPrompt, 2, 1));
  return 0;
}

constexpr const char* kUsage =
    "usage: bench_engine [--quick] [--slice PATH] [ARCHIVE]\n"
    "       bench_engine --rates [ARCHIVE]\n"
    "  ARCHIVE       needle3-like archive (default /tmp/needle3.cact, synthesised if missing;\n"
    "                a given ARCHIVE must exist)\n"
    "  --slice PATH  the 8-layer rung, written if missing (default: /tmp/needle3.l8.cact for the\n"
    "                default archive, else a temporary file removed at exit)\n"
    "  --quick       skip decode at position 8000 (the full run takes ~30 minutes)\n"
    "  --rates       only decode (128 steps after a one-token prompt) and prefill 512 tokens,\n"
    "                1 and 2 threads, one run each, as one line of JSON (bench/compare_llama.sh)\n"
    "  -h, --help    this text\n";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "bench_engine: %s\n%s", message.c_str(), kUsage);
  return 2;
}

// A private directory for the files this run makes up (removed at exit).
struct ScratchDir {
  std::filesystem::path path;
  const std::filesystem::path& get() {
    if (path.empty()) {
      std::string tmpl = (std::filesystem::temp_directory_path() / "bench_engine.XXXXXX").string();
      if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("cannot create a temporary directory");
      path = tmpl;
    }
    return path;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--rss-child") == 0) return rss_child(argv[2]);
  const std::filesystem::path default_archive = "/tmp/needle3.cact";
  std::filesystem::path archive, slice;
  bool quick = false, rates = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--quick") {
      quick = true;
    } else if (arg == "--rates") {
      rates = true;
    } else if (arg == "--slice") {
      if (i + 1 >= argc) return usage_error("--slice needs a PATH");
      slice = argv[++i];
    } else if (arg.size() > 1 && arg[0] == '-') {
      return usage_error("unknown option " + arg);
    } else if (!archive.empty()) {
      return usage_error("more than one ARCHIVE (" + archive.string() + ", " + arg + ")");
    } else {
      archive = arg;
    }
  }
  const bool user_archive = !archive.empty();
  if (!user_archive) archive = default_archive;
  if (!std::filesystem::exists(archive)) {
    if (user_archive) {
      std::fprintf(stderr, "bench_engine: %s does not exist (write one with cact-build synth --preset needle3)\n",
                   archive.c_str());
      return 1;
    }
    std::printf("writing %s (synth preset needle3)\n", archive.c_str());
    cact::write_synth_archive(archive, cact::synth_preset("needle3"));
  }
  if (rates) return print_rates(archive);
  ScratchDir scratch;
  if (slice.empty())
    slice = user_archive ? scratch.get() / "rung8.cact" : std::filesystem::path("/tmp/needle3.l8.cact");
  {
    const cact::Model model = cact::Model::open(archive);
    if (!std::filesystem::exists(slice)) {
      const std::vector<uint32_t> blocks = cact::rung(model.header().num_layers, 8);
      const std::filesystem::path inputs[] = {archive};
      cact::write_slice(slice, model, cact::plan_slice(model, blocks), inputs);
    }
  }
  peak_rss(archive);

  for (const std::filesystem::path& path : {archive, slice}) {
    const cact::Model model = cact::Model::open(path);
    std::printf("%s: %u layers, d_model %u\n", path.c_str(), model.header().num_layers, model.header().d_model);
    for (const cact::kernels::KernelTable* kt : {&cact::kernels::best_kernels(), &cact::kernels::scalar_kernels()}) {
      cact::EngineOptions eo;
      eo.kernels = kt;
      const cact::Engine e(model, eo);
      // Best of 3 runs on the SIMD table; the scalar table (tens of seconds per run) once.
      const uint32_t reps = kt == &cact::kernels::scalar_kernels() ? 1 : 3;
      std::printf("  [%s] (best of %u)\n", kt->name, reps);
      for (uint32_t pos : {16u, 1024u, 8000u}) {
        if (pos == 8000 && quick) continue;
        const double d1 = decode_rate(e, pos, 1, reps);
        const double d2 = decode_rate(e, pos, 2, reps);
        std::printf("    decode at position %5u: %7.1f tok/s (1 thread) %7.1f tok/s (2 threads)\n", pos, d1, d2);
      }
      if (const PageState ps = page_state(model.bytes()); ps.known && kt != &cact::kernels::scalar_kernels()) {
        std::printf("    archive mapping after decode: %.1f MB resident, %.1f MB of it in 2 MiB pages\n",
                    double(ps.resident) / 1e6, double(ps.huge) / 1e6);
      }
      const double p1 = prefill_rate(e, 512, 1, reps);
      const double p2 = prefill_rate(e, 512, 2, reps);
      std::printf("    prefill 512 tokens:        %7.1f tok/s (1 thread) %7.1f tok/s (2 threads)\n", p1, p2);
    }
  }

  const std::string exe = std::string(CACT_BINARY_DIR) + "/apps/cact-run";
  if (std::filesystem::exists(exe)) {
    std::printf("cact-run: first byte on stdout after spawn (-p hello, best of 5): %.1f ms; scalar %.1f ms\n",
                first_token_ms(exe, archive, false), first_token_ms(exe, archive, true));
    const std::filesystem::path stripped = scratch.get() / "cact-run.stripped";
    if (std::system(("strip -o '" + stripped.string() + "' '" + exe + "'").c_str()) == 0) {
      std::printf("cact-run stripped: %ju bytes (%.3f MB)\n", std::uintmax_t(std::filesystem::file_size(stripped)),
                  double(std::filesystem::file_size(stripped)) / 1e6);
    }
  }
  return 0;
}
