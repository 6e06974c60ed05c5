// Model::prefault_dense: populate the page tables of the per-token weights.
#include "cact/model.h"

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
