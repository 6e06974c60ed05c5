#pragma once
// The x86-64 kernels, instantiated three times with different ISA flags
// (libcact/kernels.cmake), each reached only through dispatch.cpp after a
// CPU check, so nothing here may run on a CPU without those features:
//   avx2.cpp         -mavx2 -mf16c                                 "avx2"
//   avx_vnni.cpp     -mavx2 -mf16c -mavxvnni                      "avx-vnni"
//   avx512_vnni.cpp  -mavx2 -mf16c -mavx512{f,bw,vl,vnni}         "avx512-vnni"
// avx-vnni differs from avx2 in the group dot (VPDPBUSD on +128-biased
// weights instead of VPSIGNB + VPMADDUBSW + VPMADDWD + VPADDD); avx512-vnni
// runs the same dot on 512-bit tiles (two rows per zmm).
//
// Rules (these translation units are built with ISA flags the baseline
// lacks): everything has internal linkage (anonymous namespace), and no
// std:: template another translation unit could also instantiate is used
// (no std::vector, std::max, ...): the linker keeps one copy of such a weak
// symbol, and an AVX2-compiled copy could then be called from the scalar
// path. The only external definition of each TU is its constant-initialised
// table. scripts/test_aarch64.sh audits the objects at -O0.
//
// Design and exactness: docs/KERNELS.md.
#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__)

#include <immintrin.h>

#include <cstring>

#include "cact/codec.h"
#include "cact/kernels.h"
#include "kernels/scalar.h"
#include "kernels/simd_common.h"

namespace cact::kernels {

// The activation permutation of each unpacker's layout as a pshufb program:
// output register k (32 bytes) = OR over the 8 source chunks s (16 bytes, in
// both lanes) of pshufb(chunk s, m[k][s]); a mask byte of -128 zeroes the
// bytes that do not come from chunk s. About 70 instructions per group instead
// of a 128-byte scalar gather. The one exception to the internal-linkage rule
// above: built once, in avx2.cpp (AVX2 + F16C code, which every x86 table
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

// Which instruction computes the group dot.
// kAvx512Vnni: cq_matmul runs the 512-bit tiles below.
enum class Dot { kAvx2, kAvxVnni, kAvx512Vnni };

constexpr uint32_t kG = codec::kGroup;  // 128 lanes per group, 4 blocks of 32

// ----------------------------------------------------------------------------
// Activations: FWHT + absmax + round half away from zero, bit-identical to
// quantize_group_scalar (same butterfly pairs, same stage order, same scale).

// One butterfly stage inside each register: lanes whose `mask` bit is set are
// the upper element b of a pair (a, b) and become a - b; the others a + b.
template <int kMask>
inline __m256 butterfly_in_register(__m256 v, __m256 swapped) {
  return _mm256_blend_ps(_mm256_add_ps(v, swapped), _mm256_sub_ps(swapped, v), kMask);
}

inline void fwht128(__m256 x[16]) {
  for (int i = 0; i < 16; ++i) {
    __m256 v = x[i];
    v = butterfly_in_register<0xAA>(v, _mm256_permute_ps(v, 0xB1));        // half = 1
    v = butterfly_in_register<0xCC>(v, _mm256_permute_ps(v, 0x4E));        // half = 2
    v = butterfly_in_register<0xF0>(v, _mm256_permute2f128_ps(v, v, 0x01));  // half = 4
    x[i] = v;
  }
  for (int h = 1; h < 16; h *= 2) {  // half = 8 .. 64: whole registers
    for (int blk = 0; blk < 16; blk += 2 * h) {
      for (int i = blk; i < blk + h; ++i) {
        const __m256 a = x[i];
        const __m256 b = x[i + h];
        x[i] = _mm256_add_ps(a, b);
        x[i + h] = _mm256_sub_ps(a, b);
      }
    }
  }
  const __m256 scale = _mm256_set1_ps(1.0f / __builtin_sqrtf(float(kG)));  // as codec::fwht;
  for (int i = 0; i < 16; ++i) x[i] = _mm256_mul_ps(x[i], scale);
}

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// Round half away from zero (std::lround) and clamp to [-127, 127]; y finite.
// Exact, in four steps (V = __m256 / __m512 through the overloads below):
//  1. clamp y to [-127, 127] first: lround is monotone and fixes the integers
//     +-127, so lround(clamp(y)) = clamp(lround(y)) (y > 127 gives 127 both
//     ways, likewise below -127). Now |y| <= 127 < 2^23.
//  2. t = trunc(y) as int32 (cvtt, exact), tf = float(t) (exact, |t| <= 127).
//  3. f = y - tf is exact: tf and y have the same sign and |tf| <= |y|; for
//     |y| >= 1, |y|/2 <= |tf| <= |y| (Sterbenz), and for |y| < 1, tf = 0.
//     So |f| < 1 with the sign of y (or f = 0), and f + f is exact.
//  4. trunc(f + f) = sign(y) if |f| >= 0.5, else 0; lround(y) = t + that.
// Ties (|f| = 0.5 exactly) go away from zero; 0.49999997f gives 0 (its
// doubling 0.99999994f truncates to 0) -- the case y + 0.5 gets wrong.
// 8 operations per register instead of 11 (trunc, |f|, copysign, compare,
// and, add, min, max, convert).
inline __m256i round_clamp(__m256 y) {
  y = _mm256_min_ps(_mm256_max_ps(y, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
  const __m256i t = _mm256_cvttps_epi32(y);
  const __m256 f = _mm256_sub_ps(y, _mm256_cvtepi32_ps(t));
  return _mm256_add_epi32(t, _mm256_cvttps_epi32(_mm256_add_ps(f, f)));
}

void quantize_group(const float* src, int8_t* q, float* scale_out) {
  __m256 x[16];
  for (int i = 0; i < 16; ++i) x[i] = _mm256_loadu_ps(src + 8 * i);
  fwht128(x);
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_andnot_ps(sign_bit, x[0]);
  for (int i = 1; i < 16; ++i) m = _mm256_max_ps(m, _mm256_andnot_ps(sign_bit, x[i]));
  const float absmax = hmax(m);
  const float s = absmax / 127.0f;
  const float inv = s > 0.0f ? 1.0f / s : 0.0f;
  const __m256 vinv = _mm256_set1_ps(inv);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int i = 0; i < 16; i += 4) {
    const __m256i a = round_clamp(_mm256_mul_ps(x[i], vinv));
    const __m256i b = round_clamp(_mm256_mul_ps(x[i + 1], vinv));
    const __m256i c = round_clamp(_mm256_mul_ps(x[i + 2], vinv));
    const __m256i d = round_clamp(_mm256_mul_ps(x[i + 3], vinv));
    const __m256i abcd = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 8 * i), _mm256_permutevar8x32_epi32(abcd, order));
  }
  *scale_out = s;
}

[[maybe_unused]] void quantize_activations(const float* x, uint32_t in, uint32_t count, QuantizedActivations& out) {
  quantize_activations_by_group<quantize_group>(x, in, count, out);
}

