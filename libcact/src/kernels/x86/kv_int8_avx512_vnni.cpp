// The int8 KV cache's quantiser, scores and value widening (cact/float_kernels.h) with
// AVX-512BW/VL byte stores and AVX512-VNNI dots. Built with -mavx512f
// -mavx512bw -mavx512vl -mavx512vnni; chosen by dispatch.cpp only after the CPU
// check. The rules of common.h hold (internal linkage only). Compiles to
// nothing elsewhere.
//
// GCC 12's AVX-512 intrinsic headers initialise their "undefined" vectors from
// themselves, which -W(maybe-)uninitialized reports (GCC bug 105593); the
// pragmas must precede <immintrin.h>.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#if defined(__x86_64__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)

#include <immintrin.h>

#include <cstring>

#include "cact/float_kernels.h"

namespace cact::kernels {
namespace {

__mmask16 tail_mask(uint32_t left) { return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u); }

// max_ps(|x|, mx) keeps mx for a NaN, as the portable std::max(mx, |x|) does.
float scale(const float* x, uint32_t n) {
  __m512 mx = _mm512_setzero_ps();
  for (uint32_t i = 0; i < n; i += 16) {
    mx = _mm512_max_ps(_mm512_abs_ps(_mm512_maskz_loadu_ps(tail_mask(n - i), x + i)), mx);
  }
  const float absmax = _mm512_reduce_max_ps(mx);
  return absmax > 0.0f ? absmax / 127.0f : 1.0f;
}

// The portable rounding 16 at a time (x/scale − trunc(x/scale) is exact after
// the clamp); the saturating narrowing is the clamp to [-128, 127].
void codes(const float* x, uint32_t n, float scale, int8_t* q) {
  const __m512 s = _mm512_set1_ps(scale), lo = _mm512_set1_ps(-128.0f), hi = _mm512_set1_ps(128.0f);
  const __m512 half = _mm512_set1_ps(0.5f), mhalf = _mm512_set1_ps(-0.5f);
  const __m512i one = _mm512_set1_epi32(1);
  for (uint32_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    __m512 y = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), s);
    y = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(y, y, _CMP_ORD_Q), y);
    y = _mm512_min_ps(hi, _mm512_max_ps(lo, y));
    const __m512i t = _mm512_cvttps_epi32(y);
    const __m512 f = _mm512_sub_ps(y, _mm512_cvtepi32_ps(t));
    __m512i v = _mm512_mask_add_epi32(t, _mm512_cmp_ps_mask(f, half, _CMP_GE_OQ), t, one);
    v = _mm512_mask_sub_epi32(v, _mm512_cmp_ps_mask(f, mhalf, _CMP_LE_OQ), v, one);
    _mm_mask_storeu_epi8(q + i, m, _mm512_cvtsepi32_epi8(v));
  }
}

// `R` query rows (starting at row r0 of the tile's job) against the 16 rows:
// VPDPBUSD of the stored k + 128 against the broadcast query dword, less the
// bias 128·Σq.
template <uint32_t R>
void score_tile(const KvScoreTile& t, uint32_t r0, __mmask16 lanes) {
  __m512i acc[R];
  for (uint32_t r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
  const int8_t* q8 = t.q8 + size_t(r0) * t.dq4;
  for (uint32_t g = 0; g < t.dq4 / 4; ++g) {
    const __m512i k = _mm512_loadu_si512(t.kt + size_t(g) * 64);
    for (uint32_t r = 0; r < R; ++r) {
      int32_t qd;
      std::memcpy(&qd, q8 + size_t(r) * t.dq4 + 4 * g, 4);
      acc[r] = _mm512_dpbusd_epi32(acc[r], k, _mm512_set1_epi32(qd));
    }
  }
  const __m512 ksv = _mm512_loadu_ps(t.ks);
  for (uint32_t r = 0; r < R; ++r) {
    const __m512 dot = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r], _mm512_set1_epi32(t.bias[r0 + r])));
    _mm512_mask_storeu_ps(t.dst + (r0 + r) * t.stride, lanes,
                          _mm512_mul_ps(_mm512_mul_ps(dot, ksv), _mm512_set1_ps(t.coef[r0 + r])));
  }
}

// Rows in tiles of 6 (needle3's GQA group), then 4, 2, 1 (few instances: code size).
void scores(const KvScoreTile& t) {
  const auto lanes = __mmask16((0xFFFFu >> (16 - t.lb)) & (0xFFFFu << t.la));
  uint32_t r = 0;
  for (; r + 6 <= t.rows; r += 6) score_tile<6>(t, r, lanes);
  for (; r + 4 <= t.rows; r += 4) score_tile<4>(t, r, lanes);
  for (; r + 2 <= t.rows; r += 2) score_tile<2>(t, r, lanes);
  if (r < t.rows) score_tile<1>(t, r, lanes);
}

// 16 bytes sign-extended and converted per step (GCC 12 turns the plain loop into
// 256-bit byte -> word -> dword steps with extracts).
void widen(const int8_t* v, size_t n, float* out) {
  // The tail as one masked step: a scalar tail loop would be vectorised and
  // unrolled into a kilobyte of code.
  for (size_t i = 0; i < n; i += 16) {
    const auto lanes = __mmask16(n - i >= 16 ? 0xFFFFu : (1u << (n - i)) - 1);
    const __m128i bytes = _mm_maskz_loadu_epi8(lanes, v + i);
    _mm512_mask_storeu_ps(out + i, lanes, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes)));
  }
}

// Six heads × 64 columns (dv = 64: the rows and outputs at fixed offsets, so
// the 24 accumulators and their addresses stay in registers).
void values_one(float* out, uint32_t heads, const float* w, size_t w_stride, const int8_t* v, uint32_t ia,
                uint32_t ib) {
  constexpr uint32_t H = 6, C = 4, DV = 64;
  for (uint32_t h0 = 0; h0 < heads; h0 += H, out += H * DV, w += H * w_stride) {
    // (Unrolled by pragma, so that every accumulator is a register before
    // scalar replacement runs; otherwise the array goes through the stack.)
    __m512 acc[H * C];
#pragma GCC unroll 24
    for (uint32_t k = 0; k < H * C; ++k) acc[k] = _mm512_loadu_ps(out + 16 * k);
    const int8_t* row = v + size_t(ia) * DV;
#pragma GCC unroll 1
    for (uint32_t i = ia; i < ib; ++i, row += DV) {
      __m512 x[C];
#pragma GCC unroll 4
      for (uint32_t c = 0; c < C; ++c) {
        x[c] =
            _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 16 * c))));
      }
#pragma GCC unroll 6
      for (uint32_t h = 0; h < H; ++h) {
        const __m512 a = _mm512_set1_ps(w[h * w_stride + i]);
#pragma GCC unroll 4
        for (uint32_t c = 0; c < C; ++c) acc[h * C + c] = _mm512_fmadd_ps(a, x[c], acc[h * C + c]);
      }
    }
#pragma GCC unroll 24
    for (uint32_t k = 0; k < H * C; ++k) _mm512_storeu_ps(out + 16 * k, acc[k]);
  }
}

}  // namespace

// Constant-initialised (no code runs to build it); declared in dispatch.cpp.
extern const KvInt8Kernels kKvInt8Avx512Vnni;
const KvInt8Kernels kKvInt8Avx512Vnni{scale, codes, scores, widen, values_one};

}  // namespace cact::kernels
#endif
