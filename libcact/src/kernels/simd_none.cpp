// Placeholder list until the AVX2 / NEON tables land: no SIMD table yet.
#include "kernels/simd_tables.h"

namespace cact::kernels {
std::vector<const KernelTable*> simd_kernels() { return {}; }
}  // namespace cact::kernels
