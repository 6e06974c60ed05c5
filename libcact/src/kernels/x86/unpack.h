#pragma once
// Packed indices to int8 weights: the unpackers of each width, their
// lookup tables, and the activation permutations that match their column
// order (pshufb programs).
#include "kernels/x86/common.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__)

namespace cact::kernels {

// The activation permutation of each unpacker's layout as a pshufb program:
// output register k (32 bytes) = OR over the 8 source chunks s (16 bytes, in
// both lanes) of pshufb(chunk s, m[k][s]); a mask byte of -128 zeroes the
// bytes that do not come from chunk s. About 70 instructions per group instead
// of a 128-byte scalar gather. The one exception to the internal-linkage rule
// (common.h): built once, in avx2.cpp (AVX2 + F16C code, which every x86 table
// requires), as the programs are the same for every table.
namespace x86_shared {
struct PermuteMasks {
  alignas(32) int8_t m[4][8][32];
};
const PermuteMasks& masks_for(uint32_t index_bits);  // index_bits 1..4
}  // namespace x86_shared

namespace {
namespace x86 {

using x86_shared::masks_for;
using x86_shared::PermuteMasks;

// ----------------------------------------------------------------------------
// Index unpacking and weight lookup. Each unpacker turns one group's packed
// bytes straight into four registers of 32 int8 weights: nibble indices
// (0..15) go through up to four 16-entry pshufb tables derived from the code
// table (nibble_tables), so one index can serve several codes (a CQ2 nibble
// holds two crumbs, a CQ1 nibble four bits). The order of columns inside
// those registers is whatever is cheapest for the width; the matching
// permutation of the activations is derived once by running the unpacker
// itself (derive_group_layout), so the two can never disagree.

inline __m256i broadcast_table(const int8_t t[16]) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
}

// The few operations the nibble lookups need, for 256-bit and (in the
// avx512-vnni table) 512-bit registers, so one decode serves both widths.
inline __m256i vand(__m256i a, __m256i b) { return _mm256_and_si256(a, b); }
inline __m256i vsrl4(__m256i a) { return _mm256_srli_epi16(a, 4); }
inline __m256i vlookup(__m256i table, __m256i idx) { return _mm256_shuffle_epi8(table, idx); }
inline __m256i vlow_nibbles(__m256i) { return _mm256_set1_epi8(0x0F); }
#if defined(__AVX512F__) && defined(__AVX512BW__)
inline __m512i vand(__m512i a, __m512i b) { return _mm512_and_si512(a, b); }
inline __m512i vsrl4(__m512i a) { return _mm512_srli_epi16(a, 4); }
inline __m512i vlookup(__m512i table, __m512i idx) { return _mm512_shuffle_epi8(table, idx); }
inline __m512i vlow_nibbles(__m512i) { return _mm512_set1_epi8(0x0F); }
#endif

struct Unpack1 {  // 16 bytes: bit k of byte j is column 8j + k
  static constexpr uint32_t kBits = 1, kBytes = 16;
  // nib: low nibbles (bits 0..3 of byte j) in the low 128-bit lane(s), high nibbles in the high ones.
  template <class V>
  static void decode(V nib, const V t[4], V w[4]) {
    for (int k = 0; k < 4; ++k) w[k] = vlookup(t[k], nib);
  }
  static void weights(const uint8_t* p, const __m256i t[4], __m256i w[4]) {
    const __m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    decode(vand(_mm256_srlv_epi32(b, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), vlow_nibbles(b)), t, w);
  }
};

struct Unpack2 {  // 32 bytes: crumb k of byte j is column 4j + k (also ternary)
  static constexpr uint32_t kBits = 2, kBytes = 32;
  template <class V>
  static void decode(V b, const V t[4], V w[4]) {
    const V lo = vand(b, vlow_nibbles(b));
    const V hi = vand(vsrl4(b), vlow_nibbles(b));
    w[0] = vlookup(t[0], lo);
    w[1] = vlookup(t[1], lo);
    w[2] = vlookup(t[0], hi);
    w[3] = vlookup(t[1], hi);
  }
  static void weights(const uint8_t* p, const __m256i t[4], __m256i w[4]) {
    decode(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), t, w);
  }
};

struct Unpack3 {  // 48 bytes: 16 triplets of 3 bytes, each 8 indices of 3 bits
  static constexpr uint32_t kBits = 3, kBytes = 48;
  // Four 3-bit fields at bits 0, 3, 6, 9 of each dword -> bytes 0..3.
  static __m256i spread4(__m256i d) {
    const __m256i m0 = _mm256_set1_epi32(0x7);
    const __m256i m1 = _mm256_set1_epi32(0x700);
    const __m256i m2 = _mm256_set1_epi32(0x70000);
    const __m256i m3 = _mm256_set1_epi32(0x7000000);
    const __m256i a = _mm256_or_si256(_mm256_and_si256(d, m0), _mm256_and_si256(_mm256_slli_epi32(d, 5), m1));
    const __m256i b =
        _mm256_or_si256(_mm256_and_si256(_mm256_slli_epi32(d, 10), m2), _mm256_and_si256(_mm256_slli_epi32(d, 15), m3));
    return _mm256_or_si256(a, b);
  }
  static void weights(const uint8_t* p, const __m256i t[4], __m256i w[4]) {
    // Dword t of each 128-bit lane = one 24-bit triplet. The last lane is
    // loaded from byte 32 (not 36) so no byte past the group is read.
    const __m256i ctrl_a = _mm256_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1,  //
                                            0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1);
    const __m256i ctrl_b = _mm256_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1,  //
                                            4, 5, 6, -1, 7, 8, 9, -1, 10, 11, 12, -1, 13, 14, 15, -1);
    auto load16 = [](const uint8_t* q) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q)); };
    const __m256i ra = _mm256_set_m128i(load16(p + 12), load16(p));
    const __m256i rb = _mm256_set_m128i(load16(p + 32), load16(p + 24));
    const __m256i da = _mm256_shuffle_epi8(ra, ctrl_a);
    const __m256i db = _mm256_shuffle_epi8(rb, ctrl_b);
    w[0] = _mm256_shuffle_epi8(t[0], spread4(da));
    w[1] = _mm256_shuffle_epi8(t[0], spread4(_mm256_srli_epi32(da, 12)));
    w[2] = _mm256_shuffle_epi8(t[0], spread4(db));
    w[3] = _mm256_shuffle_epi8(t[0], spread4(_mm256_srli_epi32(db, 12)));
  }
};

