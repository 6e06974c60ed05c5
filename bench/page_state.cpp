#include "page_state.h"

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <string>

PageState page_state(std::span<const uint8_t> mapping) {
  PageState s;
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps) return s;
  s.known = true;
  const auto lo = uintptr_t(mapping.data()), hi = lo + mapping.size();
  bool inside = false;
  std::string line;
  while (std::getline(smaps, line)) {
    uintptr_t a = 0, b = 0;
    const size_t dash = line.find('-'), space = line.find(' ');
    if (dash != std::string::npos && dash < space && std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR, &a, &b) == 2) {
      inside = a < hi && b > lo;  // areas of the mapping (advice splits it into several)
      continue;
    }
    if (!inside) continue;
    unsigned long long kb = 0;
    if (std::sscanf(line.c_str(), "Rss: %llu kB", &kb) == 1) s.resident += kb * 1024;
    if (std::sscanf(line.c_str(), "FilePmdMapped: %llu kB", &kb) == 1) s.huge += kb * 1024;
    if (std::sscanf(line.c_str(), "AnonHugePages: %llu kB", &kb) == 1) s.huge += kb * 1024;
  }
  return s;
}
