// The int8 KV cache's quantiser and scores (cact/float_kernels.h) on ymm
// registers, for CPUs with AVX2 but not the AVX-512 table (the engine's own
// loop widens the value rows: a widening kernel took libcact.so a page over its
// size budget). Built with
// -mavx2; chosen by dispatch.cpp only after the CPU check. The rules of common.h
// hold (internal linkage only). Compiles to nothing elsewhere.
//
// The scores are VPMADDWD sums of the stored k + 128 (zero-extended to 16 bits)
// and the query codes (sign-extended): exact, where VPMADDUBSW would saturate.
#if defined(__x86_64__) && defined(__AVX2__)

#include <immintrin.h>

#include <cstring>

#include "cact/float_kernels.h"

namespace cact::kernels {
namespace {

// x[0 .. 8), the lanes from `left` on 0 (a masked load: nothing past x[left − 1]
// is read).
__m256 load_tail(const float* x, uint32_t left) {
  if (left >= 8) return _mm256_loadu_ps(x);
  return _mm256_maskload_ps(
      x, _mm256_cmpgt_epi32(_mm256_set1_epi32(int(left)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}

// max_ps(|x|, mx) keeps mx for a NaN, as the portable std::max(mx, |x|) does;
// a lane past n loads 0, which leaves the maximum of magnitudes as it is.
float scale(const float* x, uint32_t n) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 mx = _mm256_setzero_ps();
  for (uint32_t i = 0; i < n; i += 8) mx = _mm256_max_ps(_mm256_and_ps(load_tail(x + i, n - i), abs_mask), mx);
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  const float absmax = _mm_cvtss_f32(m);
  return absmax > 0.0f ? absmax / 127.0f : 1.0f;
}

// The portable rounding 8 at a time (x/scale − trunc(x/scale) is exact after
// the clamp); the saturating narrowing is the clamp to [-128, 127]. A tail
// runs as a whole step (its lanes past n load 0), of which only the codes of
// the tail are stored.
void codes(const float* x, uint32_t n, float scale, int8_t* q) {
  const __m256 s = _mm256_set1_ps(scale), lo = _mm256_set1_ps(-128.0f), hi = _mm256_set1_ps(128.0f);
  const __m256 half = _mm256_set1_ps(0.5f), mhalf = _mm256_set1_ps(-0.5f);
  for (uint32_t i = 0; i < n; i += 8) {
    const uint32_t left = n - i < 8 ? n - i : 8;
    __m256 y = _mm256_div_ps(load_tail(x + i, left), s);
    y = _mm256_and_ps(y, _mm256_cmp_ps(y, y, _CMP_ORD_Q));
    y = _mm256_min_ps(hi, _mm256_max_ps(lo, y));
    const __m256i t = _mm256_cvttps_epi32(y);
    const __m256 f = _mm256_sub_ps(y, _mm256_cvtepi32_ps(t));
    // A true comparison is all ones (−1): subtracting it adds one.
    __m256i r = _mm256_sub_epi32(t, _mm256_castps_si256(_mm256_cmp_ps(f, half, _CMP_GE_OQ)));
    r = _mm256_add_epi32(r, _mm256_castps_si256(_mm256_cmp_ps(f, mhalf, _CMP_LE_OQ)));
    const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    const __m128i bytes = _mm_packs_epi16(words, words);
    int64_t eight = _mm_cvtsi128_si64(bytes);
    std::memcpy(q + i, &eight, left);
  }
}

// Lanes 8h .. 8h + 7 of a row's 16 dots from the partial sums acc[2h],
// acc[2h + 1] (dword 2p, 2p + 1 of acc[j]: position 4j + p's two pairs).
__m256i dots_of(__m256i a, __m256i b) { return _mm256_permute4x64_epi64(_mm256_hadd_epi32(a, b), 0xD8); }

// One query row against the tile: per group of 4 dims, the 16 positions' k + 128
// as words (4 registers of 4 positions) times the row's 4 codes repeated.
void score_row(const KvScoreTile& t, uint32_t r, __m256i in_lo, __m256i in_hi) {
  __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
  const int8_t* q8 = t.q8 + size_t(r) * t.dq4;
  for (uint32_t g = 0; g < t.dq4 / 4; ++g) {
    int32_t qd;
    std::memcpy(&qd, q8 + 4 * g, 4);
    const __m256i qw = _mm256_cvtepi8_epi16(_mm_set1_epi32(qd));
    const uint8_t* k = t.kt + size_t(g) * 64;
    for (int j = 0; j < 4; ++j) {
      const __m256i kw = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + 16 * j)));
      acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(kw, qw));
    }
  }
  const __m256i bias = _mm256_set1_epi32(t.bias[r]);
  const __m256 coef = _mm256_set1_ps(t.coef[r]);
  float* dst = t.dst + r * t.stride;
  for (int h = 0; h < 2; ++h) {
    const __m256 dot = _mm256_cvtepi32_ps(_mm256_sub_epi32(dots_of(acc[2 * h], acc[2 * h + 1]), bias));
    const __m256 sc = _mm256_mul_ps(_mm256_mul_ps(dot, _mm256_loadu_ps(t.ks + 8 * h)), coef);
    _mm256_maskstore_ps(dst + 8 * h, h == 0 ? in_lo : in_hi, sc);
  }
}

void scores(const KvScoreTile& t) {
  const __m256i la = _mm256_set1_epi32(int(t.la)), lb = _mm256_set1_epi32(int(t.lb));
  __m256i in[2];
  for (int h = 0; h < 2; ++h) {
    const __m256i lane = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(8 * h));
    // la <= lane < lb
    in[h] = _mm256_andnot_si256(_mm256_cmpgt_epi32(la, lane), _mm256_cmpgt_epi32(lb, lane));
  }
  for (uint32_t r = 0; r < t.rows; ++r) score_row(t, r, in[0], in[1]);
}

}  // namespace

// Constant-initialised (no code runs to build it); declared in dispatch.cpp.
extern const KvInt8Kernels kKvInt8Avx2;
const KvInt8Kernels kKvInt8Avx2{scale, codes, scores, nullptr, nullptr};

}  // namespace cact::kernels
#endif
