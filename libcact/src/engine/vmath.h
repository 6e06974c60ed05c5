#pragma once
// The vocabulary of the engine's per-token loops: cact/vec.h's multi-width
// building blocks (kept with the other vectorised code under kernels/), and
// branch-free float math, written so that GCC vectorises the loops that call it
// (SSE2/AVX2 on x86-64, NEON on aarch64).
//
// Every function here is plain IEEE float arithmetic (no FMA, no library call,
// no data-dependent branch), so a loop gives the same bits whichever ISA clone
// of it runs: every width of in_widest (cact/vec.h) agrees bit for bit (only the
// lane width differs, never the per-element operations).
#include <bit>
#include <cstdint>
#include <type_traits>

#include "cact/vec.h"

// Hot loops run through in_widest (cact/vec.h: AVX-512F, AVX2 and the baseline on
// x86-64 GCC; the engine is built with -ffp-contract=off, so no width
// contracts a multiply-add).

namespace cact::engine {

using namespace vec;  // NOLINT(google-build-using-namespace): the loops' vocabulary

// c ? a : b by bit masks. A plain ?: before float arithmetic lets GCC thread the
// constant arm into a branch, and with -ftrapping-math (the default) it will not
// if-convert the float operations of that branch back, so the loop would not
// vectorise; a mask keeps it one straight-line value.
inline float select_bits(bool c, float a, float b) {
  const uint32_t m = 0u - uint32_t(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}

// e^x in float, max relative error ~2 ulp on [-87, 88.37] (tests/engine/vmath.cpp).
// Below -87 (including -inf; and NaN) the result is 0 (the true value is < 1.7e-38, so the
// result never is a subnormal); above 88.37 it saturates at e^88.37 ≈ 2.4e38.
// Cephes expf: x = n·ln2 + r with n = round(x·log2 e), |r| ≤ ln2/2, ln2 split in
// two parts so that r is exact; e^r by a degree-7 polynomial; 2^n by the exponent bits.
inline float exp_approx(float x) {
  constexpr float kLo = -87.0f, kHi = 88.3762626647949f;
  constexpr float kRound = 12582912.0f;  // 1.5·2^23: (y + kRound) − kRound rounds y to an integer
  const bool under = !(x >= kLo);        // also -inf and NaN
  x = select_bits(under, kLo, x);        // keeps the float -> int conversion below in range
  x = select_bits(x > kHi, kHi, x);
  const float n = (x * 1.44269504088896341f + kRound) - kRound;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * (r * r) + r + 1.0f;
  // 2^n, or 0 below the range (a select of values, so the loop stays branch-free).
  const float scale = std::bit_cast<float>(under ? 0u : uint32_t(int32_t(n) + 127) << 23);
  return y * scale;
}

// σ(x) = 1 / (1 + e^-x) with exp_approx.
inline float sigmoid_approx(float x) { return 1.0f / (1.0f + exp_approx(-x)); }

// silu(x) = x / (1 + e^-x) with exp_approx.
inline float silu_approx(float x) { return x / (1.0f + exp_approx(-x)); }

}  // namespace cact::engine
