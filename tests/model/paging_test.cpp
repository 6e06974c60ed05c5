// How an opened archive is paged: MappedFile's 2 MiB-aligned mapping, the
// huge-page advice of Model::open (2 MiB pages for the per-token blobs, not
// inside the engram tables), and Model::prefault_dense (after it, reading every
// page of the per-token blobs takes no page faults; without it, they fault).
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "cact/mapped_file.h"
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
// a whole fault-around window (64 KB by default), never more than one page
// table's 2 MB, so reading 7 MB takes at least 3 faults on any kernel.
// license-tiny (0.6 MB) is too small: on CI its reads took one fault. The copy
// is written 4 KB at a time: AtomicFile's 2 MB writes leave the file cached in
// 2 MB folios on kernels with large folios, which Model::open maps whole (one
// fault per 2 MB while opening), so that reading it afterwards hardly faults.
std::filesystem::path write_wide_archive() {
  cact::SynthSpec spec = cact::synth_preset("needle3");
  spec.geometry.num_layers = 4;
  spec.geometry.global_mask_lo = 1u << 3;
  spec.geometry.num_engram_sites = 1;
  spec.geometry.engram_sites = {3, 0, 0, 0};
  const auto dir = cact::test::scratch_dir("prefault");
  cact::write_synth_archive(dir / "chunked.cact", spec);
  const auto path = dir / "wide.cact";
  std::ifstream in(dir / "chunked.cact", std::ios::binary);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  std::vector<char> page(4096);
  while (in.read(page.data(), std::streamsize(page.size())) || in.gcount() > 0) {
    out.write(page.data(), in.gcount());
    out.flush();
  }
  REQUIRE(out.good());
  return path;
}

// fn(lo, hi, line) for every field line of /proc/self/smaps, with the range
// [lo, hi) of the mapping it describes; false without smaps.
template <typename F>
bool for_each_smaps_field(const F& fn) {
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps) return false;
  std::string line;
  unsigned long lo = 0, hi = 0;
  while (std::getline(smaps, line)) {
    unsigned long a = 0, b = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &a, &b) == 2 && line.find('-') < line.find(' ')) {
      lo = a;
      hi = b;
    } else {
      fn(lo, hi, line);
    }
  }
  return true;
}

// The VmFlags of the mapping that contains `address` in /proc/self/smaps ("" if none).
std::string vm_flags_at(const void* address) {
  const auto a = uintptr_t(address);
  std::string flags;
  for_each_smaps_field([&](unsigned long lo, unsigned long hi, const std::string& line) {
    if (a >= lo && a < hi && line.rfind("VmFlags:", 0) == 0) flags = std::string(line, 8) + " ";  // " rd mr ... "
  });
  return flags;
}

}  // namespace

TEST_CASE("MappedFile: a file of 2 MiB or more is mapped at a 2 MiB boundary, byte for byte") {
  const auto dir = cact::test::scratch_dir("paging-map");
  for (const size_t size : {size_t(4096), cact::MappedFile::kHugeAlign, cact::MappedFile::kHugeAlign * 3 + 123}) {
    std::vector<char> want(size);
    for (size_t i = 0; i < size; ++i) want[i] = char(i * 131 + i / 4099);
    const auto path = dir / std::to_string(size);
    std::ofstream(path, std::ios::binary).write(want.data(), std::streamsize(size));
    const cact::MappedFile f(path);
    CAPTURE(size);
    REQUIRE(f.size() == size);
    CHECK(std::equal(want.begin(), want.end(), reinterpret_cast<const char*>(f.bytes().data())));
    if (size >= cact::MappedFile::kHugeAlign) CHECK(uintptr_t(f.bytes().data()) % cact::MappedFile::kHugeAlign == 0);
  }
}

