#pragma once
// Pieces of the scalar table that the SIMD tables reuse (private to kernels/).
#include <cstdint>

#include "cact/kernels.h"

namespace cact::kernels {
// Size `out` for `count` vectors of `in` floats (grows only).
void prepare_activations(uint32_t in, uint32_t count, QuantizedActivations& out);
// Rotate one group in place and quantise it to int8 (absmax/127, nearest).
void quantize_group_scalar(float* rotated, uint32_t group, int8_t* q, float* scale);
}  // namespace cact::kernels
