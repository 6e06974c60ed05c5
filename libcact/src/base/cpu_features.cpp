#include "base/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>

namespace cact::kernels {

bool cpuid_bit(unsigned leaf, unsigned subleaf, int reg, unsigned bit) {
  unsigned r[4] = {0, 0, 0, 0};  // eax, ebx, ecx, edx
  if (static_cast<unsigned>(__get_cpuid_max(0, nullptr)) < leaf) return false;  // int in clang's <cpuid.h>
  __cpuid_count(leaf, 0, r[0], r[1], r[2], r[3]);
  if (subleaf > 0 && r[0] < subleaf) return false;  // leaf 7: EAX = highest subleaf
  __cpuid_count(leaf, subleaf, r[0], r[1], r[2], r[3]);
  return ((r[reg] >> bit) & 1u) != 0;
}

bool cpu_has_f16c() { return cpuid_bit(1, 0, 2, 29); }

}  // namespace cact::kernels
#endif
