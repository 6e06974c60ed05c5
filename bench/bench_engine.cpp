// bench_engine: speed and memory of the engine on the synthetic needle3
// archive (and its --layers 8 rung), SIMD kernel table vs scalar.
//
//   bench_engine [ARCHIVE] [--quick]
//
// Without ARCHIVE it uses /tmp/needle3.cact, writing it (synth preset needle3)
// if missing; the 8-layer rung is written next to it. Prints, per archive and
// kernel table: decode tok/s at positions 16, 1024 and 8000 (the cache filled
// by a prefill first, then 64 timed steps; 8000 only for the SIMD table unless
// the scalar one is fast enough), prefill tok/s of a 512-token prompt with 1
// and 2 threads; then peak RSS (VmHWM of a child process holding an 8k-context
// session filled to 8000 positions), time from spawning the real cact-run to
// the first byte on its stdout, and the stripped size of cact-run.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cact/engine.h"
#include "cact/model.h"
#include "cact/slice.h"
#include "cact/synth.h"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::vector<int32_t> ids_for(uint32_t vocab, size_t n, uint32_t seed) {
  std::vector<int32_t> ids;
  uint32_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    ids.push_back(int32_t(4 + (x >> 8) % (vocab - 4)));
  }
  return ids;
}

// tok/s of `steps` decode steps after filling the cache to `fill` positions.
double decode_rate(const cact::Engine& e, uint32_t fill, uint32_t threads, uint32_t steps = 64) {
  cact::SessionOptions so;
  so.context = std::min<uint32_t>(e.header().max_seq_len, fill + steps + 1);
  so.threads = threads;
  cact::Session s(e, so);
  const std::vector<int32_t> ids = ids_for(e.header().vocab, fill, 11);
  s.prefill(ids);
  const std::vector<int32_t> next = ids_for(e.header().vocab, steps, 5);
  const auto t0 = Clock::now();
  for (uint32_t i = 0; i < steps; ++i) s.step(next[i]);
  return double(steps) / since(t0);
}

double prefill_rate(const cact::Engine& e, uint32_t n, uint32_t threads) {
  cact::SessionOptions so;
  so.context = n + 1;
  so.threads = threads;
  cact::Session s(e, so);
  const std::vector<int32_t> ids = ids_for(e.header().vocab, n, 3);
  s.prefill(std::span(ids).first(16));  // warm the mapping
  s.reset();
  const auto t0 = Clock::now();
  s.prefill(ids);
  return double(n) / since(t0);
}

long vm_hwm_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

// In a child: open, session of 8192 positions, prefill 8000 tokens; report VmHWM and state_bytes.
void peak_rss(const std::filesystem::path& archive) {
  int fd[2];
  if (pipe(fd) != 0) return;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    const cact::Model model = cact::Model::open(archive);
    const cact::Engine e(model);
    cact::SessionOptions so;
    so.context = std::min<uint32_t>(8192, e.header().max_seq_len);
    cact::Session s(e, so);
    s.prefill(ids_for(e.header().vocab, 8000, 9));
    s.step(5);
    char buf[128];
    const int len = std::snprintf(buf, sizeof buf, "%ld %zu", vm_hwm_kb(), s.state_bytes());
    if (write(fd[1], buf, size_t(len)) != len) _exit(1);
    _exit(0);
  }
  close(fd[1]);
  char buf[128] = {};
  const ssize_t got = read(fd[0], buf, sizeof buf - 1);
  close(fd[0]);
  waitpid(pid, nullptr, 0);
  long hwm = 0;
  size_t state = 0;
  if (got > 0 && std::sscanf(buf, "%ld %zu", &hwm, &state) == 2) {
    std::printf("  peak RSS at 8k context (8000 positions + 1 step): %.1f MiB (VmHWM); state_bytes %.2f MiB\n",
                double(hwm) / 1024.0, double(state) / 1048576.0);
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
      const char* argv[] = {exe.c_str(), archive.c_str(), "-p", "hello", "-n", "4", scalar ? "--scalar" : "--threads", scalar ? nullptr : "0", nullptr};
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

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path archive = "/tmp/needle3.cact";
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else {
      archive = argv[i];
    }
  }
  if (!std::filesystem::exists(archive)) {
    std::printf("writing %s (synth preset needle3)\n", archive.c_str());
    cact::write_synth_archive(archive, cact::synth_preset("needle3"));
  }
  std::filesystem::path slice = archive;
  slice.replace_extension(".l8.cact");
  {
    const cact::Model model = cact::Model::open(archive);
    if (!std::filesystem::exists(slice)) {
      const std::vector<uint32_t> blocks = cact::rung(model.header().num_layers, 8);
      const std::filesystem::path inputs[] = {archive};
      cact::write_slice(slice, model, cact::plan_slice(model, blocks), inputs);
    }
  }
  peak_rss(archive);  // before any thread exists in this process

  for (const std::filesystem::path& path : {archive, slice}) {
    const cact::Model model = cact::Model::open(path);
    std::printf("%s: %u layers, d_model %u\n", path.c_str(), model.header().num_layers, model.header().d_model);
    for (const cact::kernels::KernelTable* kt : {&cact::kernels::best_kernels(), &cact::kernels::scalar_kernels()}) {
      cact::EngineOptions eo;
      eo.kernels = kt;
      const cact::Engine e(model, eo);
      const bool simd = kt != &cact::kernels::scalar_kernels();
      std::printf("  [%s]\n", kt->name);
      for (uint32_t pos : {16u, 1024u, 8000u}) {
        if (pos == 8000 && (!simd || quick)) continue;
        const double d1 = decode_rate(e, pos, 1);
        const double d2 = decode_rate(e, pos, 2);
        std::printf("    decode at position %5u: %7.1f tok/s (1 thread) %7.1f tok/s (2 threads)\n", pos, d1, d2);
      }
      const double p1 = prefill_rate(e, 512, 1);
      const double p2 = prefill_rate(e, 512, 2);
      std::printf("    prefill 512 tokens:        %7.1f tok/s (1 thread) %7.1f tok/s (2 threads)\n", p1, p2);
    }
  }

  const std::string exe = std::string(CACT_BINARY_DIR) + "/apps/cact-run";
  if (std::filesystem::exists(exe)) {
    std::printf("cact-run: first byte on stdout after spawn (-p hello, best of 5): %.1f ms; scalar %.1f ms\n",
                first_token_ms(exe, archive, false), first_token_ms(exe, archive, true));
    const std::string stripped = "/tmp/bench_engine_cact-run.stripped";
    std::filesystem::copy_file(exe, stripped, std::filesystem::copy_options::overwrite_existing);
    if (std::system(("strip " + stripped).c_str()) == 0) {
      std::printf("cact-run stripped: %ju bytes (%.3f MB)\n", std::uintmax_t(std::filesystem::file_size(stripped)),
                  double(std::filesystem::file_size(stripped)) / 1e6);
    }
    std::filesystem::remove(stripped);
  }
  return 0;
}
