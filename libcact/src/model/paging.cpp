// How a mapped archive is paged: huge pages for the blobs read whole per
// token (Model::open), and prefault_dense, which populates their page tables.
#include "cact/model.h"

#include "cact/mapped_file.h"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace cact {

bool Model::read_whole_per_token(size_t i) const {
  for (uint32_t s = 0; s < header_.num_engram_sites; ++s) {
    if (canon().site(s, SiteSlot::tables) == i) return false;
  }
  return true;
}

void Model::advise_huge_pages(std::span<const uint8_t> mapping) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Before anything reads the file, so that a fault on a page not yet cached
  // reads a 2 MiB folio and maps it with one entry: the per-token stream then
  // runs on physically contiguous 2 MiB pages (docs/ENGINE.md "Page cache").
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  if (uintptr_t(mapping.data()) % page != 0 || mapping.size() < MappedFile::kHugeAlign) return;
  (void)madvise(const_cast<uint8_t*>(mapping.data()), mapping.size(), MADV_HUGEPAGE);
#else
  (void)mapping;
#endif
}

void Model::advise_small_tables() const {
#if defined(__linux__) && defined(MADV_NOHUGEPAGE)
  // The engram tables, of which a token reads a few rows: a 2 MiB page there
  // would make each touched row cost 2 MiB of resident memory. Whole 2 MiB
  // blocks only, so that the blocks a table shares with dense blobs stay huge.
  constexpr uintptr_t kHuge = MappedFile::kHugeAlign;
  const auto start = uintptr_t(bytes_.data());
  if (start % kHuge != 0) return;
  for (size_t i = 0; i < records_.size(); ++i) {
    if (read_whole_per_token(i)) continue;
    const uintptr_t from = (start + records_[i].offset + kHuge - 1) & ~(kHuge - 1);
    const uintptr_t to = (start + records_[i].offset + records_[i].nbytes) & ~(kHuge - 1);
    if (to > from) (void)madvise(reinterpret_cast<void*>(from), to - from, MADV_NOHUGEPAGE);
  }
#endif
}

bool Model::prefault_dense() const {
#if defined(__linux__)
#ifdef MADV_POPULATE_READ
  constexpr int kPopulateRead = MADV_POPULATE_READ;
#else
  constexpr int kPopulateRead = 22;  // Linux 5.14; older kernels refuse it with EINVAL
#endif
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  bool all_done = true;
  // Runs of consecutive dense blobs, one madvise each.
  size_t i = 0;
  while (i < records_.size()) {
    if (!read_whole_per_token(i)) {
      ++i;
      continue;
    }
    const uint64_t begin = records_[i].offset;
    uint64_t end = begin;
    for (; i < records_.size() && read_whole_per_token(i); ++i) end = records_[i].offset + records_[i].nbytes;
    const uintptr_t from = uintptr_t(bytes_.data() + begin) & ~(page - 1);
    const uintptr_t to = uintptr_t(bytes_.data() + end);
    if (to > from && madvise(reinterpret_cast<void*>(from), to - from, kPopulateRead) != 0) all_done = false;
  }
  return all_done;
#else
  return false;
#endif
}

}  // namespace cact
