#pragma once
// The int8 KV cache's score tile on NEON (cact/float_kernels.h KvScoreTile),
// for the dot of the including file: widening multiplies (kv_int8_neon.cpp) or
// SDOT (kv_int8_dotprod.cpp). Internal linkage only (the rules of
// x86/common.h).
#if defined(__aarch64__) && defined(__ARM_NEON)

#include <arm_neon.h>

#include <cstring>

#include "cact/float_kernels.h"

namespace cact::kernels {
namespace {
namespace kv_neon {

constexpr uint32_t kTile = 16;

// `R` query rows (from row r0) against the 16 rows: each 16 bytes of a
// 4-column group hold rows 4j..4j+3 (4 bytes each), stored as k ^ 0x80, so one
// EOR gives the signed codes, whose sums against the query dword are Σ k·q
// exactly (the VNNI sum less its bias). A row's accumulators are Dot::Acc::v;
// Dot::add adds one group's products to them, Dot::dots gives lanes 4j..4j+3 of
// its 16 sums.
template <class Dot, uint32_t R>
void score_tile(const KvScoreTile& t, uint32_t r0) {
  typename Dot::Acc acc[R];
  for (uint32_t r = 0; r < R; ++r) {
    for (int32x4_t& v : acc[r].v) v = vdupq_n_s32(0);
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
      Dot::add(acc[r], k, vreinterpretq_s8_s32(vdupq_n_s32(qd)));
    }
  }
  // A whole tile is stored in place, without a memcpy call; the scales are
  // read before any store, which might alias them.
  const bool whole = t.la == 0 && t.lb == kTile;
  float32x4_t ks[4];
  for (uint32_t j = 0; j < 4; ++j) ks[j] = vld1q_f32(t.ks + 4 * j);
  float coef[R];
  for (uint32_t r = 0; r < R; ++r) coef[r] = t.coef[r0 + r];
  for (uint32_t r = 0; r < R; ++r) {
    int32x4_t dots[4];
    Dot::dots(acc[r], dots);
    float sc[kTile];
    float* dst = whole ? t.dst + (r0 + r) * t.stride : sc;
    for (uint32_t j = 0; j < 4; ++j) {  // (dot · k_scale) · coef, as the other paths
      vst1q_f32(dst + 4 * j, vmulq_n_f32(vmulq_f32(vcvtq_f32_s32(dots[j]), ks[j]), coef[r]));
    }
    if (!whole) std::memcpy(t.dst + (r0 + r) * t.stride + t.la, sc + t.la, (t.lb - t.la) * sizeof(float));
  }
}

}  // namespace kv_neon
}  // namespace
}  // namespace cact::kernels

#endif  // aarch64 NEON
