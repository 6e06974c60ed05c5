#pragma once
// Activations in, weight rows out: the quantiser (FWHT, absmax, rounding)
// and dequantize_row of both NEON tables.
#include "kernels/arm/common.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

namespace cact::kernels {
namespace {
namespace neon {

// ----------------------------------------------------------------------------
// Activations: bit-identical to quantize_group_scalar. Same butterfly pairs in
// the same stage order, the same scale, FCVTAS = round half away from zero
// (std::lround), clamp to [-127, 127].

// One stage inside a register: `sign` is +1 on the lanes that hold the lower
// element a of a pair (a, b) and -1 on the upper ones, so one fused
// multiply-add gives partner + a = a + b and partner - b = a - b, each rounded
// once as the scalar's add or subtract (v · ±1 is exact).
inline float32x4_t butterfly(float32x4_t v, float32x4_t swapped, float32x4_t sign) {
  return vfmaq_f32(swapped, v, sign);
}

// Unrolled whole, so that x stays in registers: as loops its indices are
// variables, and every butterfly loads and stores its pair.
inline void fwht128(float32x4_t x[32]) {
  const float32x4_t odd = {1.0f, -1.0f, 1.0f, -1.0f};
  const float32x4_t high = {1.0f, 1.0f, -1.0f, -1.0f};
#pragma GCC unroll 32
  for (int i = 0; i < 32; ++i) {
    float32x4_t v = x[i];
    v = butterfly(v, vrev64q_f32(v), odd);       // half = 1
    v = butterfly(v, vextq_f32(v, v, 2), high);  // half = 2
    x[i] = v;
  }
#pragma GCC unroll 5
  for (int h = 1; h < 32; h *= 2) {  // half = 4 .. 64: whole registers
#pragma GCC unroll 16
    for (int blk = 0; blk < 32; blk += 2 * h) {
#pragma GCC unroll 16
      for (int i = blk; i < blk + h; ++i) {
        const float32x4_t a = x[i];
        const float32x4_t b = x[i + h];
        x[i] = vaddq_f32(a, b);
        x[i + h] = vsubq_f32(a, b);
      }
    }
  }
  const float32x4_t scale = vdupq_n_f32(1.0f / __builtin_sqrtf(float(kG)));  // as codec::fwht
#pragma GCC unroll 32
  for (int i = 0; i < 32; ++i) x[i] = vmulq_f32(x[i], scale);
}

// Rounded and narrowed with saturation: to int16, then int8 ([-128, 127]);
// the caller's max with -127 then gives the scalar's clamp to [-127, 127].
inline int16x8_t round_pair(float32x4_t a, float32x4_t b, float32x4_t inv) {
  const int32x4_t qa = vcvtaq_s32_f32(vmulq_f32(a, inv));
  const int32x4_t qb = vcvtaq_s32_f32(vmulq_f32(b, inv));
  return vqmovn_high_s32(vqmovn_s32(qa), qb);
}

inline void quantize_group(const float* src, int8_t* q, float* scale_out) {
  float32x4_t x[32];
#pragma GCC unroll 32
  for (int i = 0; i < 32; ++i) x[i] = vld1q_f32(src + 4 * i);
  fwht128(x);
  float32x4_t m = vabsq_f32(x[0]);
#pragma GCC unroll 32
  for (int i = 1; i < 32; ++i) m = vmaxq_f32(m, vabsq_f32(x[i]));
  const GroupScale gs = group_scale(vmaxvq_f32(m));
  if (gs.zero()) {
    for (float32x4_t& v : x) v = vdupq_n_f32(0.0f);
  }
  const float32x4_t vinv = vdupq_n_f32(gs.inv);
#pragma GCC unroll 8
  for (int i = 0; i < 32; i += 4) {
    const int16x8_t ab = round_pair(x[i], x[i + 1], vinv);
    const int16x8_t cd = round_pair(x[i + 2], x[i + 3], vinv);
    vst1q_s8(q + 4 * i, vmaxq_s8(vqmovn_high_s16(vqmovn_s16(ab), cd), vdupq_n_s8(-127)));
  }
  *scale_out = gs.scale;
}

void quantize_activations(const float* x, uint32_t in, uint32_t count, QuantizedActivations& out) {
  quantize_activations_by_group<quantize_group>(x, in, count, out);
}

// ----------------------------------------------------------------------------
// dequantize_row: per group, codebook[index] * norm (the lookup is scalar, the
// multiply by the norm a vector of the same products), then fwht128: the
// scalar table's operations lane by lane.
void dequantize_row(const codec::CqMatrix& w, const float* codebook, uint32_t r, float* out) {
  dequantize_row_by_groups(w, codebook, r, out, [&](const uint8_t* indices, float norm, float* dst) {
    float32x4_t x[32];
    const float32x4_t vnorm = vdupq_n_f32(norm);
    for (int i = 0; i < 32; ++i) {
      const float e[4] = {codebook[indices[4 * i]], codebook[indices[4 * i + 1]], codebook[indices[4 * i + 2]],
                          codebook[indices[4 * i + 3]]};
      x[i] = vmulq_f32(vld1q_f32(e), vnorm);
    }
    fwht128(x);
    for (int i = 0; i < 32; ++i) vst1q_f32(dst + 4 * i, x[i]);
  });
}

}  // namespace neon
}  // namespace
}  // namespace cact::kernels

#endif  // aarch64 NEON
