#pragma once
// The AArch64 Advanced SIMD kernels, instantiated twice: neon.cpp (baseline
// ARMv8-A: int8 products through vmull_s8 + pairwise accumulate) and
// neon_dotprod.cpp (-march=armv8.2-a+dotprod: vdotq_s32). Everything has
// internal linkage (anonymous namespace), so the two translation units, built
// with different flags, never share a symbol; same rules as simd_common.h.
// Design and exactness: docs/KERNELS.md.
#if defined(__aarch64__) && defined(__ARM_NEON)

#include <arm_neon.h>

#include <cstring>

#include "cact/codec.h"
#include "cact/kernels.h"
#include "kernels/scalar.h"
#include "kernels/simd_common.h"

namespace cact::kernels {
namespace {
namespace neon {

constexpr uint32_t kG = kSimdGroup;  // 128 lanes per group: 8 blocks of 16

// ----------------------------------------------------------------------------
// Activations: bit-identical to quantize_group_scalar. Same butterfly pairs in
// the same stage order, the same scale, FCVTAS = round half away from zero
// (std::lround), clamp to [-127, 127].

inline float32x4_t butterfly(float32x4_t v, float32x4_t swapped, uint32x4_t upper) {
  return vbslq_f32(upper, vsubq_f32(swapped, v), vaddq_f32(v, swapped));
}

inline void fwht128(float32x4_t x[32]) {
  const uint32x4_t odd = {0, ~0u, 0, ~0u};
  const uint32x4_t high = {0, 0, ~0u, ~0u};
  for (int i = 0; i < 32; ++i) {
    float32x4_t v = x[i];
    v = butterfly(v, vrev64q_f32(v), odd);         // half = 1
    v = butterfly(v, vextq_f32(v, v, 2), high);    // half = 2
    x[i] = v;
  }
  for (int h = 1; h < 32; h *= 2) {  // half = 4 .. 64: whole registers
    for (int blk = 0; blk < 32; blk += 2 * h) {
      for (int i = blk; i < blk + h; ++i) {
        const float32x4_t a = x[i];
        const float32x4_t b = x[i + h];
        x[i] = vaddq_f32(a, b);
        x[i + h] = vsubq_f32(a, b);
      }
    }
  }
  const float32x4_t scale = vdupq_n_f32(1.0f / __builtin_sqrtf(float(kG)));  // as codec::fwht
  for (int i = 0; i < 32; ++i) x[i] = vmulq_f32(x[i], scale);
}

inline int16x8_t round_pair(float32x4_t a, float32x4_t b, float32x4_t inv) {
  const int32x4_t lo = vdupq_n_s32(-127), hi = vdupq_n_s32(127);
  const int32x4_t qa = vminq_s32(vmaxq_s32(vcvtaq_s32_f32(vmulq_f32(a, inv)), lo), hi);
  const int32x4_t qb = vminq_s32(vmaxq_s32(vcvtaq_s32_f32(vmulq_f32(b, inv)), lo), hi);
  return vcombine_s16(vmovn_s32(qa), vmovn_s32(qb));
}

inline void quantize_group(const float* src, int8_t* q, float* scale_out) {
  float32x4_t x[32];
  for (int i = 0; i < 32; ++i) x[i] = vld1q_f32(src + 4 * i);
  fwht128(x);
  float32x4_t m = vabsq_f32(x[0]);
  for (int i = 1; i < 32; ++i) m = vmaxq_f32(m, vabsq_f32(x[i]));
  const float absmax = vmaxvq_f32(m);
  const float s = absmax / 127.0f;
  const float inv = s > 0.0f ? 1.0f / s : 0.0f;
  const float32x4_t vinv = vdupq_n_f32(inv);
  for (int i = 0; i < 32; i += 4) {
    const int16x8_t ab = round_pair(x[i], x[i + 1], vinv);
    const int16x8_t cd = round_pair(x[i + 2], x[i + 3], vinv);
    vst1q_s8(q + 4 * i, vcombine_s8(vmovn_s16(ab), vmovn_s16(cd)));
  }
  *scale_out = s;
}

void quantize_activations(const float* x, uint32_t in, uint32_t count, QuantizedActivations& out) {
  quantize_activations_by_group<quantize_group>(x, in, count, out);
}

// ----------------------------------------------------------------------------
// Weight lookup: one group's packed bytes -> eight registers of 16 int8
// weights. Nibble indices (0..15) go through up to four 16-entry tbl tables
// derived from the code table (nibble_tables), so one index can serve several
// codes (a CQ2 nibble holds two crumbs, a CQ1 nibble four bits). Column order
// inside is whatever is cheapest; the activations are permuted to match by a
// layout derived from the unpacker itself.

struct Unpack1 {  // 16 bytes: bit k of byte j is column 8j + k
  static constexpr uint32_t kBits = 1;
  static constexpr size_t kBytes = 16;
  static void weights(const uint8_t* p, const int8x16_t t[4], int8x16_t w[8]) {
    const uint8x16_t b = vld1q_u8(p);
    const uint8x16_t lo = vandq_u8(b, vdupq_n_u8(0x0F));
    const uint8x16_t hi = vshrq_n_u8(b, 4);
    for (int k = 0; k < 4; ++k) {
      w[k] = vqtbl1q_s8(t[k], lo);
      w[k + 4] = vqtbl1q_s8(t[k], hi);
    }
  }
};

struct Unpack2 {  // 32 bytes: crumb k of byte j is column 4j + k (also ternary)
  static constexpr uint32_t kBits = 2;
  static constexpr size_t kBytes = 32;
  static void weights(const uint8_t* p, const int8x16_t t[4], int8x16_t w[8]) {
    for (int h = 0; h < 2; ++h) {
      const uint8x16_t b = vld1q_u8(p + 16 * h);
      const uint8x16_t lo = vandq_u8(b, vdupq_n_u8(0x0F));
      const uint8x16_t hi = vshrq_n_u8(b, 4);
      w[4 * h + 0] = vqtbl1q_s8(t[0], lo);
      w[4 * h + 1] = vqtbl1q_s8(t[1], lo);
      w[4 * h + 2] = vqtbl1q_s8(t[0], hi);
      w[4 * h + 3] = vqtbl1q_s8(t[1], hi);
    }
  }
};

struct Unpack3 {  // 48 bytes: 16 triplets of 3 bytes, each 8 indices of 3 bits
  static constexpr uint32_t kBits = 3;
  static constexpr size_t kBytes = 48;
  // Four 3-bit fields at bits 0, 3, 6, 9 of each 32-bit lane -> its bytes 0..3.
  static uint8x16_t spread4(uint32x4_t d) {
    const uint32x4_t a = vorrq_u32(vandq_u32(d, vdupq_n_u32(0x7)), vandq_u32(vshlq_n_u32(d, 5), vdupq_n_u32(0x700)));
    const uint32x4_t b = vorrq_u32(vandq_u32(vshlq_n_u32(d, 10), vdupq_n_u32(0x70000)),
                                   vandq_u32(vshlq_n_u32(d, 15), vdupq_n_u32(0x7000000)));
    return vreinterpretq_u8_u32(vorrq_u32(a, b));
  }
  static void weights(const uint8_t* p, const int8x16_t t[4], int8x16_t w[8]) {
    // Lane t of each chunk = one 24-bit triplet. The last chunk is loaded
    // from byte 32 (not 36) so no byte past the group is read.
    const uint8x16_t ctrl = {0, 1, 2, 0xFF, 3, 4, 5, 0xFF, 6, 7, 8, 0xFF, 9, 10, 11, 0xFF};
    const uint8x16_t ctrl_last = {4, 5, 6, 0xFF, 7, 8, 9, 0xFF, 10, 11, 12, 0xFF, 13, 14, 15, 0xFF};
    const uint32x4_t d[4] = {vreinterpretq_u32_u8(vqtbl1q_u8(vld1q_u8(p), ctrl)),
                             vreinterpretq_u32_u8(vqtbl1q_u8(vld1q_u8(p + 12), ctrl)),
                             vreinterpretq_u32_u8(vqtbl1q_u8(vld1q_u8(p + 24), ctrl)),
                             vreinterpretq_u32_u8(vqtbl1q_u8(vld1q_u8(p + 32), ctrl_last))};
    for (int h = 0; h < 4; ++h) {
      w[2 * h] = vqtbl1q_s8(t[0], spread4(d[h]));
      w[2 * h + 1] = vqtbl1q_s8(t[0], spread4(vshrq_n_u32(d[h], 12)));
    }
  }
};

struct Unpack4 {  // 64 bytes: low nibble even column, high nibble odd column
  static constexpr uint32_t kBits = 4;
  static constexpr size_t kBytes = 64;
  static void weights(const uint8_t* p, const int8x16_t t[4], int8x16_t w[8]) {
    for (int h = 0; h < 4; ++h) {
      const uint8x16_t b = vld1q_u8(p + 16 * h);
      w[2 * h] = vqtbl1q_s8(t[0], vandq_u8(b, vdupq_n_u8(0x0F)));
      w[2 * h + 1] = vqtbl1q_s8(t[0], vshrq_n_u8(b, 4));
    }
  }
};

// The lookup tables of a width (nibble_tables, simd_common.h) in q registers.
inline void tables_for(uint32_t index_bits, const int8_t e[16], int8x16_t t[4]) {
  const NibbleTables nt = nibble_tables(index_bits, e);
  for (int k = 0; k < 4; ++k) t[k] = vld1q_s8(nt.t[k]);
}

// The column order of an unpacker, derived by running it with the identity
// code table (entry = code), so the weights come out as the codes themselves.
template <class U>
GroupLayout layout_of() {
  return derive_group_layout<U::kBits>([](const uint8_t* packed, uint8_t* out) {
    int8_t identity[16];
    for (int n = 0; n < 16; ++n) identity[n] = int8_t(n);
    int8x16_t t[4], c[8];
    tables_for(U::kBits, identity, t);
    U::weights(packed, t, c);
    for (int k = 0; k < 8; ++k) vst1q_s8(reinterpret_cast<int8_t*>(out) + 16 * k, c[k]);
  });
}

// The activation permutation of a layout as tbl indices: output byte j of the
// group = source byte perm[j], looked up with TBL over the first 64 source
// bytes (index >= 64 gives 0) and TBX over the last 64 (index - 64; an
// out-of-range index keeps the TBL result): 16 instructions per group.
struct PermuteIndices {
  uint8_t lo[kG], hi[kG];
};

PermuteIndices indices_of(const GroupLayout& layout) {
  PermuteIndices pi{};
  for (uint32_t j = 0; j < kG; ++j) {
    const uint8_t col = layout.perm[j];
    pi.lo[j] = col < 64 ? col : 0xFF;
    pi.hi[j] = col >= 64 ? uint8_t(col - 64) : 0xFF;
  }
  return pi;
}

const PermuteIndices& indices_for(uint32_t index_bits) {
  static const PermuteIndices indices[4] = {indices_of(layout_of<Unpack1>()), indices_of(layout_of<Unpack2>()),
                                            indices_of(layout_of<Unpack3>()), indices_of(layout_of<Unpack4>())};
  return indices[index_bits - 1];
}

inline void permute_group(const PermuteIndices& pi, const int8_t* src, int8_t* dst) {
  int8x16x4_t lo, hi;
  lo.val[0] = vld1q_s8(src);
  lo.val[1] = vld1q_s8(src + 16);
  lo.val[2] = vld1q_s8(src + 32);
  lo.val[3] = vld1q_s8(src + 48);
  hi.val[0] = vld1q_s8(src + 64);
  hi.val[1] = vld1q_s8(src + 80);
  hi.val[2] = vld1q_s8(src + 96);
  hi.val[3] = vld1q_s8(src + 112);
  for (uint32_t j = 0; j < kG; j += 16) {
    const int8x16_t t = vqtbl4q_s8(lo, vld1q_u8(pi.lo + j));
    vst1q_s8(dst + j, vqtbx4q_s8(t, hi, vld1q_u8(pi.hi + j)));
  }
}

thread_local SimdScratch tls_scratch;

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

template <bool kDotprod>
inline int32x4_t dot_group(const int8x16_t w[8], const int8_t* a) {
  int32x4_t s0 = vdupq_n_s32(0), s1 = vdupq_n_s32(0);
  for (int k = 0; k < 8; k += 2) {
    s0 = dot16<kDotprod>(s0, w[k], vld1q_s8(a + 16 * k));
    s1 = dot16<kDotprod>(s1, w[k + 1], vld1q_s8(a + 16 * k + 16));
  }
  return vaddq_s32(s0, s1);
}

struct MatmulCtx {
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
void cq_tile(const MatmulCtx& c, uint32_t r0, uint32_t v0) {
  static_assert(R * V <= 8 && (R == 1 || R == 2 || R == 4 || R == 8));
  constexpr int P = R * V;
  const uint32_t groups = c.groups;
  const float* norms = c.norms + size_t(r0 - c.row_begin) * groups;
  float32x4_t acc_lo = vdupq_n_f32(0.0f), acc_hi = vdupq_n_f32(0.0f);
  for (uint32_t g = 0; g < groups; ++g) {
    int32x4_t dots[8];
    for (int l = P; l < 8; ++l) dots[l] = vdupq_n_s32(0);
    for (int r = 0; r < R; ++r) {
      int8x16_t w[8];
      U::weights(c.packed + size_t(r0 + r) * c.row_bytes + size_t(g) * U::kBytes, c.tables, w);
      for (int v = 0; v < V; ++v) {
        dots[v * R + r] = dot_group<kDotprod>(w, c.act + size_t(v0 + v) * c.in_pad + size_t(g) * kG);
      }
    }
    float32x4_t n_lo, n_hi, s_lo, s_hi;
    tile_norms<R>(norms + g, groups, n_lo, n_hi);
    tile_scales<R>(c.scales + g * c.scale_stride + v0, s_lo, s_hi);
    const int32x4_t lo = vpaddq_s32(vpaddq_s32(dots[0], dots[1]), vpaddq_s32(dots[2], dots[3]));
    acc_lo = vaddq_f32(acc_lo, vmulq_f32(vcvtq_f32_s32(lo), vmulq_f32(n_lo, s_lo)));
    if constexpr (P > 4) {
      const int32x4_t hi = vpaddq_s32(vpaddq_s32(dots[4], dots[5]), vpaddq_s32(dots[6], dots[7]));
      acc_hi = vaddq_f32(acc_hi, vmulq_f32(vcvtq_f32_s32(hi), vmulq_f32(n_hi, s_hi)));
    }
  }
  alignas(16) float res[8];
  const float32x4_t cbs = vdupq_n_f32(c.cb_scale);
  vst1q_f32(res, vmulq_f32(acc_lo, cbs));
  vst1q_f32(res + 4, vmulq_f32(acc_hi, cbs));
  for (int v = 0; v < V; ++v) {
    for (int r = 0; r < R; ++r) c.y[size_t(v0 + v) * c.y_stride + r0 + r] = res[v * R + r];
  }
}

// This ISA's tile for the shared tiling driver (simd_common.h).
template <bool kDotprod, class U>
struct Tiles {
  const MatmulCtx& c;
  template <int R, int V>
  void tile(uint32_t r, uint32_t v0) const {
    cq_tile<kDotprod, U, R, V>(c, r, v0);
  }
};

template <bool kDotprod, class U>
void cq_matmul_width(MatmulCtx& c, const int8_t table[16], uint32_t row_begin, uint32_t row_end, uint32_t count) {
  tables_for(U::kBits, table, c.tables);
  // L2 budget 64 KiB: each vector keeps its int8 activations.
  tile_matmul(Tiles<kDotprod, U>{c}, row_begin, row_end, count, uint32_t(64 * 1024 / (1 * size_t(c.in_pad))));
}

template <bool kDotprod>
void cq_matmul(const codec::CqMatrix& w, const Int8Codebook& cb, const QuantizedActivations& a, uint32_t row_begin,
               uint32_t row_end, float* y, size_t y_stride) {
  if (row_begin >= row_end || a.count == 0) return;
  if (!simd_matmul_ok(w, cb, a, /*no_minus128=*/!kDotprod)) {
    scalar_kernels().cq_matmul(w, cb, a, row_begin, row_end, y, y_stride);
    return;
  }
  const uint32_t iw = codec::index_bits(w.bits);
  const uint32_t groups = w.in_pad / kG;
  const size_t act_bytes = size_t(a.count) * w.in_pad;
  const size_t norm_count = size_t(row_end - row_begin) * groups;
  const size_t scale_bytes = size_t(groups) * scale_stride(a.count) * sizeof(float);
  auto* base = static_cast<uint8_t*>(
      tls_scratch.get(round_up64(act_bytes) + round_up64(norm_count * sizeof(float)) + scale_bytes));
  auto* act = reinterpret_cast<int8_t*>(base);
  auto* norms = reinterpret_cast<float*>(base + round_up64(act_bytes));
  auto* scales = reinterpret_cast<float*>(base + round_up64(act_bytes) + round_up64(norm_count * sizeof(float)));

  const PermuteIndices& pi = indices_for(iw);
  for (size_t off = 0; off < act_bytes; off += kG) permute_group(pi, activation_q(a) + off, act + off);
  // The norms of the row range are contiguous FP16: convert 4 at a time.
  const uint8_t* half = w.norms + 2 * size_t(row_begin) * groups;
  size_t i = 0;
  for (; i + 4 <= norm_count; i += 4) {
    vst1q_f32(norms + i, vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(half + 2 * i))));
  }
  for (; i < norm_count; ++i) norms[i] = load_norm(half, i);
  transpose_scales(a, scales);

  alignas(16) int8_t table[16];
  code_table(cb, w.bits, table);
  MatmulCtx c{};
  c.packed = w.packed;
  c.row_bytes = w.row_bytes;
  c.groups = groups;
  c.in_pad = w.in_pad;
  c.act = act;
  c.norms = norms;
  c.row_begin = row_begin;
  c.scales = scales;
  c.scale_stride = scale_stride(a.count);
  c.cb_scale = cb.scale;
  c.y = y;
  c.y_stride = y_stride;
  switch (iw) {
    case 1: cq_matmul_width<kDotprod, Unpack1>(c, table, row_begin, row_end, a.count); break;
    case 2: cq_matmul_width<kDotprod, Unpack2>(c, table, row_begin, row_end, a.count); break;
    case 3: cq_matmul_width<kDotprod, Unpack3>(c, table, row_begin, row_end, a.count); break;
    default: cq_matmul_width<kDotprod, Unpack4>(c, table, row_begin, row_end, a.count); break;
  }
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
