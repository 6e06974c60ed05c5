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
inline int32x4_t dot_group_regs(const int8x16_t w[8], const int8x16_t a[8]) {
  int32x4_t s = vdupq_n_s32(0);
  for (int k = 0; k < 8; ++k) s = dot16<kDotprod>(s, w[k], a[k]);
  return s;
}

template <bool kDotprod>
inline int32x4_t dot_group(const int8x16_t w[8], const int8_t* a) {
  int8x16_t x[8];
  for (int k = 0; k < 8; ++k) x[k] = vld1q_s8(a + 16 * k);
  return dot_group_regs<kDotprod>(w, x);
}

// Tells GCC that `p` depends on `v` (no instruction is emitted), so its
// scheduler places loads through `p` after `v`'s computation.
inline void after(const uint8_t*& p, int32x4_t v) { __asm__("" : "+r"(p) : "w"(v)); }

// The float norms of a row range, blocked: rows in blocks of kNormBlock, each
// block [group][row in block], so a tile's norms of one group are adjacent
// (one or two vector loads). The lanes of a last block's missing rows hold
// copies (no tile reads them).
constexpr uint32_t kNormBlock = 8;

inline size_t blocked_norm_count(uint32_t rows, uint32_t groups) {
  return size_t((rows + kNormBlock - 1) / kNormBlock) * kNormBlock * groups;
}

// Where row `r` (of the range) starts: its norm of group g is g * kNormBlock on.
inline size_t blocked_norm_offset(uint32_t r, uint32_t groups) {
  return size_t(r / kNormBlock) * kNormBlock * groups + r % kNormBlock;
}

