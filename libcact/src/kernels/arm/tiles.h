#pragma once
// The integer group dot (SDOT or SMULL pairs) and the register tiles of the
// products (rows x vectors per tile).
#include "kernels/arm/unpack.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

namespace cact::kernels {
namespace {
namespace neon {

// ----------------------------------------------------------------------------
// Integer dot of one group (8 blocks of 16). Dotprod: SDOT, exact for any
// int8. Baseline: SMULL/SMLAL2 pair sums in int16 (|w| <= 127, so
// <= 2*127*128 < 2^15) then SADALP into int32.

template <bool kDotprod>
inline int32x4_t dot16(int32x4_t acc, int8x16_t w, int8x16_t a) {
  if constexpr (kDotprod) {
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(acc, w, a);
#else
    static_assert(!kDotprod, "the dotprod table needs -march=armv8.2-a+dotprod");
    return acc;
#endif
  } else {
    const int16x8_t p = vmlal_high_s8(vmull_s8(vget_low_s8(w), vget_low_s8(a)), w, a);
    return vpadalq_s16(acc, p);
  }
}

// One chain: the sums are exact in any order, the tile's rows and vectors
// already give the core independent chains, and a second would cost a zeroing
// move and an add per group.
template <bool kDotprod>
inline int32x4_t dot_group(const int8x16_t w[8], const int8_t* a) {
  int32x4_t s = vdupq_n_s32(0);
  for (int k = 0; k < 8; ++k) s = dot16<kDotprod>(s, w[k], vld1q_s8(a + 16 * k));
  return s;
}

struct CqMatmulJob {
  const uint8_t* packed;
  size_t row_bytes;
  uint32_t groups, in_pad;
  const int8_t* act;   // permuted activations, [count][in_pad]
  const float* norms;  // float norms of rows [row_begin, row_end): [row - row_begin][groups]
  uint32_t row_begin;
  const float* scales;  // activation scales, [groups][scale_stride(count)]
  size_t scale_stride;
  int8x16_t tables[4];  // the unpacker's lookup tables
  float cb_scale;
  float* y;
  size_t y_stride;
};

inline float load_norm(const uint8_t* half, size_t i) {
  uint16_t h;
  std::memcpy(&h, half + 2 * i, 2);
  return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

// Norms of lanes 0..3 (lo) and 4..7 (hi), lane l = v*R + r -> row l % R;
// `n` points at row r0's norm of the current group, rows `groups` apart.
template <int R>
inline void tile_norms(const float* n, size_t groups, float32x4_t& lo, float32x4_t& hi) {
  if constexpr (R == 1) {
    lo = hi = vld1q_dup_f32(n);
  } else if constexpr (R == 2) {
    float32x4_t t = vld1q_dup_f32(n);
    t = vld1q_lane_f32(n + groups, t, 1);
    lo = hi = vcombine_f32(vget_low_f32(t), vget_low_f32(t));
  } else {
    float32x4_t t = vld1q_dup_f32(n);
    t = vld1q_lane_f32(n + groups, t, 1);
    t = vld1q_lane_f32(n + 2 * groups, t, 2);
    t = vld1q_lane_f32(n + 3 * groups, t, 3);
    lo = hi = t;
    if constexpr (R == 8) {
      float32x4_t u = vld1q_dup_f32(n + 4 * groups);
      u = vld1q_lane_f32(n + 5 * groups, u, 1);
      u = vld1q_lane_f32(n + 6 * groups, u, 2);
      hi = vld1q_lane_f32(n + 7 * groups, u, 3);
    }
  }
}

// Activation scales of lanes 0..3 / 4..7 -> vector l / R; `s` points at the
// scale of vector v0 in the current group (8 readable entries).
template <int R>
inline void tile_scales(const float* s, float32x4_t& lo, float32x4_t& hi) {
  const float32x4_t x = vld1q_f32(s);
  if constexpr (R == 1) {
    lo = x;
    hi = vld1q_f32(s + 4);
  } else if constexpr (R == 2) {
    lo = vzip1q_f32(x, x);
    hi = vzip2q_f32(x, x);
  } else if constexpr (R == 4) {
    lo = vdupq_laneq_f32(x, 0);
    hi = vdupq_laneq_f32(x, 1);
  } else {
    lo = hi = vdupq_laneq_f32(x, 0);
  }
}

// R rows x V vectors; lane l = v*R + r across two 4-lane halves. Per lane the
// float math is the scalar's: acc += float(dot) * (norm * scale) in group
// order, then acc * cb.scale. Lanes >= R*V compute on zero dots and are
// never stored.
template <bool kDotprod, class U, int R, int V>
void cq_tile(const CqMatmulJob& job, uint32_t r0, uint32_t v0) {
  static_assert(R * V <= 8 && (R == 1 || R == 2 || R == 4 || R == 8));
  constexpr int P = R * V;
  const uint32_t groups = job.groups;
  const float* norms = job.norms + size_t(r0 - job.row_begin) * groups;
  float32x4_t acc_lo = vdupq_n_f32(0.0f), acc_hi = vdupq_n_f32(0.0f);
  for (uint32_t g = 0; g < groups; ++g) {
    int32x4_t dots[8];
    for (int l = P; l < 8; ++l) dots[l] = vdupq_n_s32(0);
    for (int r = 0; r < R; ++r) {
      int8x16_t w[8];
      U::weights(job.packed + size_t(r0 + r) * job.row_bytes + size_t(g) * U::kBytes, job.tables, w);
      for (int v = 0; v < V; ++v) {
        dots[v * R + r] = dot_group<kDotprod>(w, job.act + size_t(v0 + v) * job.in_pad + size_t(g) * kG);
      }
    }
    float32x4_t n_lo, n_hi, s_lo, s_hi;
    tile_norms<R>(norms + g, groups, n_lo, n_hi);
    tile_scales<R>(job.scales + g * job.scale_stride + v0, s_lo, s_hi);
    const int32x4_t lo = vpaddq_s32(vpaddq_s32(dots[0], dots[1]), vpaddq_s32(dots[2], dots[3]));
    acc_lo = vaddq_f32(acc_lo, vmulq_f32(vcvtq_f32_s32(lo), vmulq_f32(n_lo, s_lo)));
    if constexpr (P > 4) {
      const int32x4_t hi = vpaddq_s32(vpaddq_s32(dots[4], dots[5]), vpaddq_s32(dots[6], dots[7]));
      acc_hi = vaddq_f32(acc_hi, vmulq_f32(vcvtq_f32_s32(hi), vmulq_f32(n_hi, s_hi)));
    }
  }
  alignas(16) float res[8];
  const float32x4_t cbs = vdupq_n_f32(job.cb_scale);
  vst1q_f32(res, vmulq_f32(acc_lo, cbs));
  vst1q_f32(res + 4, vmulq_f32(acc_hi, cbs));
  for (int v = 0; v < V; ++v) {
    for (int r = 0; r < R; ++r) job.y[size_t(v0 + v) * job.y_stride + r0 + r] = res[v * R + r];
  }
}

// This ISA's tile for the shared tiling driver (simd_common.h).
template <bool kDotprod, class U>
struct Tiles {
  const CqMatmulJob& job;
  template <int R, int V>
  void tile(uint32_t r, uint32_t v0) const {
    cq_tile<kDotprod, U, R, V>(job, r, v0);
  }
};

}  // namespace neon
}  // namespace
}  // namespace cact::kernels

#endif  // aarch64 NEON