// dequantize_row: per group, codebook[index] * norm (vpermps on the codebook's
// first and last 8 entries, blended by index > 7), then fwht128: the scalar
// table's operations lane by lane. (The avx512-vnni table has its own below.)
[[maybe_unused]] void dequantize_row(const codec::CqMatrix& w, const float* codebook, uint32_t r, float* out) {
  alignas(32) float entries[16] = {};
  std::memcpy(entries, codebook, codec::levels(w.bits) * sizeof(float));
  const __m256 low = _mm256_load_ps(entries), high = _mm256_load_ps(entries + 8);
  dequantize_row_by_groups(w, codebook, r, out, [&](const uint8_t* indices, float norm, float* dst) {
    __m256 x[16];
    const __m256 vnorm = _mm256_set1_ps(norm);
    for (int i = 0; i < 16; ++i) {
      const __m256i index = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(indices + 8 * i)));
      const __m256 upper = _mm256_castsi256_ps(_mm256_cmpgt_epi32(index, _mm256_set1_epi32(7)));
      const __m256 e = _mm256_blendv_ps(_mm256_permutevar8x32_ps(low, index), _mm256_permutevar8x32_ps(high, index), upper);
      x[i] = _mm256_mul_ps(e, vnorm);
    }
    fwht128(x);
    for (int i = 0; i < 16; ++i) _mm256_storeu_ps(dst + 8 * i, x[i]);
  });
}

#if defined(__AVX512F__)
// The same quantiser on zmm registers (avx512-vnni table): 8 registers of 16
// floats per group. Stages of half-width 1, 2, 4 and 8 run inside a register
// (partner by vpermilps / vshuff32x4, then a + b everywhere and a masked
// b' - a' on the upper lanes: the scalar's x[i] + x[i+h] and x[i] - x[i+h]),
// 16, 32, 64 pair whole registers; stage order, operations and operands per
// element are the scalar's, so the same bits.
template <int kMask>
inline __m512 butterfly_in_register(__m512 v, __m512 swapped) {
  return _mm512_mask_sub_ps(_mm512_add_ps(v, swapped), __mmask16(kMask), swapped, v);
}

inline __m512i round_clamp(__m512 y) {  // as the __m256 version above (same proof)
  y = _mm512_min_ps(_mm512_max_ps(y, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
  const __m512i t = _mm512_cvttps_epi32(y);
  const __m512 f = _mm512_sub_ps(y, _mm512_cvtepi32_ps(t));
  return _mm512_add_epi32(t, _mm512_cvttps_epi32(_mm512_add_ps(f, f)));
}

// The FWHT of N groups, x[n][0..8) holding group n's 128 floats, the groups'
// stages side by side; then the scale, as codec::fwht.
template <int N>
__attribute__((always_inline)) inline void fwht_groups512(__m512 (&x)[N][8]) {
#pragma GCC unroll 24
  for (int i = 0; i < 8 * N; ++i) {
    __m512 v = x[i / 8][i % 8];
    v = butterfly_in_register<0xAAAA>(v, _mm512_permute_ps(v, 0xB1));          // half = 1
    v = butterfly_in_register<0xCCCC>(v, _mm512_permute_ps(v, 0x4E));          // half = 2
    v = butterfly_in_register<0xF0F0>(v, _mm512_shuffle_f32x4(v, v, 0xB1));    // half = 4
    v = butterfly_in_register<0xFF00>(v, _mm512_shuffle_f32x4(v, v, 0x4E));    // half = 8
    x[i / 8][i % 8] = v;
  }
  // half = 16 .. 64: whole registers (spelled out: GCC kept x[] on the stack for the loop form)
  const auto stage = [&x](int n, int i, int h) {
    const __m512 a = x[n][i];
    const __m512 b = x[n][i + h];
    x[n][i] = _mm512_add_ps(a, b);
    x[n][i + h] = _mm512_sub_ps(a, b);
  };
  for (int n = 0; n < N; ++n) stage(n, 0, 1), stage(n, 2, 1), stage(n, 4, 1), stage(n, 6, 1);
  for (int n = 0; n < N; ++n) stage(n, 0, 2), stage(n, 1, 2), stage(n, 4, 2), stage(n, 5, 2);
  for (int n = 0; n < N; ++n) stage(n, 0, 4), stage(n, 1, 4), stage(n, 2, 4), stage(n, 3, 4);
  const __m512 scale = _mm512_set1_ps(1.0f / __builtin_sqrtf(float(kG)));  // as codec::fwht
#pragma GCC unroll 24
  for (int i = 0; i < 8 * N; ++i) x[i / 8][i % 8] = _mm512_mul_ps(x[i / 8][i % 8], scale);
}

// N groups at once (N = 1..3): the same operations per group, written side
// by side so that their dependency chains (FWHT, absmax, the scalar division,
// rounding) overlap; one group's chain alone leaves the ports idle for much
// of its length.
template <int N>
void quantize_groups512(const float* const src[N], int8_t* const q[N], float* const scale_out[N]) {
  __m512 x[N][8];
#pragma GCC unroll 24
  for (int i = 0; i < 8 * N; ++i) x[i / 8][i % 8] = _mm512_loadu_ps(src[i / 8] + 16 * (i % 8));
  fwht_groups512<N>(x);
  __m512 vinv[N];
  for (int n = 0; n < N; ++n) {
    __m512 m[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) m[i] = _mm512_abs_ps(x[n][i]);
    // max is exact in any order: a tree, not a chain of 8
    const __m512 m4 = _mm512_max_ps(_mm512_max_ps(_mm512_max_ps(m[0], m[1]), _mm512_max_ps(m[2], m[3])),
                                    _mm512_max_ps(_mm512_max_ps(m[4], m[5]), _mm512_max_ps(m[6], m[7])));
    const float absmax = _mm512_reduce_max_ps(m4);
    const float s = absmax / 127.0f;
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;
    vinv[n] = _mm512_set1_ps(inv);
    *scale_out[n] = s;
  }
#pragma GCC unroll 24
  for (int i = 0; i < 8 * N; ++i) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q[i / 8] + 16 * (i % 8)),
                     _mm512_cvtepi32_epi8(round_clamp(_mm512_mul_ps(x[i / 8][i % 8], vinv[i / 8]))));
  }
}

void quantize_group512(const float* src, int8_t* q, float* scale_out) {
  quantize_groups512<1>(&src, &q, &scale_out);
}