inline float load_norm(const uint8_t* half, size_t i) {
  uint16_t h;
  std::memcpy(&h, half + 2 * i, 2);
  return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

// x[i] lane j -> x[j] lane i.
inline void transpose4(float32x4_t x[4]) {
  const float64x2_t t0 = vreinterpretq_f64_f32(vtrn1q_f32(x[0], x[1]));
  const float64x2_t t1 = vreinterpretq_f64_f32(vtrn2q_f32(x[0], x[1]));
  const float64x2_t t2 = vreinterpretq_f64_f32(vtrn1q_f32(x[2], x[3]));
  const float64x2_t t3 = vreinterpretq_f64_f32(vtrn2q_f32(x[2], x[3]));
  x[0] = vreinterpretq_f32_f64(vtrn1q_f64(t0, t2));
  x[1] = vreinterpretq_f32_f64(vtrn1q_f64(t1, t3));
  x[2] = vreinterpretq_f32_f64(vtrn2q_f64(t0, t2));
  x[3] = vreinterpretq_f32_f64(vtrn2q_f64(t1, t3));
}

// A whole block of 8 rows of at most 8 groups is 16 * groups contiguous bytes
// (at most 128): `groups` vector loads, then per group one table lookup over
// the first 64 bytes and one over the rest (tbx keeps the lanes whose index
// is past them) gather its 8 halves in row order, converted in two halves.
struct NarrowBlock {
  uint8x16_t index[kNormBlock];  // group g: bytes 2(r·groups + g), +1 for r = 0..7
  uint8x16_t high[kNormBlock];   // index − 64: the same bytes in the upper four registers
};

inline NarrowBlock narrow_block(uint32_t groups) {
  NarrowBlock b{};
  for (uint32_t g = 0; g < groups; ++g) {
    uint8_t bytes[16];
    for (uint32_t r = 0; r < kNormBlock; ++r) {
      bytes[2 * r] = uint8_t(2 * (r * groups + g));
      bytes[2 * r + 1] = uint8_t(2 * (r * groups + g) + 1);
    }
    b.index[g] = vld1q_u8(bytes);
    b.high[g] = vsubq_u8(b.index[g], vdupq_n_u8(64));
  }
  return b;
}

inline void narrow_block_norms(const uint8_t* p, uint32_t groups, const NarrowBlock& b, float* o) {
  // Exactly `groups` loads (no byte past the block), spelled out: a loop
  // made GCC assemble the tables on the stack with a memcpy.
  const uint8x16_t z = vdupq_n_u8(0);
  uint8x16x4_t lo = {{z, z, z, z}}, hi = lo;
  switch (groups) {
    case 8:
      hi.val[3] = vld1q_u8(p + 112);
      [[fallthrough]];
    case 7:
      hi.val[2] = vld1q_u8(p + 96);
      [[fallthrough]];
    case 6:
      hi.val[1] = vld1q_u8(p + 80);
      [[fallthrough]];
    case 5:
      hi.val[0] = vld1q_u8(p + 64);
      [[fallthrough]];
    case 4:
      lo.val[3] = vld1q_u8(p + 48);
      [[fallthrough]];
    case 3:
      lo.val[2] = vld1q_u8(p + 32);
      [[fallthrough]];
    case 2:
      lo.val[1] = vld1q_u8(p + 16);
      [[fallthrough]];
    default:
      lo.val[0] = vld1q_u8(p);
  }
  for (uint32_t g = 0; g < groups; ++g, o += kNormBlock) {
    uint8x16_t h = vqtbl4q_u8(lo, b.index[g]);
    if (groups > 4) h = vqtbx4q_u8(h, hi, b.high[g]);
    const float16x8_t f = vreinterpretq_f16_u8(h);
    vst1q_f32(o, vcvt_f32_f16(vget_low_f16(f)));
    vst1q_f32(o + 4, vcvt_high_f32_f16(f));
  }
}

// `rows` x `groups` FP16 norms ([row][group], as stored) -> the blocked
// layout. Whole blocks of at most 8 groups (needle3's 768 columns are 6) by
// narrow_block_norms; otherwise 8 rows x 4 groups at a time (converted, then
// two 4 x 4 transposes), then 2 groups at a time, the rest one by one.
inline void blocked_norms(const uint8_t* half, uint32_t rows, uint32_t groups, float* out) {
  const bool narrow = groups <= kNormBlock;
  const NarrowBlock nb = narrow ? narrow_block(groups) : NarrowBlock{};
  // Row r of a block at byte offset off[r] from the block's current norm (one
  // pointer steps through the groups); a last block's missing rows read its
  // first row again.
  size_t off[kNormBlock];
  for (uint32_t r = 0; r < kNormBlock; ++r) off[r] = 2 * size_t(r) * groups;
  for (uint32_t r0 = 0; r0 < rows; r0 += kNormBlock, out += size_t(kNormBlock) * groups) {
    if (narrow && rows - r0 >= kNormBlock) {
      narrow_block_norms(half + 2 * size_t(r0) * groups, groups, nb, out);
      continue;
    }
    if (rows - r0 < kNormBlock) {
      for (uint32_t r = rows - r0; r < kNormBlock; ++r) off[r] = 0;
    }
    const uint8_t* p = half + 2 * size_t(r0) * groups;
    float* o = out;
    uint32_t g = 0;
    for (; g + 4 <= groups; g += 4, p += 8, o += 4 * kNormBlock) {
      float32x4_t x[8];
      for (uint32_t r = 0; r < kNormBlock; ++r) x[r] = vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p + off[r])));
      transpose4(x);
      transpose4(x + 4);
      for (uint32_t j = 0; j < 4; ++j) {
        vst1q_f32(o + j * kNormBlock, x[j]);
        vst1q_f32(o + j * kNormBlock + 4, x[4 + j]);
      }
    }
    for (; g + 2 <= groups; g += 2, p += 4, o += 2 * kNormBlock) {
      // Rows r, r + 1: their two norms as one 4-half vector, converted:
      // (r g, r g+1, r+1 g, r+1 g+1); uzp1/uzp2 of two such take group g / g + 1.
      float32x4_t x[4];
      for (uint32_t k = 0; k < 4; ++k) {
        uint32_t even, odd;  // (2-byte aligned)
        std::memcpy(&even, p + off[2 * k], 4);
        std::memcpy(&odd, p + off[2 * k + 1], 4);
        x[k] = vcvt_f32_f16(vreinterpret_f16_u32(vset_lane_u32(odd, vdup_n_u32(even), 1)));
      }
      vst1q_f32(o, vuzp1q_f32(x[0], x[1]));
      vst1q_f32(o + 4, vuzp1q_f32(x[2], x[3]));
      vst1q_f32(o + kNormBlock, vuzp2q_f32(x[0], x[1]));
      vst1q_f32(o + kNormBlock + 4, vuzp2q_f32(x[2], x[3]));
    }
    for (; g < groups; ++g, p += 2, o += kNormBlock) {
      for (uint32_t r = 0; r < kNormBlock; ++r) o[r] = load_norm(p + off[r], 0);
    }
  }
}

struct CqMatmulJob {
  const uint8_t* packed;
  size_t row_bytes;
  uint32_t groups, in_pad;
  const int8_t* act;   // permuted activations, [count][in_pad]
  const float* norms;  // float norms of rows [row_begin, row_end), blocked_norms' layout
  uint32_t row_begin;
  const float* scales;  // activation scales, [groups][scale_stride(count)]
  size_t scale_stride;
  int8x16_t tables[4];  // the unpacker's lookup tables
  float cb_scale;
  float* y;
  size_t y_stride;
};

