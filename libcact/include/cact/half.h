#pragma once
// IEEE binary16 <-> binary32, round-to-nearest-even; no hardware assumption.
#include <cstddef>
#include <cstdint>

namespace cact {

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

// Read the i-th FP16 of a byte span (alignment-agnostic).
float load_half(const uint8_t* bytes, size_t i);

// n FP16 values at `bytes` (little-endian, any alignment) to floats: exactly
// half_to_float of each (zeros, subnormals, infinities and NaN payloads
// included), branch-free, so a whole tensor converts in one vectorisable loop
// instead of a call per value.
void halves_to_floats(const uint8_t* bytes, size_t n, float* out);

}  // namespace cact