TEST_CASE("Model::open advises 2 MiB pages for the per-token blobs and not inside the engram tables") {
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled") || !std::ifstream("/proc/self/smaps")) {
    MESSAGE("no transparent huge pages or no /proc/self/smaps here: nothing to check");
    return;
  }
  cact::SynthSpec spec = cact::synth_preset("needle3");
  spec.geometry.num_layers = 2;
  spec.geometry.global_mask_lo = 1u << 1;
  spec.geometry.num_engram_sites = 1;
  spec.geometry.engram_sites = {1, 0, 0, 0};
  spec.geometry.engram_slots = 2 * 18432;  // a 7.5 MB table: it holds whole 2 MiB blocks
  const auto path = cact::test::scratch_dir("paging-advice") / "a.cact";
  cact::write_synth_archive(path, spec);
  const cact::Model m = cact::Model::open(path);
  const uint8_t* base = m.bytes().data();
  REQUIRE(uintptr_t(base) % cact::MappedFile::kHugeAlign == 0);
  size_t tables = 0;
  for (size_t i = 0; i < m.records().size(); ++i) {
    const auto& r = m.record(i);
    CAPTURE(m.label(i));
    if (m.read_whole_per_token(i)) {
      CHECK(vm_flags_at(base + r.offset).find(" hg ") != std::string::npos);
      continue;
    }
    ++tables;
    const uint64_t huge = cact::MappedFile::kHugeAlign;
    const uint64_t first_block = (r.offset + huge - 1) / huge * huge;
    REQUIRE(first_block + huge <= r.offset + r.nbytes);
    CHECK(vm_flags_at(base + first_block).find(" nh ") != std::string::npos);
    CHECK(vm_flags_at(base + first_block).find(" hg ") == std::string::npos);
  }
  CHECK(tables == 1);
}

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
  CHECK(without >= 3);  // the reads do fault without it (else this test could not fail)
  CHECK(with == 0);
  MESSAGE("faults without " << without << ", with " << with);
}

namespace {

// Resident KiB of the mappings that overlap [begin, end) ("Rss:" of each in
// /proc/self/smaps; advice splits one mapping into several), -1 without smaps.
// Unlike the process's RssFile it does not move with what else the process maps.
long rss_kb_over(const void* begin, const void* end) {
  long kb = 0;
  const bool read = for_each_smaps_field([&](unsigned long lo, unsigned long hi, const std::string& line) {
    if (lo < uintptr_t(end) && hi > uintptr_t(begin) && line.rfind("Rss:", 0) == 0) kb += std::atol(line.c_str() + 4);
  });
  return read ? kb : -1;
}

long sum_of(std::span<const uint8_t> bytes) {
  long s = 0;
  for (uint8_t b : bytes) s += b;
  return s;
}

}  // namespace

TEST_CASE("Model::drop_pages gives a mapped blob's pages back; the blob reads the same after") {
  const auto path = write_wide_archive();
  const cact::Model m = cact::Model::open(path);
  size_t big = 0;
  for (size_t i = 0; i < m.records().size(); ++i) {
    if (m.record(i).nbytes > m.record(big).nbytes) big = i;
  }
  const auto blob = m.blob(big);
  REQUIRE(blob.size() > (size_t(1) << 20));
  const long before = sum_of(blob);
  const void* end = blob.data() + blob.size();
  const long touched = rss_kb_over(blob.data(), end);
  m.drop_pages(big);
  // The blob's whole pages are gone from the resident set (the pages at its
  // two ends stay: they hold neighbours' bytes).
  if (touched >= 0) CHECK(rss_kb_over(blob.data(), end) <= touched - long(blob.size() / 1024) + 8);
  CHECK(sum_of(blob) == before);
}

TEST_CASE("Model::drop_pages never touches ordinary memory: from_bytes of a buffer keeps its bytes") {
  std::ifstream in(cact::test::models_dir() / "license-tiny.cact", std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<uint8_t> copy = bytes;
  const cact::Model m = cact::Model::from_bytes(bytes);
  for (size_t i = 0; i < m.records().size(); ++i) m.drop_pages(i);
  CHECK(bytes == copy);
}