// quantize_activations_by_group with the whole groups of a vector three at a time.
// (amx.cpp calls avx512-vnni's through its table: unused there.)
[[maybe_unused]] void quantize_activations512(const float* x, uint32_t in, uint32_t count, QuantizedActivations& out) {
  if (in % kG != 0) {  // a ragged last group: the shared loop pads it
    quantize_activations_by_group<quantize_group512>(x, in, count, out);
    return;
  }
  prepare_activations(in, count, out);
  const uint32_t groups = out.in_pad / kG;
  for (uint32_t v = 0; v < count; ++v) {
    const float* src = x + size_t(v) * in;
    int8_t* q = activation_q(out) + size_t(v) * out.in_pad;
    float* scales = activation_scale(out) + size_t(v) * groups;
    for (uint32_t g = 0; g < groups;) {
      const uint32_t n = groups - g < 3 ? groups - g : 3;
      const float* s3[3];
      int8_t* q3[3];
      float* sc3[3];
      for (uint32_t i = 0; i < n; ++i) s3[i] = src + (g + i) * kG, q3[i] = q + (g + i) * kG, sc3[i] = scales + g + i;
      if (n == 3) quantize_groups512<3>(s3, q3, sc3);
      if (n == 2) quantize_groups512<2>(s3, q3, sc3);
      if (n == 1) quantize_groups512<1>(s3, q3, sc3);
      g += n;
    }
  }
}

// dequantize_row on zmm registers: vpermps of the codebook (up to 16 entries,
// one register) times the norm, then the quantiser's FWHT (fwht_groups512):
// the scalar table's operations lane by lane.
// Widths 1 and 2 skip the byte-per-index unpack: the 16 indices of lane
// chunk i are the W-bit fields (LSB first) of one dword of the packed group,
// so that dword in every lane, a per-lane variable shift and a mask give them
// directly: the same indices as codec::unpack_indices, so the same bits.
// (For CQ4 the same with two dwords is slower than the unpack, so 4 bits
// keep it.)
template <uint32_t W>
inline __m512i packed_index_chunk512(const uint8_t* packed, int i) {
  static_assert(W == 1 || W == 2);
  const __m512i shift = _mm512_set_epi32(15 * W, 14 * W, 13 * W, 12 * W, 11 * W, 10 * W, 9 * W, 8 * W, 7 * W, 6 * W,
                                         5 * W, 4 * W, 3 * W, 2 * W, W, 0);
  uint32_t d = 0;
  std::memcpy(&d, packed + 2 * W * i, 2 * W);
  return _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32(int(d)), shift), _mm512_set1_epi32((1 << W) - 1));
}

[[maybe_unused]] void dequantize_row512(const codec::CqMatrix& w, const float* codebook, uint32_t r, float* out) {
  const __m512 entries = _mm512_maskz_loadu_ps(__mmask16((1u << codec::levels(w.bits)) - 1), codebook);
  // index_chunk(i): the 16 indices of lane chunk i of the group as dwords.
  const auto group_with = [&](auto index_chunk) {
    return [&, index_chunk](const uint8_t* bytes, float norm, float* dst) {
      __m512 x[1][8];
      const __m512 vnorm = _mm512_set1_ps(norm);
      for (int i = 0; i < 8; ++i) x[0][i] = _mm512_mul_ps(_mm512_permutexvar_ps(index_chunk(bytes, i), entries), vnorm);
      fwht_groups512<1>(x);
      for (int i = 0; i < 8; ++i) _mm512_storeu_ps(dst + 16 * i, x[0][i]);
    };
  };
  const uint32_t iw = codec::index_bits(w.bits);
  if (w.bits != codec::kTernary && iw == 1) {
    dequantize_row_by_groups<false>(w, codebook, r, out, group_with(packed_index_chunk512<1>));
  } else if (w.bits != codec::kTernary && iw == 2) {
    dequantize_row_by_groups<false>(w, codebook, r, out, group_with(packed_index_chunk512<2>));
  } else {
    dequantize_row_by_groups(w, codebook, r, out, group_with([](const uint8_t* indices, int i) {
      return _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(indices + 16 * i)));
    }));
  }
}
#endif  // AVX512F

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
    const __m256i b = _mm256_or_si256(_mm256_and_si256(_mm256_slli_epi32(d, 10), m2),
                                      _mm256_and_si256(_mm256_slli_epi32(d, 15), m3));
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
GroupLayout layout_of() {
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
PermuteMasks masks_of(const GroupLayout& layout) {
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

// (Unused in amx.cpp, which calls the avx512-vnni table for these products.)
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
  for (int c = 0; c < 8; ++c) chunk[c] = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16 * c)));
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

thread_local SimdScratch tls_scratch;

// ----------------------------------------------------------------------------
// The integer dot of one group: 4 blocks of 32 weights against 32 activations
// each. maddubs / dpbusd need one unsigned operand.
//  - AVX2: |a| times the weights with the sign of a: |a| * sign(a)w = a*w
//    exactly; maddubs pair sums are <= 2*128*127 < 2^15 (no saturation, also
//    for a = -128), so the weights must be in [-127, 127].
//  - VNNI: the table holds the weights biased by +128 as u8 (w + 128 in
//    0..255, any int8 w), dotted with the signed activations; the tile
//    subtracts 128 * sum(a) per (vector, group) after the reduction. dpbusd
//    sums 4 products straight into int32: exact (|sum| < 2^31 by far).

// u8 x s8 products, 4 summed into each int32 lane (VPDPBUSD, VEX or EVEX).
template <Dot kDot>
inline __m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
  static_assert(kDot != Dot::kAvx2, "no VPDPBUSD in the AVX2 table");
  if constexpr (kDot == Dot::kAvxVnni) {
#if defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
    static_assert(kDot != Dot::kAvxVnni, "avx_vnni.cpp needs -mavxvnni");
#endif
  } else {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(acc, u, s);
#else
    static_assert(kDot == Dot::kAvxVnni, "avx512_vnni.cpp needs -mavx512vnni -mavx512vl");
#endif
  }
  (void)u;
  (void)s;
  return acc;
}

template <Dot kDot>
inline __m256i dot_group(const __m256i w[4], const uint8_t* abs_a, const int8_t* a) {
  __m256i sum = _mm256_setzero_si256();
  for (int k = 0; k < 4; ++k) {
    const __m256i sa = _mm256_load_si256(reinterpret_cast<const __m256i*>(a + 32 * k));
    if constexpr (kDot == Dot::kAvx2) {
      const __m256i ua = _mm256_load_si256(reinterpret_cast<const __m256i*>(abs_a + 32 * k));
      const __m256i p16 = _mm256_maddubs_epi16(ua, _mm256_sign_epi8(w[k], sa));
      sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
    } else {
      sum = dpbusd<kDot>(sum, w[k], sa);  // biased u8 weights x s8 activations
    }
  }
  return sum;
}

// Lane i of the result = horizontal sum of v[i].
inline __m256i reduce8(const __m256i v[8]) {
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]);
  const __m256i h23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]);
  const __m256i h67 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i h0123 = _mm256_hadd_epi32(h01, h23);
  const __m256i h4567 = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20),
                          _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

