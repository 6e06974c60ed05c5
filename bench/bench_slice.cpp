// bench_slice: how fast cact-slice cuts rungs out of a large archive.
//
//   bench_slice [ARCHIVE] [--reps N]
//
// Without ARCHIVE it writes the synthetic needle3 archive (581 tensors, the
// shipped geometry, ~35 MB) to a temporary file first. For several rungs it
// times, median of N runs: the plan; building the output bytes in memory
// (row selection + layout); the full archive check of those bytes; and the
// whole write_slice (build + check + write + fsync + rename), which is what the
// tool does after opening its input. MB/s is output bytes over time.
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cact/model.h"
#include "cact/slice.h"
#include "cact/synth.h"

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double median_seconds(int reps, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string archive;
  int reps = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (!a.empty() && a[0] != '-') {
      archive = a;
    } else {
      std::fprintf(stderr, "usage: bench_slice [ARCHIVE] [--reps N]\n");
      return 2;
    }
  }
  try {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("bench_slice-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    if (archive.empty()) {
      archive = (dir / "needle3.cact").string();
      const auto start = Clock::now();
      cact::write_synth_archive(archive, cact::synth_preset("needle3"));
      std::printf("synthetic needle3 written in %.2f s\n", std::chrono::duration<double>(Clock::now() - start).count());
    }
    const cact::Model model = cact::Model::open(archive);
    const uint32_t L = model.header().num_layers;
    std::printf("input: %s, %u layers, %zu tensors, %zu bytes; median of %d runs\n", archive.c_str(), L,
                model.records().size(), model.bytes().size(), reps);
    std::printf("%6s %12s %9s %9s %9s %9s %10s %10s\n", "layers", "out bytes", "plan ms", "bytes ms", "check ms",
                "write ms", "bytes MB/s", "write MB/s");
    std::vector<uint32_t> depths;
    for (uint32_t d : {2u, 4u, 8u, 12u, L}) {
      if (d >= 2 && d <= L && std::find(depths.begin(), depths.end(), d) == depths.end()) depths.push_back(d);
    }
    const std::filesystem::path out = dir / "out.cact";
    const std::filesystem::path inputs[] = {archive};
    for (uint32_t d : depths) {
      const std::vector<uint32_t> blocks = cact::rung(L, d);
      const double plan_s = median_seconds(reps, [&] { (void)cact::plan_slice(model, blocks); });
      const cact::SlicePlan plan = cact::plan_slice(model, blocks);
      std::vector<uint8_t> bytes;
      const double bytes_s = median_seconds(reps, [&] { bytes = cact::slice_bytes(model, plan); });
      const double check_s = median_seconds(reps, [&] {
        if (!cact::check_archive(bytes).empty()) throw std::runtime_error("sliced archive fails the check");
      });
      const double write_s = median_seconds(reps, [&] { cact::write_slice(out, model, plan, inputs); });
      const double mb = double(plan.output_bytes) / 1e6;
      std::printf("%6u %12llu %9.2f %9.2f %9.2f %9.2f %10.0f %10.0f\n", d, (unsigned long long)plan.output_bytes,
                  plan_s * 1e3, bytes_s * 1e3, check_s * 1e3, write_s * 1e3, mb / bytes_s, mb / write_s);
    }
    std::filesystem::remove_all(dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_slice: %s\n", e.what());
    return 1;
  }
  return 0;
}
