#pragma once
// Activations in, weight rows out: the quantiser of every x86 table (FWHT,
// absmax, rounding) and dequantize_row, on ymm and (AVX-512) zmm registers.
#include "kernels/x86/common.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__)

namespace cact::kernels {
namespace {
namespace x86 {

// ----------------------------------------------------------------------------
// Activations: FWHT + absmax + round half away from zero, bit-identical to
// quantize_group_scalar (same butterfly pairs, same stage order, same scale).

// One butterfly stage inside each register: lanes whose `mask` bit is set are
// the upper element b of a pair (a, b) and become (-b) + a, which is a - b
// bit for bit; the others a + b. The sign flip is an exact xor, so a stage is
// three operations (partner, xor, add) where an add, a subtract and a blend
// took four, and it needs one temporary register instead of two.
template <int kMask>
inline __m256 butterfly_in_register(__m256 v, __m256 partner) {
  const __m256 negate = _mm256_blend_ps(_mm256_setzero_ps(), _mm256_set1_ps(-0.0f), kMask);
  return _mm256_add_ps(_mm256_xor_ps(v, negate), partner);
}

// Forced inline and unrolled: as a call, or as loops, GCC keeps x[] on the
// stack and runs the registers' butterfly chains one after another.
[[gnu::always_inline]] inline void fwht128(__m256 (&x)[16]) {
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    __m256 v = x[i];
    v = butterfly_in_register<0xAA>(v, _mm256_permute_ps(v, 0xB1));          // half = 1
    v = butterfly_in_register<0xCC>(v, _mm256_permute_ps(v, 0x4E));          // half = 2
    v = butterfly_in_register<0xF0>(v, _mm256_permute2f128_ps(v, v, 0x01));  // half = 4
    x[i] = v;
  }
#pragma GCC unroll 4
  for (int h = 1; h < 16; h *= 2) {  // half = 8 .. 64: whole registers
#pragma GCC unroll 16
    for (int k = 0; k < 8; ++k) {
      const int i = k / h * 2 * h + k % h;  // the k-th lower element of the stage's pairs
      const __m256 a = x[i];
      const __m256 b = x[i + h];
      x[i] = _mm256_add_ps(a, b);
      x[i + h] = _mm256_sub_ps(a, b);
    }
  }
  const __m256 scale = _mm256_set1_ps(1.0f / __builtin_sqrtf(float(kG)));  // as codec::fwht;
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) x[i] = _mm256_mul_ps(x[i], scale);
}

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// Round half away from zero (std::lround) and clamp to [-127, 127], as the
// scalar's clamp(lround(y)), in three steps (__m256 here, __m512 below):
//  1. clamp y to [-127, 127] first: lround is monotone and fixes the integers
//     +-127, so lround(clamp(y)) = clamp(lround(y)); a NaN becomes -127 (max
//     returns its second operand), as the scalar's lround(NaN) clamps to.
//  2. y + copysign(0.5 - 2^-25, y), rounded to float once: moving |y| up by
//     just under a half carries it past the next integer exactly when its
//     fraction is at least 0.5 (a tie's sum, 2^-25 short of the integer,
//     rounds to it); +0.5 itself would carry 0.49999997 to 1.
//  3. truncate to int32.
// Checked against clamp(lround(y)) for every float bit pattern where lround
// is defined. 5 operations per zmm register, 6 per ymm (docs/KERNELS.md).
constexpr float kJustUnderHalf = 0.49999997f;  // 0.5 - 2^-25
inline __m256i round_clamp(__m256 y) {
  y = _mm256_min_ps(_mm256_max_ps(y, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
  const __m256 half = _mm256_or_ps(_mm256_and_ps(y, _mm256_set1_ps(-0.0f)), _mm256_set1_ps(kJustUnderHalf));
  return _mm256_cvttps_epi32(_mm256_add_ps(y, half));
}

void quantize_group(const float* src, int8_t* q, float* scale_out) {
  __m256 x[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) x[i] = _mm256_loadu_ps(src + 8 * i);
  fwht128(x);
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  // |x| and their max, which is exact in any order: a tree, not a chain of 16.
  __m256 m[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) m[i] = _mm256_andnot_ps(sign_bit, x[i]);
#pragma GCC unroll 4
  for (int width = 8; width > 0; width /= 2) {
#pragma GCC unroll 8
    for (int i = 0; i < width; ++i) m[i] = _mm256_max_ps(m[i], m[i + width]);
  }
  const GroupScale gs = group_scale(hmax(m[0]));
  if (gs.zero()) {
    for (__m256& v : x) v = _mm256_setzero_ps();
  }
  const __m256 vinv = _mm256_set1_ps(gs.inv);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int i = 0; i < 16; i += 4) {
    const __m256i a = round_clamp(_mm256_mul_ps(x[i], vinv));
    const __m256i b = round_clamp(_mm256_mul_ps(x[i + 1], vinv));
    const __m256i c = round_clamp(_mm256_mul_ps(x[i + 2], vinv));
    const __m256i d = round_clamp(_mm256_mul_ps(x[i + 3], vinv));
    const __m256i abcd = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 8 * i), _mm256_permutevar8x32_epi32(abcd, order));
  }
  *scale_out = gs.scale;
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
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      const __m256i index = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(indices + 8 * i)));
      const __m256 upper = _mm256_castsi256_ps(_mm256_cmpgt_epi32(index, _mm256_set1_epi32(7)));
      const __m256 e =
          _mm256_blendv_ps(_mm256_permutevar8x32_ps(low, index), _mm256_permutevar8x32_ps(high, index), upper);
      x[i] = _mm256_mul_ps(e, vnorm);
    }
    fwht128(x);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) _mm256_storeu_ps(dst + 8 * i, x[i]);
  });
}