struct MatmulCtx {
  const uint8_t* packed;
  size_t row_bytes;
  uint32_t groups, in_pad;
  const int8_t* act;       // permuted activations, [count][in_pad]
  const uint8_t* act_abs;  // |act| (AVX2 only)
  const int32_t* corr;     // VNNI: 128 * sum of each group's activations, [groups][scale_stride(count)]
  float* norms;            // float norms of rows [row_begin, row_end): [row - row_begin][groups]
  const uint8_t* half;     // decode: the FP16 norms of the matrix, converted per tile (tile_norms)
  bool paired;             // avx512-vnni, one vector, 2-bit indices: activations in cq_tile512_pairs' layout
  bool vbmi;               // with `paired`: the tiles look up bytes with vpermb (avx512-vbmi table)
  uint32_t row_begin;
  uint32_t rows;  // rows of the matrix (prefetches stay inside it)
  const float* scales;  // activation scales, [groups][scale_stride(count)]
  size_t scale_stride;
  __m256i tables[4];  // the unpacker's lookup tables (VNNI: entries biased by +128)
  float cb_scale;
  float* y;
  size_t y_stride;
};

inline float load_norm(const uint8_t* half, size_t i) {
  uint16_t h;
  std::memcpy(&h, half + 2 * i, 2);
  return _cvtsh_ss(h);
}

// The float norms of a tile's rows [r0, r0 + R). With several vectors the
// prep converted the whole row range; with one vector (c.half set) each tile
// converts its own rows (contiguous FP16, R * groups halves) right before it
// uses them, so the loads overlap the previous tile's weight stream instead of
// stalling a separate pass over the row range. The conversion is exact either
// way, so the float math is unchanged.
__attribute__((always_inline)) inline void convert_norms(const uint8_t* half, size_t n, float* dst) {  // 8 at a time
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(half + 2 * i))));
  }
  for (; i < n; ++i) dst[i] = load_norm(half, i);
}

// One vector: starts loading the FP16 norms of the next tile, rows [r0 + R,
// r0 + 2R) (as NextTilePrefetch does for its weights), if it is in the matrix.
template <int R>
__attribute__((always_inline)) inline void prefetch_next_tile_norms(const MatmulCtx& c, uint32_t r0) {
  if (r0 + 2 * uint32_t(R) > c.rows) return;
  const size_t bytes = 2 * size_t(R) * c.groups;
  const auto* next = reinterpret_cast<const char*>(c.half + 2 * size_t(r0 + uint32_t(R)) * c.groups);
  for (size_t off = 0; off < bytes; off += 64) _mm_prefetch(next + off, _MM_HINT_T0);
}

template <int R>
__attribute__((always_inline)) inline const float* tile_norms(const MatmulCtx& c, uint32_t r0) {
  float* dst = c.norms + size_t(r0 - c.row_begin) * c.groups;
  if (c.half != nullptr) {
    prefetch_next_tile_norms<R>(c, r0);
    convert_norms(c.half + 2 * size_t(r0) * c.groups, size_t(R) * c.groups, dst);
  }
  return dst;
}

// Software prefetch of the next tile's weights, rows [r0 + R, r0 + 2R): a
// decode step streams its weights from beyond L2, and the hardware prefetcher
// does not follow a tile's access pattern (32-64 bytes of each of R rows per
// group). Those rows are contiguous (R * row_bytes bytes); each group
// prefetches its 1/groups share, R * kBytes bytes. Only inside the matrix,
// and only in 1-vector tiles: with several vectors the rows are reused from
// L1 by the other vector blocks and the prefetches only cost. One tile ahead:
// two or four ahead pay less.
template <int R, class U>
struct NextTilePrefetch {
  static constexpr size_t kChunk = size_t(R) * U::kBytes;
  const char* p;
  bool on;
  NextTilePrefetch(const MatmulCtx& c, uint32_t r0, bool wanted)
      : p(reinterpret_cast<const char*>(c.packed)), on(wanted && r0 + 2 * uint32_t(R) <= c.rows) {
    if (on) p = reinterpret_cast<const char*>(c.packed + size_t(r0 + R) * c.row_bytes);
  }
  void group() {
    if (on) {
      for (size_t off = 0; off < kChunk; off += 64) _mm_prefetch(p + off, _MM_HINT_T0);
      p += kChunk;
    }
  }
};

// Lane l = v*R + r of a tile: row index l % R, vector index l / R.
template <int R>
struct TileLanes {
  static constexpr int32_t row[8] = {0 % R, 1 % R, 2 % R, 3 % R, 4 % R, 5 % R, 6 % R, 7 % R};
  static constexpr int32_t vec[8] = {0 / R, 1 / R, 2 / R, 3 / R, 4 / R, 5 / R, 6 / R, 7 / R};
};

// R rows x V vectors; lane l = v*R + r of every 8-lane vector. Per lane, the
// float math is the scalar's: acc += float(dot) * (norm * scale), in group
// order, then acc * cb.scale. Lanes >= R*V compute on zero dots and are
// never stored.
template <Dot kDot, class U, int R, int V>
void cq_tile(const MatmulCtx& c, uint32_t r0, uint32_t v0) {
  static_assert(R * V <= 8);
  constexpr int P = R * V;
  const uint32_t groups = c.groups;
  // Norm of lane l at group g: norms[(r0 + l%R - row_begin)*groups + g].
  const __m256i norm_index = _mm256_mullo_epi32(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(TileLanes<R>::row)), _mm256_set1_epi32(int(groups)));
  const __m256i scale_index = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(TileLanes<R>::vec));
  const float* norms = tile_norms<R>(c, r0);
  const size_t rb = c.row_bytes;
  const uint8_t* packed = c.packed + size_t(r0) * rb;
  __m256 acc = _mm256_setzero_ps();
  NextTilePrefetch<R, U> prefetch(c, r0, V == 1);
  for (uint32_t g = 0; g < groups; ++g, packed += U::kBytes) {
    prefetch.group();
    __m256i dots[8];
    for (int l = P; l < 8; ++l) dots[l] = _mm256_setzero_si256();
    const uint8_t* row = packed;
    for (int r = 0; r < R; ++r, row += rb) {
      __m256i w[4];
      U::weights(row, c.tables, w);
      for (int v = 0; v < V; ++v) {
        const size_t off = size_t(v0 + v) * c.in_pad + size_t(g) * kG;
        dots[v * R + r] = dot_group<kDot>(w, kDot == Dot::kAvx2 ? c.act_abs + off : nullptr, c.act + off);
      }
    }
    const __m256 norm = _mm256_i32gather_ps(norms + g, norm_index, 4);
    const __m256 scale =
        _mm256_permutevar8x32_ps(_mm256_loadu_ps(c.scales + g * c.scale_stride + v0), scale_index);
    __m256i idots = reduce8(dots);
    if constexpr (kDot != Dot::kAvx2) {
      idots = _mm256_sub_epi32(idots, _mm256_permutevar8x32_epi32(
                                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                              c.corr + g * c.scale_stride + v0)),
                                          scale_index));
    }
    const __m256 d = _mm256_cvtepi32_ps(idots);
    acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_mul_ps(norm, scale)));
  }
  alignas(32) float res[8];
  _mm256_store_ps(res, _mm256_mul_ps(acc, _mm256_set1_ps(c.cb_scale)));
  for (int v = 0; v < V; ++v) {
    for (int r = 0; r < R; ++r) c.y[size_t(v0 + v) * c.y_stride + r0 + r] = res[v * R + r];
  }
}

