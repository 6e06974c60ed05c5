// The int8 KV cache's quantiser, scores and one token's value sums
// (cact/float_kernels.h) on baseline ARMv8 NEON (every aarch64 CPU: the
// Cortex-A53 class of routers too). Built without extra flags; dispatch.cpp
// takes it whenever getauxval has HWCAP_ASIMD, with the scores of
// kv_int8_dotprod.cpp where the CPU has the dot-product extension. Internal
// linkage only (the rules of x86/common.h). Compiles to nothing elsewhere.
#include "kernels/arm/kv_scores.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

namespace cact::kernels {
namespace {

// x[i .. i + 4) with the lanes past n zero.
float32x4_t load_tail(const float* x, uint32_t i, uint32_t n) {
  if (i + 4 <= n) return vld1q_f32(x + i);
  float part[4] = {};
  if (i < n) std::memcpy(part, x + i, (n - i) * sizeof(float));
  return vld1q_f32(part);
}

// |x| replaces mx only where mx < |x|, so a NaN keeps mx, as the portable
// std::max(mx, |x|) does.
float scale(const float* x, uint32_t n) {
  float32x4_t mx = vdupq_n_f32(0.0f);
  for (uint32_t i = 0; i < n; i += 4) {
    const float32x4_t a = vabsq_f32(load_tail(x, i, n));
    mx = vbslq_f32(vcltq_f32(mx, a), a, mx);
  }
  const float absmax = vmaxvq_f32(mx);
  return absmax > 0.0f ? absmax / 127.0f : 1.0f;
}

// The portable quantiser 8 at a time: the clamps as selects in its order,
// FCVTAS for its rounding half away from zero, the saturating narrowing for
// its clamp to [-128, 127].
void codes(const float* x, uint32_t n, float scale, int8_t* q) {
  const float32x4_t s = vdupq_n_f32(scale), lo = vdupq_n_f32(-128.0f), hi = vdupq_n_f32(128.0f);
  const auto code = [&](float32x4_t v) {
    const float32x4_t y = vdivq_f32(v, s);
    const float32x4_t c = vbslq_f32(vceqq_f32(y, y), y, vdupq_n_f32(0.0f));
    const float32x4_t above = vbslq_f32(vcltq_f32(lo, c), c, lo);
    return vqmovn_s32(vcvtaq_s32_f32(vbslq_f32(vcltq_f32(above, hi), above, hi)));
  };
  for (uint32_t i = 0; i < n; i += 8) {
    const int8x8_t c8 = vqmovn_s16(vcombine_s16(code(load_tail(x, i, n)), code(load_tail(x, i + 4, n))));
    if (i + 8 <= n) {
      vst1_s8(q + i, c8);
    } else {
      int8_t part[8];
      vst1_s8(part, c8);
      std::memcpy(q + i, part, n - i);
    }
  }
}

// Widening multiplies: per 16 bytes, SMULL / SMULL2 of rows (4j, 4j+1) and
// (4j+2, 4j+3) against the query dword twice, SADALP adding the word pairs into
// each row's two half sums; ADDP joins the halves (all exact).
struct Mull {
  struct Acc {
    int32x4_t v[8];
  };
  static void add(Acc& a, const int8x16_t (&k)[4], int8x16_t q) {
    for (uint32_t j = 0; j < 4; ++j) {
      a.v[2 * j] = vpadalq_s16(a.v[2 * j], vmull_s8(vget_low_s8(k[j]), vget_low_s8(q)));
      a.v[2 * j + 1] = vpadalq_s16(a.v[2 * j + 1], vmull_high_s8(k[j], q));
    }
  }
  static void dots(const Acc& a, int32x4_t (&d)[4]) {
    for (uint32_t j = 0; j < 4; ++j) d[j] = vpaddq_s32(a.v[2 * j], a.v[2 * j + 1]);
  }
};

// Rows two at a time (eight accumulators each: with three, GCC spills some of
// the 24), then one.
void scores(const KvScoreTile& t) {
  uint32_t r = 0;
  for (; r + 2 <= t.rows; r += 2) kv_neon::score_tile<Mull, 2>(t, r);
  if (r < t.rows) kv_neon::score_tile<Mull, 1>(t, r);
}

// acc[j] += x[j] · w[Lane] for the 4 vectors of one head's 16 columns.
template <int Lane>
void madd_head(float32x4_t (&acc)[4], const float32x4_t (&x)[4], float32x4_t w) {
  for (uint32_t j = 0; j < 4; ++j) acc[j] = vfmaq_laneq_f32(acc[j], x[j], w, Lane);
}

// Six heads × 16 columns at a time (24 of the 32 registers accumulate), the
// row's 16 codes widened in registers; each output's sum runs over the rows in
// order, as in the engine's value tiles, so the bits are theirs. The six
// weights of a row sit in the lanes of two registers: six of their own would
// spill accumulators.
void values_one(float* out, uint32_t heads, const float* w, size_t w_stride, const int8_t* v, uint32_t ia,
                uint32_t ib) {
  constexpr uint32_t H = 6, DV = 64;
  for (uint32_t h0 = 0; h0 < heads; h0 += H, out += H * DV, w += H * w_stride) {
    for (uint32_t c0 = 0; c0 < DV; c0 += 16) {
      float32x4_t acc[H][4];
      for (uint32_t h = 0; h < H; ++h) {
        for (uint32_t j = 0; j < 4; ++j) acc[h][j] = vld1q_f32(out + h * DV + c0 + 4 * j);
      }
      for (uint32_t i = ia; i < ib; ++i) {
        const int8x16_t codes = vld1q_s8(v + size_t(i) * DV + c0);
        const int16x8_t lo = vmovl_s8(vget_low_s8(codes)), hi = vmovl_high_s8(codes);
        const float32x4_t x[4] = {vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), vcvtq_f32_s32(vmovl_high_s16(lo)),
                                  vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), vcvtq_f32_s32(vmovl_high_s16(hi))};
        float32x4_t wa = vld1q_dup_f32(w + i), wb = vld1q_dup_f32(w + 4 * w_stride + i);
        wa = vld1q_lane_f32(w + w_stride + i, wa, 1);
        wa = vld1q_lane_f32(w + 2 * w_stride + i, wa, 2);
        wa = vld1q_lane_f32(w + 3 * w_stride + i, wa, 3);
        wb = vld1q_lane_f32(w + 5 * w_stride + i, wb, 1);
        madd_head<0>(acc[0], x, wa);
        madd_head<1>(acc[1], x, wa);
        madd_head<2>(acc[2], x, wa);
        madd_head<3>(acc[3], x, wa);
        madd_head<0>(acc[4], x, wb);
        madd_head<1>(acc[5], x, wb);
      }
      for (uint32_t h = 0; h < H; ++h) {
        for (uint32_t j = 0; j < 4; ++j) vst1q_f32(out + h * DV + c0 + 4 * j, acc[h][j]);
      }
    }
  }
}

}  // namespace

// Constant-initialised (no code runs to build it); declared in dispatch.cpp.
extern const KvInt8Kernels kKvInt8Neon;
const KvInt8Kernels kKvInt8Neon{scale, codes, scores, nullptr, values_one};

}  // namespace cact::kernels
#endif
