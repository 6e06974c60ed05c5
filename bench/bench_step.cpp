// Decode-step benchmark for instruction counts: one decode step of an archive
// between count_marker() calls, one thread, after a prefill of --fill tokens
// and two warm-up steps. bench/count_neon.sh --step ARCHIVE runs it under qemu
// and counts the step's instructions by function; wall-clock decode rates are
// bench_engine's.
//
//   bench_step [--fill N] ARCHIVE
//     --fill  tokens prefilled before the step (default 16; at most 65,536)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "cact/engine.h"
#include "cact/model.h"
#include "count_marker.h"
#include "token_ids.h"

namespace {

int usage() {
  std::fprintf(stderr, "usage: bench_step [--fill N] ARCHIVE\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t fill = 16;
  const char* archive = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--fill") == 0 && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long n = std::strtoul(argv[++i], &end, 10);
      if (*end != '\0' || n == 0 || n > 65536) return usage();
      fill = uint32_t(n);
    } else if (argv[i][0] != '-' && archive == nullptr) {
      archive = argv[i];
    } else {
      return usage();
    }
  }
  if (archive == nullptr) return usage();
  try {
    const cact::Model model = cact::Model::open(archive);
    const cact::Engine engine(model);
    cact::SessionOptions options;
    options.context = fill + 4;
    options.threads = 1;
    cact::Session session(engine, options);
    session.prefill(cact::bench::ids_for(engine.header().vocab, fill, 11));
    session.step(7);
    session.step(9);
    cact::bench::count_marker("step");
    session.step(13);
    cact::bench::count_marker("end");
    std::printf("decode step at position %u\n", fill + 2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_step: %s\n", e.what());
    return 1;
  }
  return 0;
}