// Norms of lanes 0..3 (lo) and 4..7 (hi), lane l = v*R + r -> row l % R;
// `n` points at row r0's norm of the current group in the blocked layout
// (blocked_norms: the tile's rows are adjacent).
template <int R>
inline void tile_norms(const float* n, float32x4_t& lo, float32x4_t& hi) {
  if constexpr (R == 1) {
    lo = hi = vld1q_dup_f32(n);
  } else if constexpr (R == 2) {
    const float32x2_t t = vld1_f32(n);
    lo = hi = vcombine_f32(t, t);
  } else {
    lo = hi = vld1q_f32(n);
    if constexpr (R == 8) hi = vld1q_f32(n + 4);
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
// Not inlined: inlined into cq_matmul, GCC compiles the multi-vector tiles
// into more instructions.
template <bool kDotprod, class U, int R, int V>
[[gnu::noinline]] void cq_tile(const CqMatmulJob& job, uint32_t r0, uint32_t v0) {
  static_assert(R * V <= 8 && (R == 1 || R == 2 || R == 4 || R == 8));
  constexpr int P = R * V;
  // The job's fields as locals: `after` below would make GCC reload them.
  const uint32_t groups = job.groups, in_pad = job.in_pad;
  const size_t row_bytes = job.row_bytes;
  const uint8_t* const packed = job.packed + size_t(r0) * row_bytes;
  const int8_t* const act = job.act + size_t(v0) * in_pad;
  int8x16_t tables[4];
  for (int k = 0; k < 4; ++k) tables[k] = job.tables[k];
  const float* norms = job.norms + blocked_norm_offset(r0 - job.row_begin, groups);
  const float* const scales = job.scales + v0;
  const size_t scale_stride = job.scale_stride;
  float32x4_t acc_lo = vdupq_n_f32(0.0f), acc_hi = vdupq_n_f32(0.0f);
  for (uint32_t g = 0; g < groups; ++g) {
    // Lane l = v*R + r of the tile's dots in lo (0..3) and hi (4..7).
    int32x4_t lo, hi = vdupq_n_s32(0);
    if constexpr (V == 1 && R >= 2) {
      int8x16_t a[8];
      for (int k = 0; k < 8; ++k) a[k] = vld1q_s8(act + size_t(g) * kG + 16 * k);
      // Two rows at a time, folded. GCC's scheduler would hoist every row's
      // weight loads to the top of the group and spill, so a pair's loads
      // wait for the pair kAhead before it: per width, the better of 1 and 2
      // in llvm-mca's in-order Cortex-A55 model (bench/mca_neon.sh).
      constexpr int kAhead = U::kBits == 2 || U::kBits == 3 ? 1 : 2;
      const uint8_t* row = packed;
      const auto pair = [&](int r) {
        int8x16_t w[8];
        U::weights(row + size_t(r) * row_bytes + size_t(g) * U::kBytes, tables, w);
        const int32x4_t d0 = dot_group_regs<kDotprod>(w, a);
        U::weights(row + size_t(r + 1) * row_bytes + size_t(g) * U::kBytes, tables, w);
        return vpaddq_s32(d0, dot_group_regs<kDotprod>(w, a));
      };
      const int32x4_t p0 = pair(0);
      if constexpr (R == 2) {
        lo = vpaddq_s32(p0, vdupq_n_s32(0));
      } else {
        if constexpr (kAhead == 1) after(row, p0);
        const int32x4_t p1 = pair(2);
        lo = vpaddq_s32(p0, p1);
        if constexpr (R == 8) {
          after(row, kAhead == 1 ? p1 : p0);
          const int32x4_t p2 = pair(4);
          after(row, kAhead == 1 ? p2 : p1);
          hi = vpaddq_s32(p2, pair(6));
        }
      }
    } else {
      int32x4_t dots[8];
      for (int l = P; l < 8; ++l) dots[l] = vdupq_n_s32(0);
      if constexpr (R == 2) {
        // Both rows' weights in registers, so each activation load feeds two
        // SDOT chains (loaded per row, the 8 x V loads came twice).
        int8x16_t w0[8], w1[8];
        U::weights(packed + size_t(g) * U::kBytes, tables, w0);
        U::weights(packed + row_bytes + size_t(g) * U::kBytes, tables, w1);
        for (int v = 0; v < V; ++v) {
          const int8_t* av = act + size_t(v) * in_pad + size_t(g) * kG;
          int32x4_t s0 = vdupq_n_s32(0), s1 = vdupq_n_s32(0);
          for (int k = 0; k < 8; ++k) {
            const int8x16_t x = vld1q_s8(av + 16 * k);
            s0 = dot16<kDotprod>(s0, w0[k], x);
            s1 = dot16<kDotprod>(s1, w1[k], x);
          }
          dots[2 * v] = s0;
          dots[2 * v + 1] = s1;
        }
      } else {
        for (int r = 0; r < R; ++r) {
          int8x16_t w[8];
          U::weights(packed + size_t(r) * row_bytes + size_t(g) * U::kBytes, tables, w);
          for (int v = 0; v < V; ++v)
            dots[v * R + r] = dot_group<kDotprod>(w, act + size_t(v) * in_pad + size_t(g) * kG);
        }
      }
      lo = vpaddq_s32(vpaddq_s32(dots[0], dots[1]), vpaddq_s32(dots[2], dots[3]));
      if constexpr (P > 4) hi = vpaddq_s32(vpaddq_s32(dots[4], dots[5]), vpaddq_s32(dots[6], dots[7]));
    }
    float32x4_t n_lo, n_hi, s_lo, s_hi;
    tile_norms<R>(norms + size_t(g) * kNormBlock, n_lo, n_hi);
    tile_scales<R>(scales + g * scale_stride, s_lo, s_hi);
    acc_lo = vaddq_f32(acc_lo, vmulq_f32(vcvtq_f32_s32(lo), vmulq_f32(n_lo, s_lo)));
    if constexpr (P > 4) acc_hi = vaddq_f32(acc_hi, vmulq_f32(vcvtq_f32_s32(hi), vmulq_f32(n_hi, s_hi)));
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
