// Model::prefault_dense: after it, reading every page of the per-token blobs
// takes no page faults; without it, the same reads fault.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cact/model.h"
#include "cact/synth.h"
#include "support/test_paths.h"

namespace {

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Minor faults while reading one byte of every page of the blobs read whole per token.
long faults_reading_dense(const cact::Model& m) {
  const auto page = size_t(sysconf(_SC_PAGESIZE));
  const long before = minor_faults();
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < m.records().size(); ++i) {
    if (!m.read_whole_per_token(i)) continue;
    const auto blob = m.blob(i);
    for (size_t at = 0; at < blob.size(); at += page) sink = uint8_t(sink + blob[at]);
  }
  return minor_faults() - before;
}

// needle3's widths on 4 layers: about 7 MB. One fault on a cached file may map
// a whole fault-around window (64 KB by default) or a 2 MB folio, never more
// than one page table's 2 MB, so reading 7 MB takes at least 3 faults on any
// kernel. license-tiny (0.6 MB) is too small: on CI its reads took one fault.
std::filesystem::path write_wide_archive() {
  cact::SynthSpec spec = cact::synth_preset("needle3");
  spec.geometry.num_layers = 4;
  spec.geometry.global_mask_lo = 1u << 3;
  spec.geometry.num_engram_sites = 1;
  spec.geometry.engram_sites = {3, 0, 0, 0};
  const auto path = cact::test::scratch_dir("prefault") / "wide.cact";
  cact::write_synth_archive(path, spec);
  return path;
}

}  // namespace

TEST_CASE("read_whole_per_token: everything but the engram tables") {
  const cact::Model m = cact::Model::open(cact::test::models_dir() / "license-tiny.cact");
  size_t sparse = 0;
  for (size_t i = 0; i < m.records().size(); ++i) {
    if (m.read_whole_per_token(i)) continue;
    ++sparse;
    CHECK(m.name(i).find("tables") != std::string::npos);
  }
  CHECK(sparse == m.header().num_engram_sites);
}

TEST_CASE("prefault_dense maps the per-token pages up front") {
  const auto path = write_wide_archive();
  const cact::Model cold = cact::Model::open(path);
  const long without = faults_reading_dense(cold);
  const cact::Model warm = cact::Model::open(path);
  if (!warm.prefault_dense()) {
    MESSAGE("madvise(MADV_POPULATE_READ) refused by this kernel: nothing to check");
    return;
  }
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The reads also touch the sanitizer's shadow of the mapping, which faults on its own.
  MESSAGE("sanitizer build: shadow-memory faults hide the difference; checked in the plain builds");
  return;
#endif
  const long with = faults_reading_dense(warm);
  CAPTURE(without);
  CAPTURE(with);
  CHECK(without >= 3);   // the reads do fault without it (else this test could not fail)
  CHECK(with == 0);
  MESSAGE("faults without " << without << ", with " << with);
}
