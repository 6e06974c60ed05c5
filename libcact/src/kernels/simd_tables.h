#pragma once
// SIMD tables usable on this CPU, best last (private to kernels/).
#include <vector>

#include "cact/kernels.h"

namespace cact::kernels {
std::vector<const KernelTable*> simd_kernels();
}  // namespace cact::kernels