// This ISA's tile for the shared tiling driver (simd_common.h).
template <Dot kDot, class U>
struct Tiles {
  const MatmulCtx& c;
  template <int R, int V>
  void tile(uint32_t r, uint32_t v0) const {
    cq_tile<kDot, U, R, V>(c, r, v0);
  }
};

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
// ----------------------------------------------------------------------------
// 512-bit tiles (the "avx512-vnni" table): two rows per zmm register, row 2p in
// the low 256 bits and row 2p + 1 in the high 256 bits, with the same 32
// activations broadcast to both halves. Per row pair and group: the 256-bit
// unpacking done once on both rows, 4 zmm VPDPBUSD; per tile and group one
// reduction of up to 8 zmm accumulators into 16 int32 lanes (21 instructions,
// against 21 for 8 lanes with vphaddd), then the scalar's float math on 16
// lanes. The column order is the 256-bit one, so the same permutation.

inline __m512i pair256(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }
inline __m256i load256(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m512i table512(__m256i t) { return _mm512_broadcast_i32x4(_mm256_castsi256_si128(t)); }

// Weights of rows p0 (low halves) and p1 (high halves): w[k] = the 256-bit
// unpacker's w[k] of each row.
template <class U>
struct Unpack512 {  // generic: unpack each row with 256-bit code, then pair
  static void weights(const uint8_t* p0, const uint8_t* p1, const __m256i t[4], const __m512i[4], __m512i w[4]) {
    __m256i a[4], b[4];
    U::weights(p0, t, a);
    U::weights(p1, t, b);
    for (int k = 0; k < 4; ++k) w[k] = pair256(a[k], b[k]);
  }
};

template <>
struct Unpack512<Unpack1> {
  static void weights(const uint8_t* p0, const uint8_t* p1, const __m256i[4], const __m512i t[4], __m512i w[4]) {
    auto bcast = [](const uint8_t* p) {
      return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    };
    const __m512i b = pair256(bcast(p0), bcast(p1));
    const __m512i shift = _mm512_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4, 0, 0, 0, 0, 4, 4, 4, 4);
    Unpack1::decode(vand(_mm512_srlv_epi32(b, shift), vlow_nibbles(b)), t, w);
  }
};

template <>
struct Unpack512<Unpack2> {
  static void weights(const uint8_t* p0, const uint8_t* p1, const __m256i[4], const __m512i t[4], __m512i w[4]) {
    Unpack2::decode(pair256(load256(p0), load256(p1)), t, w);
  }
};

template <>
struct Unpack512<Unpack4> {
  static void weights(const uint8_t* p0, const uint8_t* p1, const __m256i[4], const __m512i t[4], __m512i w[4]) {
    Unpack4::decode(pair256(load256(p0), load256(p1)), pair256(load256(p0 + 32), load256(p1 + 32)), t, w);
  }
};

// vpermb as inline assembly: avx512_vnni.cpp is built without -mavx512vbmi
// (the avx512-vnni table runs on CPUs without it), and the intrinsic would
// need a target attribute on every always-inline caller. Only the
// avx512-vbmi table's tiles reach it (VbmiPairs).
__attribute__((always_inline)) inline __m512i vpermb(__m512i index, __m512i table) {
  __m512i r;
  __asm__("vpermb %2, %1, %0" : "=v"(r) : "v"(index), "v"(table));
  return r;
}

// Lanes of a 512-bit tile of R rows (R/2 pairs, at least one) x V vectors:
// accumulator i = v * pairs + p holds rows 2p (low half) and 2p + 1 (high
// half); after reduce16, lane L = 4t + e holds accumulator 4(t/2) + e, half
// t % 2. Unused lanes point at row 0 / vector 0 (valid memory, never stored).
template <int R, int V>
struct Lanes512 {
  static constexpr int kPairs = (R + 1) / 2;
  static_assert(kPairs * V <= 8);
  static constexpr int row_of(int lane) {
    const int t = lane / 4, i = 4 * (t / 2) + lane % 4;
    const int row = 2 * (i % kPairs) + t % 2;
    return i < kPairs * V && row < R ? row : 0;
  }
  static constexpr int vec_of(int lane) {
    const int i = 4 * (lane / 8) + lane % 4;
    return i < kPairs * V ? i / kPairs : 0;
  }
  static constexpr int lane_of(int row, int v) {
    const int i = v * kPairs + row / 2;
    return 4 * (2 * (i / 4) + row % 2) + i % 4;
  }
};

// Lane L = 4t + e of the result: sum of the 8 lanes of half t % 2 of a[4(t/2) + e].
// (Always inlined: with many callers GCC may call it out of line, and its 8
// inputs then go through the stack.)
__attribute__((always_inline)) inline __m512i reduce16(const __m512i a[8]) {
  __m512i x[4], y[2];
  for (int i = 0; i < 4; ++i) {  // per 128-bit lane: [a0+a2, b0+b2, a1+a3, b1+b3]
    x[i] = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2 * i], a[2 * i + 1]),
                            _mm512_unpackhi_epi32(a[2 * i], a[2 * i + 1]));
  }
  for (int j = 0; j < 2; ++j) {  // per 128-bit lane: the 4-element sums of a[4j..4j+3]
    y[j] = _mm512_add_epi32(_mm512_unpacklo_epi64(x[2 * j], x[2 * j + 1]),
                            _mm512_unpackhi_epi64(x[2 * j], x[2 * j + 1]));
  }
  // 128-bit lanes (0+1, 2+3) of y0, then of y1.
  return _mm512_add_epi32(_mm512_shuffle_i64x2(y[0], y[1], 0x88), _mm512_shuffle_i64x2(y[0], y[1], 0xDD));
}