struct Unpack4 {  // 64 bytes: low nibble even column, high nibble odd column
  static constexpr uint32_t kBits = 4, kBytes = 64;
  template <class V>
  static void decode(V lo, V hi, const V t[4], V w[4]) {
    w[0] = vlookup(t[0], vand(lo, vlow_nibbles(lo)));
    w[1] = vlookup(t[0], vand(vsrl4(lo), vlow_nibbles(lo)));
    w[2] = vlookup(t[0], vand(hi, vlow_nibbles(hi)));
    w[3] = vlookup(t[0], vand(vsrl4(hi), vlow_nibbles(hi)));
  }
  static void weights(const uint8_t* p, const __m256i t[4], __m256i w[4]) {
    decode(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32)), t, w);
  }
};

// The lookup tables of a width in 256-bit registers (each 16-entry table in both lanes).
inline void tables_for(uint32_t index_bits, const int8_t e[16], __m256i t[4]) {
  const NibbleTables nt = nibble_tables(index_bits, e);
  for (int k = 0; k < 4; ++k) t[k] = broadcast_table(nt.t[k]);
}

// The column order of an unpacker, derived by running it with the identity
// code table (entry = code), so the weights come out as the codes themselves.
template <class U>
[[gnu::cold]] GroupLayout layout_of() {
  return derive_group_layout<U::kBits>([](const uint8_t* packed, uint8_t* out) {
    int8_t identity[16];
    for (int n = 0; n < 16; ++n) identity[n] = int8_t(n);
    __m256i t[4], c[4];
    tables_for(U::kBits, identity, t);
    U::weights(packed, t, c);
    for (int k = 0; k < 4; ++k) _mm256_store_si256(reinterpret_cast<__m256i*>(out + 32 * k), c[k]);
  });
}

#if defined(CACT_X86_SHARED_DEFINITIONS)
[[gnu::cold]] PermuteMasks masks_of(const GroupLayout& layout) {
  PermuteMasks pm{};
  for (int k = 0; k < 4; ++k) {
    for (int s = 0; s < 8; ++s) {
      for (int j = 0; j < 32; ++j) {
        const int col = layout.perm[32 * k + j];
        pm.m[k][s][j] = int8_t(col / 16 == s ? col % 16 : -128);
      }
    }
  }
  return pm;
}
#endif

