#pragma once
// The float MLP's FP16 stages (cact/float_kernels.h) for one x86 float width,
// written once over a width's vector type: float_avx2.cpp and float_avx512.cpp
// compile it with their ISA flags. The rules of common.h hold (internal
// linkage only; nothing runs before dispatch.cpp's CPU check).
//
// F16C converts FP16 exactly and each output takes the portable twin's fused
// multiply-adds in its order (engine/hadamard_mlp.cpp mlp_block), so every
// width gives the twin's bits.
#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "cact/float_kernels.h"

namespace cact::kernels {
namespace {
namespace x86_float {

// 8 floats per vector.
struct Ymm {
  using V = __m256;
  static constexpr uint32_t kLanes = 8;
  static V splat(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V halves(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static V fmadd(V a, V x, V acc) { return _mm256_fmadd_ps(a, x, acc); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V gather(const float* t, const uint32_t* index) {
    return _mm256_i32gather_ps(t, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(index)), 4);
  }
};

#if defined(__AVX512F__)
// 16 floats per vector. (The zero-masked conversion and gather: GCC 12 warns
// about the plain forms' undefined sources.)
struct Zmm {
  using V = __m512;
  static constexpr uint32_t kLanes = 16;
  static V splat(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V halves(const uint16_t* p) {
    return _mm512_maskz_cvtph_ps(__mmask16(0xFFFF), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static V fmadd(V a, V x, V acc) { return _mm512_fmadd_ps(a, x, acc); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V gather(const float* t, const uint32_t* index) {
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), __mmask16(0xFFFF), _mm512_loadu_si512(index), t, 4);
  }
};
#endif

// cond_v rows hold 8 entries: one 8-lane vector per row in every width.
void cond_logits(const float* m, const uint16_t* cond_v, uint32_t D, float logits[8]) {
  Ymm::V part[8];
  for (Ymm::V& p : part) p = Ymm::splat(0.0f);
  uint32_t d = 0;
  for (; d + 8 <= D; d += 8) {
#pragma GCC unroll 8
    for (uint32_t q = 0; q < 8; ++q) {
      part[q] = Ymm::fmadd(Ymm::splat(m[d + q]), Ymm::halves(cond_v + size_t(d + q) * 8), part[q]);
    }
  }
  for (const uint32_t d0 = d; d < D; ++d) {
    part[d - d0] = Ymm::fmadd(Ymm::splat(m[d]), Ymm::halves(cond_v + size_t(d) * 8), part[d - d0]);
  }
  for (uint32_t q = 1; q < 8; ++q) part[0] = _mm256_add_ps(part[0], part[q]);
  Ymm::store(logits, part[0]);
}

// Four vectors of outputs at a time: each output is a chain of 8 dependent
// fused multiply-adds, so four independent chains keep the FMA units busy.
template <typename W>
void cond_values(const float p[8], const uint16_t* cond_u, uint32_t N, float* cond) {
  constexpr uint32_t L = W::kLanes;
  uint32_t i = 0;
  for (; i + 4 * L <= N; i += 4 * L) {
    typename W::V v[4];
    for (typename W::V& x : v) x = W::splat(1.0f);
#pragma GCC unroll 8
    for (uint32_t r = 0; r < 8; ++r) {
      const typename W::V pr = W::splat(p[r]);
#pragma GCC unroll 4
      for (uint32_t k = 0; k < 4; ++k) v[k] = W::fmadd(pr, W::halves(cond_u + size_t(r) * N + i + L * k), v[k]);
    }
    for (uint32_t k = 0; k < 4; ++k) W::store(cond + i + L * k, v[k]);
  }
  for (; i < N; ++i) {
    float v = 1.0f;
    for (uint32_t r = 0; r < 8; ++r) v = __builtin_fmaf(p[r], _cvtsh_ss(cond_u[size_t(r) * N + i]), v);
    cond[i] = v;
  }
}

// The values are copied exactly (and multiplied once): the twin's bits.
template <typename W>
void permute(const float* t, const uint32_t* perm, const float* d, uint32_t n, float* z) {
  constexpr uint32_t L = W::kLanes;
  uint32_t i = 0;
  for (; i + L <= n; i += L) {
    typename W::V v = W::gather(t, perm + i);
    if (d != nullptr) v = W::mul(v, W::load(d + i));
    W::store(z + i, v);
  }
  for (; i < n; ++i) z[i] = d != nullptr ? t[perm[i]] * d[i] : t[perm[i]];
}

}  // namespace x86_float
}  // namespace
}  // namespace cact::kernels

#endif  // x86-64 with AVX2 + F16C + FMA