template <class U, int R, int V>
void cq_tile512(const MatmulCtx& c, const __m512i t512[4], uint32_t r0, uint32_t v0) {
  using L = Lanes512<R, V>;
  constexpr int P = L::kPairs;
  constexpr int A = P * V;
  alignas(64) static constexpr int32_t kRow[16] = {L::row_of(0),  L::row_of(1),  L::row_of(2),  L::row_of(3),
                                                   L::row_of(4),  L::row_of(5),  L::row_of(6),  L::row_of(7),
                                                   L::row_of(8),  L::row_of(9),  L::row_of(10), L::row_of(11),
                                                   L::row_of(12), L::row_of(13), L::row_of(14), L::row_of(15)};
  alignas(64) static constexpr int32_t kVec[16] = {L::vec_of(0),  L::vec_of(1),  L::vec_of(2),  L::vec_of(3),
                                                   L::vec_of(4),  L::vec_of(5),  L::vec_of(6),  L::vec_of(7),
                                                   L::vec_of(8),  L::vec_of(9),  L::vec_of(10), L::vec_of(11),
                                                   L::vec_of(12), L::vec_of(13), L::vec_of(14), L::vec_of(15)};
  const uint32_t groups = c.groups;
  const __m512i norm_index = _mm512_mullo_epi32(_mm512_load_si512(kRow), _mm512_set1_epi32(int(groups)));
  const __m512i vec_index = _mm512_load_si512(kVec);
  const float* norms = tile_norms<R>(c, r0);
  const size_t rb = c.row_bytes;
  const uint8_t* packed = c.packed + size_t(r0) * rb;
  __m512 acc = _mm512_setzero_ps();
  NextTilePrefetch<R, U> prefetch(c, r0, V == 1);
  for (uint32_t g = 0; g < groups; ++g, packed += U::kBytes) {
    prefetch.group();
    __m512i dots[8];
    for (int i = A; i < 8; ++i) dots[i] = _mm512_setzero_si512();
    const uint8_t* row = packed;  // row 2p (a 1-row tile pairs the row with itself)
    for (int p = 0; p < P; ++p, row += 2 * rb) {
      __m512i w[4];
      Unpack512<U>::weights(row, 2 * p + 1 < R ? row + rb : row, c.tables, t512, w);
      for (int v = 0; v < V; ++v) {
        const int8_t* a = c.act + size_t(v0 + v) * c.in_pad + size_t(g) * kG;
        __m512i sum = _mm512_setzero_si512();
        for (int k = 0; k < 4; ++k) {
          const __m512i av = _mm512_broadcast_i64x4(_mm256_load_si256(reinterpret_cast<const __m256i*>(a + 32 * k)));
          sum = _mm512_dpbusd_epi32(sum, w[k], av);
        }
        dots[v * P + p] = sum;
      }
    }
    const size_t f = g * c.scale_stride + v0;  // 8 readable entries from here
    const __m512 norm = _mm512_i32gather_ps(norm_index, norms + g, 4);
    __m512 scale;
    __m512i corr;
    if constexpr (V == 1) {  // one vector: broadcasts from memory (load port) instead of vpermps/vpermd (port 5)
      scale = _mm512_set1_ps(c.scales[f]);
      corr = _mm512_set1_epi32(c.corr[f]);
    } else {
      scale = _mm512_permutexvar_ps(vec_index, _mm512_castps256_ps512(_mm256_loadu_ps(c.scales + f)));
      corr = _mm512_permutexvar_epi32(
          vec_index, _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(c.corr + f))));
    }
    const __m512 d = _mm512_cvtepi32_ps(_mm512_sub_epi32(reduce16(dots), corr));
    acc = _mm512_add_ps(acc, _mm512_mul_ps(d, _mm512_mul_ps(norm, scale)));
  }
  alignas(64) float res[16];
  _mm512_store_ps(res, _mm512_mul_ps(acc, _mm512_set1_ps(c.cb_scale)));
  for (int v = 0; v < V; ++v) {
    for (int r = 0; r < R; ++r) c.y[size_t(v0 + v) * c.y_stride + r0 + r] = res[L::lane_of(r, v)];
  }
}

// One vector, CQ2 (and ternary): one row per zmm register holding two
// consecutive groups (64 contiguous bytes, one load, no vinserti64x4), dotted
// with the activations of the two groups in "paired" layout (block k of group
// 2j in bytes [64k, 64k + 32) of pair j's 256 bytes, of group 2j + 1 in
// [64k + 32, 64k + 64); cq_matmul lays them out so for this tile). Per pair of
// groups, up to 16 rows: reduce16 of rows 0-7 and of rows 8-15 give lanes
// (row 4 (t/2) + e, group 2j + t % 2) for lane 4t + e; one vpermt2d per group
// puts the 16 rows of a group in lane order (lane = row). Then the scalar's
// float math per group, in group order. An odd last group loads 32 bytes
// (the upper half of the register is zero and its results unused).
// The norms come straight from the FP16 norms (c.half), one dword gather per
// pair of groups: dword r = the halves (norm[r][g], norm[r][g + 1]), adjacent
// in the [row][group] layout. That replaces a float conversion pass and two
// float gathers per pair; the conversion is exact, so
// the float math is unchanged. An odd last group gathers (g - 1, g), which
// stays inside the norms (a matrix of one group loads its R norms instead).
// The byte lookups of the paired tile, two ways (the same weights; `t` holds
// each one's tables, see vbmi_pairs_tables):
//  - PshufbPairs: Unpack2's nibble lookups, 2 ANDs + 1 shift + 4 vpshufb per row;
//  - VbmiPairs (AVX512-VBMI): vpermb looks up a byte by its low 6 bits, so
//    crumbs 0, 1, 2 of each byte index 64-entry tables directly (entry i =
//    code (i >> 2k) & 3) and crumb 3 after one 16-bit shift by 2 (bits 6-7 land
//    in 4-5; what comes in from the next byte lands in 6-7, which vpermb
//    ignores): 1 shift + 4 vpermb per row, two fewer vector µops on the ports
//    the VPDPBUSDs use.
struct PshufbPairs {
  __attribute__((always_inline)) static void decode(__m512i b, const __m512i t[4], __m512i w[4]) {
    Unpack2::decode(b, t, w);
  }
};
struct VbmiPairs {
  __attribute__((always_inline)) static void decode(__m512i b, const __m512i t[4], __m512i w[4]) {
    w[0] = vpermb(b, t[0]);
    w[1] = vpermb(b, t[1]);
    w[2] = vpermb(b, t[2]);
    w[3] = vpermb(_mm512_srli_epi16(b, 2), t[2]);
  }
};

