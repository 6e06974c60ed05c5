// bench_quantize: peak memory and speed of `cact-build checkpoint` on the
// needle3 geometry from F32 safetensors, and of cact-quant's commands on the
// same geometry.
//
//   bench_quantize [--threads N] [--reps R] [--work DIR]
//
// DIR (default /tmp/cact-bench-quantize, reused by later runs) receives the
// synthetic needle3 archive, two F32 checkpoints of it and the archives built
// from them:
//   export  cact-quant dequantize's export: every CQ group is on its grid, so
//           the build snaps it (docs/INTERCHANGE.md "Round trips");
//   float   the export with every CQ matrix replaced by random floats, as a
//           trained checkpoint is (no group snaps): the figure to compare with
//           other quantisers.
// Each checkpoint is built R times (default 3) by the real cact-build of this
// build tree with --threads N (default 1), a freshly exec'd child; printed are
// the best wall time, its CPU time, ns per weight (wall and CPU over every
// weight of the checkpoint) and the child's peak RSS (ru_maxrss, VmHWM).
// Then, the same way, cact-quant on the synthetic archive: requantize to CQ3
// (--requantize), dequantize to F32 safetensors, and report --reference
// against the float checkpoint (ns per weight over the archive's weights).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "cact/checkpoint.h"
#include "cact/model.h"
#include "cact/safetensors.h"
#include "cact/synth.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char kUsage[] = "usage: bench_quantize [--threads N] [--reps R] [--work DIR]\n";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "bench_quantize: %s\n%s", message.c_str(), kUsage);
  return 2;
}

// The export with the CQ matrices replaced by deterministic random floats
// (a sum of four uniforms: roughly normal, unit variance).
void write_float_checkpoint(const cact::Model& model, const fs::path& exported, const fs::path& out) {
  const auto source = cact::safetensors::File::open(exported);
  std::vector<cact::safetensors::TensorSpec> specs;
  for (const auto& t : source.tensors()) specs.push_back({t.name, t.dtype, t.shape});
  uint32_t x = 12345;
  cact::safetensors::write(out, specs, source.metadata(), [&](size_t i, std::vector<uint8_t>& bytes) {
    const auto& t = source.tensors()[i];
    bytes.assign(t.data.begin(), t.data.end());
    if (model.record(i).dtype != cact::Dtype::CQ) return;
    for (size_t k = 0; k < t.elements(); ++k) {
      float sum = 0.0f;
      for (int j = 0; j < 4; ++j) {
        x = x * 1664525u + 1013904223u;
        sum += float(x >> 8) / float(1u << 24) - 0.5f;
      }
      const float v = sum * 1.7320508f * 0.02f;
      std::memcpy(bytes.data() + 4 * k, &v, 4);
    }
  });
}

struct Run {
  double wall = 0, cpu = 0;
  long max_rss_kb = 0;
  bool ok = false;
};

Run run_build(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  Run r;
  const auto t0 = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);  // cact-quant report's table is not ours to print
    if (null >= 0) {
      dup2(null, 1);
      close(null);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid) return r;
  r.wall = std::chrono::duration<double>(Clock::now() - t0).count();
  r.cpu = double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
          double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  r.max_rss_kb = usage.ru_maxrss;
  r.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return r;
}

// The fastest of `reps` runs, with the highest peak RSS of all of them; ok false if one failed.
Run best_of(int reps, const std::vector<std::string>& args) {
  Run best;
  long peak = 0;
  for (int r = 0; r < reps; ++r) {
    const Run run = run_build(args);
    if (!run.ok) return run;
    if (!best.ok || run.wall < best.wall) best = run;
    peak = std::max(peak, run.max_rss_kb);
  }
  best.max_rss_kb = peak;
  return best;
}

// The columns both tables end in: wall s, ns per weight (wall, CPU), peak RSS MiB.
void print_figures(uint64_t weights, const Run& run) {
  std::printf("%9.2f %8.1f %8.1f %12.1f\n", run.wall, run.wall * 1e9 / double(weights), run.cpu * 1e9 / double(weights),
              double(run.max_rss_kb) / 1024.0);
}

}  // namespace