// Permute one group of activations into the unpacker's order (`dst`, 128
// bytes); with `dst_abs` also store |a| there (the AVX2 dot's unsigned operand).
inline void permute_group(const PermuteMasks& pm, const int8_t* src, int8_t* dst, uint8_t* dst_abs) {
  __m256i chunk[8];
  for (int s = 0; s < 8; ++s) {
    chunk[s] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16 * s)));
  }
  for (int k = 0; k < 4; ++k) {
    __m256i o = _mm256_setzero_si256();
    for (int s = 0; s < 8; ++s) {
      const __m256i m = _mm256_load_si256(reinterpret_cast<const __m256i*>(pm.m[k][s]));
      o = _mm256_or_si256(o, _mm256_shuffle_epi8(chunk[s], m));
    }
    _mm256_store_si256(reinterpret_cast<__m256i*>(dst + 32 * k), o);
    if (dst_abs != nullptr) _mm256_store_si256(reinterpret_cast<__m256i*>(dst_abs + 32 * k), _mm256_abs_epi8(o));
  }
}

// 128 * (sum of one group's 128 activations): the correction of the biased
// VNNI dot. sad_epu8 of a ^ 0x80 (= a + 128 as u8) sums 8 bytes at a time.
inline int32_t bias_correction(const int8_t* src) {
  const __m256i flip = _mm256_set1_epi8(-128);
  __m256i sum = _mm256_setzero_si256();
  for (int k = 0; k < 4; ++k) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32 * k));
    sum = _mm256_add_epi64(sum, _mm256_sad_epu8(_mm256_xor_si256(x, flip), _mm256_setzero_si256()));
  }
  __m128i t = _mm_add_epi64(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
  t = _mm_add_epi64(t, _mm_unpackhi_epi64(t, t));
  return 128 * (_mm_cvtsi128_si32(t) - 128 * 128);
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
// The same program on zmm registers (avx512-vnni): output register h holds
// blocks 2h and 2h + 1, the source chunks are broadcast to all four 128-bit
// lanes; 16 vpshufb instead of 32 per group.
struct PermuteMasks512 {
  alignas(64) int8_t m[2][8][64];
};

// (Unused in avx512_amx.cpp, which calls the avx512-vnni table for these products.)
[[maybe_unused]] const PermuteMasks512& masks512_for(uint32_t index_bits) {
  const auto widen = [](const PermuteMasks& pm) {
    PermuteMasks512 w{};
    for (int h = 0; h < 2; ++h) {
      for (int src = 0; src < 8; ++src) {
        for (int j = 0; j < 64; ++j) w.m[h][src][j] = pm.m[2 * h + j / 32][src][j % 32];
      }
    }
    return w;
  };
  static const PermuteMasks512 masks[4] = {widen(masks_for(1)), widen(masks_for(2)), widen(masks_for(3)),
                                           widen(masks_for(4))};
  return masks[index_bits - 1];
}

inline void permute_group512(const PermuteMasks512& pm, const int8_t* src, int8_t* dst, size_t block_stride) {
  __m512i chunk[8];
  for (int c = 0; c < 8; ++c)
    chunk[c] = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16 * c)));
  for (int h = 0; h < 2; ++h) {
    __m512i o = _mm512_setzero_si512();
    for (int c = 0; c < 8; ++c) o = _mm512_or_si512(o, _mm512_shuffle_epi8(chunk[c], _mm512_load_si512(pm.m[h][c])));
    int8_t* out = dst + block_stride * size_t(2 * h);
    if (block_stride == 32) {
      _mm512_store_si512(out, o);
    } else {
      _mm256_store_si256(reinterpret_cast<__m256i*>(out), _mm512_castsi512_si256(o));
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + block_stride), _mm512_extracti64x4_epi64(o, 1));
    }
  }
}
#endif

}  // namespace x86
}  // namespace

#if defined(CACT_X86_SHARED_DEFINITIONS)
// (cold: the statics are derived once; the compiler optimises it for size)
[[gnu::cold]] const x86_shared::PermuteMasks& x86_shared::masks_for(uint32_t index_bits) {
  static const PermuteMasks masks[4] = {
      x86::masks_of(x86::layout_of<x86::Unpack1>()), x86::masks_of(x86::layout_of<x86::Unpack2>()),
      x86::masks_of(x86::layout_of<x86::Unpack3>()), x86::masks_of(x86::layout_of<x86::Unpack4>())};
  return masks[index_bits - 1];
}
#endif

}  // namespace cact::kernels

#endif  // x86-64 with AVX2 + F16C