#if defined(__AVX512F__)
// The same quantiser on zmm registers (avx512-vnni table): 8 registers of 16
// floats per group. Stages of half-width 1, 2, 4 and 8 run inside a register
// (partner by vpermilps / vshuff32x4, then one fused multiply-add per lane:
// partner + v · (+1) on the lower lanes, partner + v · (−1) on the upper ones,
// which is the scalar's x[i] + x[i+h] and x[i] - x[i+h] rounded once: v · ±1
// is exact), 16, 32, 64 pair whole registers; stage order and operands per
// element are the scalar's, so the same bits. (One FMA instead of an add and
// a masked subtract: a third fewer operations in those stages, which share the
// two vector ports with everything else.)
template <int kMask>
inline __m512 butterfly_in_register(__m512 v, __m512 swapped) {
  const __m512 sign = _mm512_mask_blend_ps(__mmask16(kMask), _mm512_set1_ps(1.0f), _mm512_set1_ps(-1.0f));
  return _mm512_fmadd_ps(v, sign, swapped);
}

inline __m512i round_clamp(__m512 y) {  // as the __m256 version above
  y = _mm512_min_ps(_mm512_max_ps(y, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
  // (y & sign) | 0.49999997 in one ternary-logic operation (0xEA: A & B | C).
  const __m512i half = _mm512_ternarylogic_epi32(_mm512_castps_si512(y), _mm512_set1_epi32(INT32_MIN),
                                                 _mm512_castps_si512(_mm512_set1_ps(kJustUnderHalf)), 0xEA);
  return _mm512_cvttps_epi32(_mm512_add_ps(y, _mm512_castsi512_ps(half)));
}

// The FWHT of N groups, x[n][0..8) holding group n's 128 floats, the groups'
// stages side by side; then the scale, as codec::fwht.
template <int N>
__attribute__((always_inline)) inline void fwht_groups512(__m512 (&x)[N][8]) {
#pragma GCC unroll 24
  for (int i = 0; i < 8 * N; ++i) {
    __m512 v = x[i / 8][i % 8];
    v = butterfly_in_register<0xAAAA>(v, _mm512_permute_ps(v, 0xB1));        // half = 1
    v = butterfly_in_register<0xCCCC>(v, _mm512_permute_ps(v, 0x4E));        // half = 2
    v = butterfly_in_register<0xF0F0>(v, _mm512_shuffle_f32x4(v, v, 0xB1));  // half = 4
    v = butterfly_in_register<0xFF00>(v, _mm512_shuffle_f32x4(v, v, 0x4E));  // half = 8
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
  __mmask16 keep[N];  // none of a zero group's lanes (its values may be infinite or NaN)
  for (int n = 0; n < N; ++n) {
    __m512 m[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) m[i] = _mm512_abs_ps(x[n][i]);
    // max is exact in any order: a tree, not a chain of 8
    const __m512 m4 = _mm512_max_ps(_mm512_max_ps(_mm512_max_ps(m[0], m[1]), _mm512_max_ps(m[2], m[3])),
                                    _mm512_max_ps(_mm512_max_ps(m[4], m[5]), _mm512_max_ps(m[6], m[7])));
    const GroupScale gs = group_scale(_mm512_reduce_max_ps(m4));
    keep[n] = gs.zero() ? __mmask16(0) : __mmask16(0xFFFF);
    vinv[n] = _mm512_set1_ps(gs.inv);
    *scale_out[n] = gs.scale;
  }
  // Four registers' codes (already within +-127) narrowed by in-lane
  // saturating packs and put in order by one dword permute: 4 shuffle-port
  // operations per 64 codes, where vpmovdb takes 2 per 16.
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
#pragma GCC unroll 6
  for (int i = 0; i < 2 * N; ++i) {
    __m512i c[4];
    for (int k = 0; k < 4; ++k)
      c[k] = round_clamp(_mm512_maskz_mul_ps(keep[i / 2], x[i / 2][4 * (i % 2) + k], vinv[i / 2]));
    const __m512i packed = _mm512_packs_epi16(_mm512_packs_epi32(c[0], c[1]), _mm512_packs_epi32(c[2], c[3]));
    _mm512_storeu_si512(q[i / 2] + 64 * (i % 2), _mm512_permutexvar_epi32(order, packed));
  }
}

void quantize_group512(const float* src, int8_t* q, float* scale_out) { quantize_groups512<1>(&src, &q, &scale_out); }

// quantize_activations_by_group with the whole groups of a vector three at a time.
// (avx512_amx.cpp calls avx512-vnni's through its table: unused there.)
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
  const uint32_t bits_per_index = codec::index_bits(w.bits);
  if (w.bits != codec::kTernary && bits_per_index == 1) {
    dequantize_row_by_groups<false>(w, codebook, r, out, group_with(packed_index_chunk512<1>));
  } else if (w.bits != codec::kTernary && bits_per_index == 2) {
    dequantize_row_by_groups<false>(w, codebook, r, out, group_with(packed_index_chunk512<2>));
  } else {
    dequantize_row_by_groups(
        w, codebook, r, out, group_with([](const uint8_t* indices, int i) {
          return _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(indices + 16 * i)));
        }));
  }
}
#endif  // AVX512F

}  // namespace x86
}  // namespace
}  // namespace cact::kernels

#endif  // x86-64 with AVX2 + F16C
