// The int8 KV cache's scores and one token's value sums (cact/float_kernels.h)
// with the dot-product extension (FEAT_DotProd: Cortex-A55/A75 and later). Built with
// -march=armv8.2-a+dotprod; chosen by dispatch.cpp only when getauxval has
// HWCAP_ASIMDDP. Internal linkage only (the rules of x86/common.h). Compiles to
// nothing elsewhere.
#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

#include <arm_neon.h>

#include <cstring>

#include "cact/float_kernels.h"

namespace cact::kernels {
namespace {

constexpr uint32_t kTile = 16;

// `R` query rows (from row r0) against the 16 rows: each 16 bytes of a
// 4-column group hold rows 4j..4j+3 (4 bytes each), stored as k ^ 0x80, so one
// EOR gives the signed codes and SDOT against the broadcast query dword sums 4
// products per row: Σ k·q exactly, the VNNI sum less its bias.
template <uint32_t R>
void score_tile(const KvScoreTile& t, uint32_t r0) {
  int32x4_t acc[R][4];
  for (uint32_t r = 0; r < R; ++r) {
    for (uint32_t j = 0; j < 4; ++j) acc[r][j] = vdupq_n_s32(0);
  }
  const int8x16_t flip = vdupq_n_s8(int8_t(-128));
  const int8_t* q8 = t.q8 + size_t(r0) * t.dq4;
  for (uint32_t g = 0; g < t.dq4 / 4; ++g) {
    int8x16_t k[4];
    for (uint32_t j = 0; j < 4; ++j)
      k[j] = veorq_s8(vld1q_s8(reinterpret_cast<const int8_t*>(t.kt) + g * 64 + 16 * j), flip);
    for (uint32_t r = 0; r < R; ++r) {
      int32_t qd;
      std::memcpy(&qd, q8 + size_t(r) * t.dq4 + 4 * g, 4);
      const int8x16_t qv = vreinterpretq_s8_s32(vdupq_n_s32(qd));
      for (uint32_t j = 0; j < 4; ++j) acc[r][j] = vdotq_s32(acc[r][j], k[j], qv);
    }
  }
  for (uint32_t r = 0; r < R; ++r) {
    float sc[kTile];
    for (uint32_t j = 0; j < 4; ++j) {  // (dot · k_scale) · coef, as the other paths
      const float32x4_t dot = vcvtq_f32_s32(acc[r][j]);
      vst1q_f32(sc + 4 * j, vmulq_n_f32(vmulq_f32(dot, vld1q_f32(t.ks + 4 * j)), t.coef[r0 + r]));
    }
    std::memcpy(t.dst + (r0 + r) * t.stride + t.la, sc + t.la, (t.lb - t.la) * sizeof(float));
  }
}

// Rows in tiles of 6 (needle3's GQA group), then 4, 2, 1.
void scores(const KvScoreTile& t) {
  uint32_t r = 0;
  for (; r + 6 <= t.rows; r += 6) score_tile<6>(t, r);
  for (; r + 4 <= t.rows; r += 4) score_tile<4>(t, r);
  for (; r + 2 <= t.rows; r += 2) score_tile<2>(t, r);
  if (r < t.rows) score_tile<1>(t, r);
}

// Six heads × 16 columns at a time (24 of the 32 registers accumulate), the
// row's 16 codes widened in registers; each output's sum runs over the rows in
// order, as in the engine's value tiles, so the bits are theirs.
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
        for (uint32_t h = 0; h < H; ++h) {
          const float32x4_t a = vdupq_n_f32(w[h * w_stride + i]);
          for (uint32_t j = 0; j < 4; ++j) acc[h][j] = vfmaq_f32(acc[h][j], a, x[j]);
        }
      }
      for (uint32_t h = 0; h < H; ++h) {
        for (uint32_t j = 0; j < 4; ++j) vst1q_f32(out + h * DV + c0 + 4 * j, acc[h][j]);
      }
    }
  }
}

}  // namespace

// Constant-initialised (no code runs to build it); declared in dispatch.cpp.
// The quantiser stays portable here (it vectorises in the baseline build).
extern const KvInt8Kernels kKvInt8Dotprod;
const KvInt8Kernels kKvInt8Dotprod{nullptr, nullptr, scores, nullptr, values_one};

}  // namespace cact::kernels
#endif
