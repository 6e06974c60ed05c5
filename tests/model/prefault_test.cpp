// Model::prefault_dense: after it, reading every page of the per-token blobs
// takes (almost) no page faults; without it, the same reads fault.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <vector>

#include "cact/model.h"
#include "support/test_paths.h"

namespace {

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Minor faults while reading one byte of every page of the dense blobs (all but the engram tables).
long faults_reading_dense(const cact::Model& m) {
  const auto page = size_t(sysconf(_SC_PAGESIZE));
  std::vector<bool> sparse(m.records().size(), false);
  for (uint32_t s = 0; s < m.header().num_engram_sites; ++s) {
    sparse[m.canon().site(s, cact::SiteSlot::tables)] = true;
  }
  const long before = minor_faults();
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < sparse.size(); ++i) {
    if (sparse[i]) continue;
    const auto blob = m.blob(i);
    for (size_t at = 0; at < blob.size(); at += page) sink = uint8_t(sink + blob[at]);
  }
  return minor_faults() - before;
}

}  // namespace

TEST_CASE("prefault_dense maps the per-token pages up front") {
  const auto path = cact::test::models_dir() / "license-tiny.cact";
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
  CHECK(without >= 2);  // the reads do fault without it (else this test could not fail)
  CHECK(with == 0);
}
