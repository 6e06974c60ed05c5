#pragma once
// How a mapping is backed right now, from /proc/self/smaps: resident bytes and
// how many of them are mapped by 2 MiB page-table entries (FilePmdMapped +
// AnonHugePages). Benchmarks print it beside their figures, since the page
// cache's folio sizes change decode speed by a few per cent (docs/ENGINE.md
// "Page cache").
#include <cstdint>
#include <span>

struct PageState {
  bool known = false;               // false: no /proc/self/smaps
  uint64_t resident = 0, huge = 0;  // bytes
};

PageState page_state(std::span<const uint8_t> mapping);
