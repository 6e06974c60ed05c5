// How much of an archive opening and inspecting touches: wall time and page
// faults (pages of the mapping actually read) for Model::open + summary, and
// for the full digest table, on the synthetic needle3 archive.
//   build/release/bench/bench_inspect [archive]   (default: synthesises needle3 in /tmp)
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string_view>

#include "cact/inspect.h"
#include "cact/model.h"
#include "cact/synth.h"

namespace {
long faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt + u.ru_majflt;
}
double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

int main(int argc, char** argv) try {
  const char* usage =
      "usage: bench_inspect [ARCHIVE]  (default: /tmp/cact-bench-needle3.cact, synthesised if missing)\n";
  if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
    const bool help = argc == 2 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h");
    std::fputs(usage, help ? stdout : stderr);
    return help ? 0 : 2;
  }
  std::filesystem::path path = argc > 1 ? argv[1] : "/tmp/cact-bench-needle3.cact";
  if (argc <= 1 && !std::filesystem::exists(path)) cact::write_synth_archive(path, cact::synth_preset("needle3"));
  const double size_mb = double(std::filesystem::file_size(path)) / 1e6;
  long f0 = faults();
  double t0 = now_ms();
  const cact::Model model = cact::Model::open(path);
  const cact::ArchiveSummary summary = cact::summarize(model);
  const double open_ms = now_ms() - t0;
  const long open_faults = faults() - f0;
  f0 = faults();
  t0 = now_ms();
  const auto rows = cact::tensor_rows(model, true);
  const double digest_ms = now_ms() - t0;
  const long digest_faults = faults() - f0;
  std::printf("archive %s: %.2f MB, %zu tensors\n", path.c_str(), size_mb, summary.tensors);
  std::printf("open + check + summary: %8.2f ms, %6ld page faults (%.2f MB of 4 KiB pages)\n", open_ms, open_faults,
              double(open_faults) * 4096 / 1e6);
  std::printf("xxh64 of every blob:    %8.2f ms, %6ld page faults, %.0f MB/s\n", digest_ms, digest_faults,
              size_mb / (digest_ms / 1e3));
  return rows.size() == summary.tensors ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_inspect: %s\n", e.what());
  return 1;
}
