#pragma once
// Packed indices to int8 weights: the unpackers of each width, their tbl
// lookup tables, and the activation permutations matching their column order.
#include "kernels/arm/common.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

namespace cact::kernels {
namespace {
namespace neon {

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
  [[gnu::always_inline]] static void weights(const uint8_t* p, const int8x16_t t[4], int8x16_t w[8]) {
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
  [[gnu::always_inline]] static void weights(const uint8_t* p, const int8x16_t t[4], int8x16_t w[8]) {
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
  [[gnu::always_inline]] static void weights(const uint8_t* p, const int8x16_t t[4], int8x16_t w[8]) {
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
  [[gnu::always_inline]] static void weights(const uint8_t* p, const int8x16_t t[4], int8x16_t w[8]) {
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

}  // namespace neon
}  // namespace
}  // namespace cact::kernels

#endif  // aarch64 NEON
