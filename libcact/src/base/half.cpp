#include "cact/half.h"

#include <bit>
#include <cstring>

namespace cact {

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400u) == 0);
      bits = sign | uint32_t(127 - 15 - e) << 23 | (mantissa & 0x3FFu) << 13;
    }
  } else if (exponent == 31) {
    bits = sign | 0x7F800000u | mantissa << 13;
  } else {
    bits = sign | (exponent + 127 - 15) << 23 | mantissa << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or nan (keep nan quiet)
    return uint16_t(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // rounds to inf
  if (abs < 0x33000001u) return sign;                       // rounds to zero
  const int exponent = int(abs >> 23);
  if (exponent < 113) {  // result is subnormal
    const uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
    const int shift = 126 - exponent;
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1u))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = ((uint32_t(exponent) - 112) << 10) | ((abs >> 13) & 0x3FFu);
  const uint32_t rest = abs & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into exponent: correct
  return uint16_t(sign | half);
}

float load_half(const uint8_t* bytes, size_t i) {
  uint16_t h;
  std::memcpy(&h, bytes + 2 * i, 2);
  return half_to_float(h);
}

void halves_to_floats(const uint8_t* bytes, size_t n, float* out) {
  constexpr uint32_t kShiftedExp = 0x7C00u << 13;  // half exponent field, moved to float position
  const float magic = std::bit_cast<float>(uint32_t(113) << 23);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t h = uint32_t(bytes[2 * i]) | uint32_t(bytes[2 * i + 1]) << 8;
    uint32_t o = (h & 0x7FFFu) << 13;
    const uint32_t exp = o & kShiftedExp;
    o += uint32_t(127 - 15) << 23;                          // rebias the exponent
    if (exp == kShiftedExp) o += uint32_t(128 - 16) << 23;  // inf / NaN: exponent 255, payload kept
    float f = std::bit_cast<float>(o);
    if (exp == 0) f = std::bit_cast<float>(o + (uint32_t(1) << 23)) - magic;  // zero / subnormal, exact
    out[i] = std::bit_cast<float>(std::bit_cast<uint32_t>(f) | (h & 0x8000u) << 16);
  }
}

}  // namespace cact