template <int R, class Decode>
__attribute__((always_inline)) inline void cq_tile512_pairs_body(const MatmulCtx& c, const __m512i t512[4], uint32_t r0) {
  static_assert(R >= 1 && R <= 16);
  // Lane = row; lanes past the tile read row 0's norms (valid memory, never stored).
  constexpr auto lane_row = [](int lane) { return lane < R ? lane : 0; };
  alignas(64) static constexpr int32_t kRow[16] = {lane_row(0),  lane_row(1),  lane_row(2),  lane_row(3),  lane_row(4),  lane_row(5),  lane_row(6),  lane_row(7),
                                                   lane_row(8),  lane_row(9),  lane_row(10), lane_row(11), lane_row(12), lane_row(13), lane_row(14), lane_row(15)};
  const uint32_t groups = c.groups;
  // Halves from one row's norms to the next: the gather's index is in halves (scale 2).
  const __m512i norm_index = _mm512_mullo_epi32(_mm512_load_si512(kRow), _mm512_set1_epi32(int(groups)));
  const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
  const __m512i second = _mm512_setr_epi32(4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  const size_t rb = c.row_bytes;
  const uint8_t* packed = c.packed + size_t(r0) * rb;
  const uint8_t* norm_half = c.half + 2 * size_t(r0) * groups;
  prefetch_next_tile_norms<R>(c, r0);
  const int8_t* act = c.act;
  NextTilePrefetch<R, Unpack2> prefetch(c, r0, true);
  __m512 acc = _mm512_setzero_ps();
  const auto accumulate = [&](uint32_t g, __m512i dots, __m256i norm_halves) {  // lane = row
    const size_t f = g * c.scale_stride;
    const __m512 norm = _mm512_cvtph_ps(norm_halves);
    const __m512 d = _mm512_cvtepi32_ps(_mm512_sub_epi32(dots, _mm512_set1_epi32(c.corr[f])));
    acc = _mm512_add_ps(acc, _mm512_mul_ps(d, _mm512_mul_ps(norm, _mm512_set1_ps(c.scales[f]))));
  };
  for (uint32_t g = 0; g < groups; g += 2, packed += 2 * Unpack2::kBytes, act += 2 * kG) {
    const bool two = g + 1 < groups;
    prefetch.group();
    if (two) prefetch.group();
    // (One group in all: the tile's norms are R contiguous halves.)
    const __m512i norm_pairs =
        groups == 1 ? _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(__mmask16((1u << R) - 1), norm_half)), 16)
                    : _mm512_i32gather_epi32(norm_index, norm_half + 2 * (two ? g : g - 1), 2);
    __m512i av[4];
    for (int k = 0; k < 4; ++k) av[k] = _mm512_load_si512(act + 64 * k);
    const auto half = [&](int r_first) {  // reduce16 of rows r_first .. r_first + 7
      __m512i dots[8];
      const uint8_t* row = packed + size_t(r_first) * rb;
      for (int i = 0; i < 8; ++i, row += rb) {
        if (r_first + i >= R) {
          dots[i] = _mm512_setzero_si512();
          continue;
        }
        const __m512i b = two ? _mm512_loadu_si512(row)
                              : _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row)));
        __m512i w[4];
        Decode::decode(b, t512, w);
        __m512i sum = _mm512_setzero_si512();
        for (int k = 0; k < 4; ++k) sum = _mm512_dpbusd_epi32(sum, w[k], av[k]);
        dots[i] = sum;
      }
      return reduce16(dots);
    };
    const __m512i lo = half(0);
    const __m512i hi = R > 8 ? half(8) : _mm512_setzero_si512();
    if (two) {
      accumulate(g, _mm512_permutex2var_epi32(lo, first, hi), _mm512_cvtepi32_epi16(norm_pairs));
      accumulate(g + 1, _mm512_permutex2var_epi32(lo, second, hi),
                 _mm512_cvtepi32_epi16(_mm512_srli_epi32(norm_pairs, 16)));
    } else {
      accumulate(g, _mm512_permutex2var_epi32(lo, first, hi), _mm512_cvtepi32_epi16(_mm512_srli_epi32(norm_pairs, 16)));
    }
  }
  alignas(64) float res[16];
  _mm512_store_ps(res, _mm512_mul_ps(acc, _mm512_set1_ps(c.cb_scale)));
  for (int r = 0; r < R; ++r) c.y[r0 + uint32_t(r)] = res[r];
}

template <int R>
void cq_tile512_pairs(const MatmulCtx& c, const __m512i t512[4], uint32_t r0) {
  cq_tile512_pairs_body<R, PshufbPairs>(c, t512, r0);
}
template <int R>
void cq_tile512_pairs_vbmi(const MatmulCtx& c, const __m512i t512[4], uint32_t r0) {
  cq_tile512_pairs_body<R, VbmiPairs>(c, t512, r0);
}

// VbmiPairs' tables from the code table e: t[k][i] = e[(i >> 2k) & 3], k = 0..2.
inline void vbmi_pairs_tables(const int8_t e[16], __m512i t[4]) {
  alignas(64) int8_t bytes[4][64] = {};
  for (int k = 0; k < 3; ++k) {
    for (int i = 0; i < 64; ++i) bytes[k][i] = e[(i >> (2 * k)) & 3];
  }
  for (int k = 0; k < 4; ++k) t[k] = _mm512_load_si512(bytes[k]);
}

template <class U>
struct Tiles512 {
  const MatmulCtx& c;
  __m512i t512[4];
  __m512i vbmi[4];  // VbmiPairs' tables when c.paired and c.vbmi
  template <int R, int V>
  void tile(uint32_t r, uint32_t v0) const {
    if constexpr (U::kBits == 2 && V == 1) {  // CQ2 and ternary, a call with one vector: paired layout
      if (c.paired) {
        if (c.vbmi) {
          cq_tile512_pairs_vbmi<R>(c, vbmi, r);
        } else {
          cq_tile512_pairs<R>(c, t512, r);
        }
        return;
      }
    }
    cq_tile512<U, R, V>(c, t512, r, v0);
  }
};
#endif  // AVX-512 F, BW, VL, VNNI

// The lookup tables derived from a code table (tables_for, and with 512-bit
// registers the vpermb tables of CQ2), remembered per thread and width: a
// decode step runs ~170 products over the same few code tables, and deriving
// them on every call (byte loops) is not free. Trivial type:
// zero-initialised thread-local storage, no guard.
struct DerivedTables {
  bool valid;
  int8_t e[16];
  __m256i t[4];
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
  __m512i vbmi[4];
#endif
};

template <Dot kDot, class U>
void cq_matmul_width(MatmulCtx& c, const int8_t table[16], uint32_t row_begin, uint32_t row_end, uint32_t count) {
  thread_local DerivedTables memo;  // one per instantiation: per table and width
  if (!memo.valid || std::memcmp(memo.e, table, sizeof memo.e) != 0) {
    tables_for(U::kBits, table, memo.t);
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
    if constexpr (kDot == Dot::kAvx512Vnni && U::kBits == 2) vbmi_pairs_tables(table, memo.vbmi);
#endif
    std::memcpy(memo.e, table, sizeof memo.e);
    memo.valid = true;
  }
  for (int k = 0; k < 4; ++k) c.tables[k] = memo.t[k];
  // L2 budget 96 KiB: each vector keeps its activations (AVX2: and their absolute values).
  const size_t per_vector = (kDot == Dot::kAvx2 ? 2 : 1) * size_t(c.in_pad);
  const auto budget = uint32_t(96 * 1024 / per_vector);
  if constexpr (kDot == Dot::kAvx512Vnni) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
    Tiles512<U> tiles{c, {}, {}};
    for (int k = 0; k < 4; ++k) tiles.t512[k] = table512(c.tables[k]);
    if constexpr (U::kBits == 2) {
      for (int k = 0; k < 4; ++k) tiles.vbmi[k] = memo.vbmi[k];
    }
    tile_matmul<16>(tiles, row_begin, row_end, count, budget);
#else
    static_assert(kDot != Dot::kAvx512Vnni, "the 512-bit table needs -mavx512f -mavx512bw -mavx512vl -mavx512vnni");
#endif
  } else {
    tile_matmul(Tiles<kDot, U>{c}, row_begin, row_end, count, budget);
  }
}