int main(int argc, char** argv) {
  fs::path work = "/tmp/cact-bench-quantize";
  unsigned threads = 1;
  int reps = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) return usage_error(arg + ": unknown option, or missing its value");
    const std::string value = argv[++i];
    if (arg == "--threads") {
      threads = unsigned(std::atoi(value.c_str()));
      if (threads == 0) return usage_error("--threads needs a number >= 1");
    } else if (arg == "--reps") {
      reps = std::atoi(value.c_str());
      if (reps < 1) return usage_error("--reps needs a number >= 1");
    } else if (arg == "--work") {
      work = value;
    } else {
      return usage_error("unknown option " + arg);
    }
  }
  const fs::path cact_build = fs::path(CACT_BINARY_DIR) / "apps" / "cact-build";
  const fs::path cact_quant = fs::path(CACT_BINARY_DIR) / "apps" / "cact-quant";
  for (const fs::path& tool : {cact_build, cact_quant}) {
    if (!fs::exists(tool)) {
      std::fprintf(stderr, "bench_quantize: %s is missing: build the %s target\n", tool.c_str(),
                   tool.filename().c_str());
      return 1;
    }
  }
  try {
    fs::create_directories(work);
    const fs::path archive = work / "needle3.cact", geometry = work / "needle3.json";
    const fs::path exported = work / "needle3.export.safetensors", floats = work / "needle3.float.safetensors";
    if (!fs::exists(archive)) cact::write_synth_archive(archive, cact::synth_preset("needle3"));
    const cact::Model model = cact::Model::open(archive);
    if (!fs::exists(exported) || !fs::exists(geometry)) cact::export_checkpoint(model, exported, geometry, {});
    if (!fs::exists(floats)) write_float_checkpoint(model, exported, floats);

    std::printf("cact-build checkpoint, needle3 geometry, --threads %u, best of %d\n", threads, reps);
    std::printf("%-8s %10s %10s %9s %8s %8s %12s\n", "input", "weights", "F32 MB", "wall s", "ns/w", "CPU ns/w",
                "peak RSS MiB");
    for (const auto& [name, input] : {std::pair{"export", exported}, std::pair{"float", floats}}) {
      uint64_t weights = 0;
      const auto checkpoint = cact::safetensors::File::open(input);
      for (const auto& t : checkpoint.tensors()) weights += t.elements();
      const fs::path out = work / (std::string(name) + ".cact");
      const Run best =
          best_of(reps, {cact_build.string(), "checkpoint", input.string(), geometry.string(), out.string(),
                         "--tokenizer", archive.string(), "--threads", std::to_string(threads), "-q"});
      if (!best.ok) {
        std::fprintf(stderr, "bench_quantize: cact-build checkpoint %s failed\n", input.c_str());
        return 1;
      }
      std::printf("%-8s %10llu %10.1f ", name, (unsigned long long)weights, double(fs::file_size(input)) / 1e6);
      print_figures(weights, best);
    }

    uint64_t weights = 0;
    for (const cact::Record& r : model.records()) weights += r.dtype == cact::Dtype::RAW ? 0 : r.elements();
    const std::string t = std::to_string(threads), in = archive.string();
    const fs::path requantized = work / "requantized.cact", dequantized = work / "dequantized.safetensors";
    std::printf("\ncact-quant on the needle3 archive (%llu weights), --threads %u, best of %d\n",
                (unsigned long long)weights, threads, reps);
    std::printf("%-22s %9s %8s %8s %12s\n", "command", "wall s", "ns/w", "CPU ns/w", "peak RSS MiB");
    const std::pair<const char*, std::vector<std::string>> commands[] = {
        {"requantize (to CQ3)",
         {"requantize", in, requantized.string(), "--bits", "default=3", "--requantize", "--threads", t, "-q"}},
        {"dequantize (to F32)", {"dequantize", in, dequantized.string(), "--threads", t, "-q"}},
        {"report --reference", {"report", in, "--reference", floats.string(), "--threads", t, "-q"}},
    };
    for (const auto& [name, args] : commands) {
      std::vector<std::string> command{cact_quant.string()};
      command.insert(command.end(), args.begin(), args.end());
      const Run best = best_of(reps, command);
      if (!best.ok) {
        std::fprintf(stderr, "bench_quantize: cact-quant %s failed\n", name);
        return 1;
      }
      std::printf("%-22s ", name);
      print_figures(weights, best);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_quantize: %s\n", e.what());
    return 1;
  }
  return 0;
}