// `vbmi` (avx512-vbmi table only): the 1-vector CQ2 tiles look up with vpermb.
template <Dot kDot>
void cq_matmul_impl(const codec::CqMatrix& w, const Int8Codebook& cb, const QuantizedActivations& a,
                    uint32_t row_begin, uint32_t row_end, float* y, size_t y_stride, bool vbmi) {
  if (row_begin >= row_end || a.count == 0) return;
  // The VNNI dot takes any int8 weight (biased table); AVX2 needs |w| <= 127.
  if (!simd_matmul_ok(w, cb, a, /*no_minus128=*/kDot == Dot::kAvx2)) {
    scalar_kernels().cq_matmul(w, cb, a, row_begin, row_end, y, y_stride);
    return;
  }
  constexpr bool kAbs = kDot == Dot::kAvx2;
  const uint32_t iw = codec::index_bits(w.bits);
  const uint32_t groups = w.in_pad / kG;
  const uint32_t rows = row_end - row_begin;
  const size_t act_bytes = size_t(a.count) * w.in_pad;
  const size_t norm_count = size_t(rows) * groups;
  // The 512-bit 1-vector tiles read one scale and one correction per group
  // (broadcasts), so with one vector those are stored unpadded ([group]).
  const bool compact = kDot == Dot::kAvx512Vnni && a.count == 1;
  const size_t stride = compact ? 1 : scale_stride(a.count);
  const size_t factor_bytes = round_up64(size_t(groups) * stride * sizeof(float));
  // (+ 128: one vector's activations in the paired layout of cq_tile512_pairs fill an even number of groups)
  const size_t act_total = (kAbs ? 2 : 1) * round_up64(act_bytes + 128);
  auto* base = static_cast<uint8_t*>(
      tls_scratch.get(act_total + round_up64(norm_count * sizeof(float)) + 2 * factor_bytes));
  auto* act = reinterpret_cast<int8_t*>(base);
  uint8_t* act_abs = kAbs ? base + round_up64(act_bytes) : nullptr;
  auto* norms = reinterpret_cast<float*>(base + act_total);
  auto* scales = reinterpret_cast<float*>(base + act_total + round_up64(norm_count * sizeof(float)));
  auto* corr = reinterpret_cast<int32_t*>(base + act_total + round_up64(norm_count * sizeof(float)) + factor_bytes);

  const PermuteMasks& pm = masks_for(iw);
#if defined(__AVX512F__) && defined(__AVX512BW__)
  const PermuteMasks512& pm512 = masks512_for(iw);
#endif
  // avx512-vnni, one vector, 2-bit indices: the paired layout of cq_tile512_pairs.
  const bool paired = kDot == Dot::kAvx512Vnni && a.count == 1 && iw == 2;
  if (paired && groups % 2 == 1) {  // the missing second group of the last pair
    for (int k = 0; k < 4; ++k) std::memset(act + size_t(groups - 1) * kG + 64 * k + 32, 0, 32);
  }
  for (uint32_t v = 0; v < a.count; ++v) {
    for (uint32_t g = 0; g < groups; ++g) {
      const size_t off = size_t(v) * w.in_pad + size_t(g) * kG;
      if constexpr (kDot == Dot::kAvx512Vnni) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
        if (paired) {
          permute_group512(pm512, activation_q(a) + off, act + size_t(g / 2) * 2 * kG + (g % 2) * 32, 64);
        } else {
          permute_group512(pm512, activation_q(a) + off, act + off, 32);
        }
#endif
      } else {
        permute_group(pm, activation_q(a) + off, act + off, kAbs ? act_abs + off : nullptr);
      }
      if constexpr (!kAbs) corr[g * stride + v] = bias_correction(activation_q(a) + off);
    }
  }
  if constexpr (!kAbs) {
    for (uint32_t g = 0; g < groups; ++g) {
      for (size_t v = a.count; v < stride; ++v) corr[g * stride + v] = 0;
    }
  }
  // The norms of the row range are contiguous FP16: with several vectors
  // convert them all here, 8 at a time; with one, each tile converts its own
  // rows (tile_norms).
  if (a.count > 1) convert_norms(w.norms + 2 * size_t(row_begin) * groups, norm_count, norms);
  if (compact) {
    std::memcpy(scales, activation_scale(a), groups * sizeof(float));
  } else {
    transpose_scales(a, scales);
  }

  alignas(16) int8_t table[16];
  code_table(cb, w.bits, table);
  if constexpr (!kAbs) {
    for (int e = 0; e < 16; ++e) table[e] = int8_t(uint8_t(table[e]) ^ 0x80);  // w + 128 as u8
  }
  MatmulCtx c{};
  c.packed = w.packed;
  c.row_bytes = w.row_bytes;
  c.groups = groups;
  c.in_pad = w.in_pad;
  c.act = act;
  c.act_abs = act_abs;
  c.corr = corr;
  c.norms = norms;
  c.half = a.count == 1 ? w.norms : nullptr;
  c.paired = paired;
  c.vbmi = vbmi;
  c.row_begin = row_begin;
  c.rows = w.out;
  c.scales = scales;
  c.scale_stride = stride;
  c.cb_scale = cb.scale;
  c.y = y;
  c.y_stride = y_stride;
  switch (iw) {
    case 1: cq_matmul_width<kDot, Unpack1>(c, table, row_begin, row_end, a.count); break;
    case 2: cq_matmul_width<kDot, Unpack2>(c, table, row_begin, row_end, a.count); break;
    case 3: cq_matmul_width<kDot, Unpack3>(c, table, row_begin, row_end, a.count); break;
    default: cq_matmul_width<kDot, Unpack4>(c, table, row_begin, row_end, a.count); break;
  }
}

template <Dot kDot>
void cq_matmul(const codec::CqMatrix& w, const Int8Codebook& cb, const QuantizedActivations& a, uint32_t row_begin,
               uint32_t row_end, float* y, size_t y_stride) {
  cq_matmul_impl<kDot>(w, cb, a, row_begin, row_end, y, y_stride, false);
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
// The avx512-vbmi table's product: avx512-vnni's, with VbmiPairs in the 1-vector CQ2 tiles.
[[maybe_unused]] void cq_matmul_vbmi(const codec::CqMatrix& w, const Int8Codebook& cb, const QuantizedActivations& a,
                                     uint32_t row_begin, uint32_t row_end, float* y, size_t y_stride) {
  cq_matmul_impl<Dot::kAvx512Vnni>(w, cb, a, row_begin, row_end, y, y_stride, true);
}
#endif

}  // namespace x86
}  // namespace

#if defined(CACT_X86_SHARED_DEFINITIONS)
const x86_shared::PermuteMasks& x86_shared::masks_for(uint32_t index_bits) {
  static const PermuteMasks masks[4] = {
      x86::masks_of(x86::layout_of<x86::Unpack1>()), x86::masks_of(x86::layout_of<x86::Unpack2>()),
      x86::masks_of(x86::layout_of<x86::Unpack3>()), x86::masks_of(x86::layout_of<x86::Unpack4>())};
  return masks[index_bits - 1];
}
#endif

}  // namespace cact::kernels

#endif  // x86-64 with AVX2 + F16C
