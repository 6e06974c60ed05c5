#include "engine/hadamard_mlp.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "engine/ops.h"
#include "engine/vmath.h"

#include "cact/float_kernels.h"
#include "cact/half.h"

// Every output of the products below is one accumulator of type Acc that
// starts at 0 and adds its terms in index order (Acc(a) · Acc(x), no FMA); the
// loops only choose which outputs run side by side in vector lanes. So the
// result does not depend on the vector width: the base, AVX2 and AVX-512
// builds of a routine, and the tile shapes each picks, give the same bits.
// For Acc = double each term is float × float, exact in double.
//
// Width-specific builds: the bodies are always-inline templates on the vector
// width in bytes; thin entry points with a target attribute instantiate them
// (the GCC vector extension then maps onto that width's registers).

namespace cact::engine {

void HadaScratch::reserve(uint32_t N, uint32_t tokens) {
  block = std::clamp<uint32_t>(tokens, 1, kMaxBlock);
  const size_t n = size_t(N) * block;
  if (z.size() < n) z.resize(n);
  if (t.size() < n) t.resize(n);
  if (cond.size() < n) cond.resize(n);
  if (tmp.size() < N) tmp.resize(N);
  if (acc.size() < std::max<uint32_t>(N, 8)) acc.resize(std::max<uint32_t>(N, 8));
  if (acc32.size() < std::max<uint32_t>(N, 8)) acc32.resize(std::max<uint32_t>(N, 8));
}

namespace {

// out[k·ok + j] = float(Σ_{i<I} Acc(A[i·ai + k·ak]) · Acc(X[i·xi + j])) for k < K, j < J.
struct Gemm {
  uint32_t K, I, J;
  const float* A;
  size_t ai, ak;
  const float* X;
  size_t xi;
  float* out;
  size_t ok;
};

// One KB × (NV·L) tile of outputs at (k0, j0): L lanes of T per vector (L = 1: scalar).
template <typename T, uint32_t L, uint32_t KB, uint32_t NV>
CACT_VEC_INLINE void gemm_tile(const Gemm& g, uint32_t k0, uint32_t j0) {
  using W = Lanes<T, L>;
  typename W::V acc[KB][NV];
  for (uint32_t k = 0; k < KB; ++k) {
    for (uint32_t v = 0; v < NV; ++v) acc[k][v] = W::splat(T(0));
  }
  for (uint32_t i = 0; i < g.I; ++i) {
    typename W::V x[NV];
    for (uint32_t v = 0; v < NV; ++v) x[v] = W::load(g.X + i * g.xi + j0 + v * L);
      // (Unrolled explicitly: fused_madd's lane loop would otherwise make GCC
      // keep the accumulators in memory.)
#pragma GCC unroll 16
    for (uint32_t k = 0; k < KB; ++k) {
      const auto a = broadcast<typename W::V>(T(g.A[i * g.ai + (k0 + k) * g.ak]));
#pragma GCC unroll 4
      for (uint32_t v = 0; v < NV; ++v) acc[k][v] = fused_madd(a, x[v], acc[k][v]);
    }
  }
  for (uint32_t k = 0; k < KB; ++k) {
    for (uint32_t v = 0; v < NV; ++v) W::store(g.out + (k0 + k) * g.ok + j0 + v * L, acc[k][v]);
  }
}

#if defined(__aarch64__)
// NEON tiles of 8 rows × 8 columns that take each multiplier from a lane of a
// loaded vector (fmla by element) instead of loading it alone: the same fused
// multiply-adds in the same order as gemm_tile, with a quarter of its
// multiplier loads. The lane must be a literal, so the 8 rows are spelled out.
template <int Lane>
CACT_VEC_INLINE void fma_lane(float32x4_t (&acc)[2], float32x4_t x0, float32x4_t x1, float32x4_t a) {
  acc[0] = vfmaq_laneq_f32(acc[0], x0, a, Lane);
  acc[1] = vfmaq_laneq_f32(acc[1], x1, a, Lane);
}
CACT_VEC_INLINE void fma_rows(float32x4_t (&acc)[8][2], float32x4_t x0, float32x4_t x1, float32x4_t a0,
                              float32x4_t a1) {
  fma_lane<0>(acc[0], x0, x1, a0), fma_lane<1>(acc[1], x0, x1, a0);
  fma_lane<2>(acc[2], x0, x1, a0), fma_lane<3>(acc[3], x0, x1, a0);
  fma_lane<0>(acc[4], x0, x1, a1), fma_lane<1>(acc[5], x0, x1, a1);
  fma_lane<2>(acc[6], x0, x1, a1), fma_lane<3>(acc[7], x0, x1, a1);
}
CACT_VEC_INLINE void store_rows(const float32x4_t (&acc)[8][2], float* out, size_t ok) {
  for (uint32_t k = 0; k < 8; ++k, out += ok) vst1q_f32(out, acc[k][0]), vst1q_f32(out + 4, acc[k][1]);
}
// Rows k0 .. k0 + 7 of A contiguous (ak = 1): row i's 8 multipliers are two loads.
// (Strides and pointers are copied out of g: stores through float* may alias it.)
CACT_VEC_INLINE void gemm_tile_lanes(const Gemm& g, uint32_t k0, uint32_t j0) {
  float32x4_t acc[8][2];
  for (auto& row : acc) row[0] = row[1] = vdupq_n_f32(0.0f);
  const float* x = g.X + j0;
  const float* a = g.A + k0;
  const size_t xi = g.xi, ai = g.ai;
  for (uint32_t i = g.I; i > 0; --i, x += xi, a += ai) {
    fma_rows(acc, vld1q_f32(x), vld1q_f32(x + 4), vld1q_f32(a), vld1q_f32(a + 4));
  }
  store_rows(acc, g.out + k0 * g.ok + j0, g.ok);
}
// Columns of A contiguous (ai = 1): four steps of i share one load per row,
// and step i takes lane i mod 4 of each.
template <int Lane>
CACT_VEC_INLINE void step_lanes(float32x4_t (&acc)[8][2], const float* x, const float32x4_t (&a)[8]) {
  const float32x4_t x0 = vld1q_f32(x), x1 = vld1q_f32(x + 4);
  for (uint32_t k = 0; k < 8; ++k) fma_lane<Lane>(acc[k], x0, x1, a[k]);
}
CACT_VEC_INLINE void gemm_tile_lanes_t(const Gemm& g, uint32_t k0, uint32_t j0) {
  float32x4_t acc[8][2];
  for (auto& row : acc) row[0] = row[1] = vdupq_n_f32(0.0f);
  const float* x = g.X + j0;
  const float* a = g.A + k0 * g.ak;
  const size_t xi = g.xi, ak = g.ak;
  uint32_t i = 0;
  for (; i + 4 <= g.I; i += 4, x += 4 * xi, a += 4) {
    float32x4_t ak4[8];
    for (uint32_t k = 0; k < 8; ++k) ak4[k] = vld1q_f32(a + k * ak);
    step_lanes<0>(acc, x, ak4), step_lanes<1>(acc, x + xi, ak4);
    step_lanes<2>(acc, x + 2 * xi, ak4), step_lanes<3>(acc, x + 3 * xi, ak4);
  }
  for (; i < g.I; ++i, x += xi, ++a) {
    const float32x4_t x0 = vld1q_f32(x), x1 = vld1q_f32(x + 4);
    for (uint32_t k = 0; k < 8; ++k) {
      acc[k][0] = vfmaq_n_f32(acc[k][0], x0, a[k * ak]);
      acc[k][1] = vfmaq_n_f32(acc[k][1], x1, a[k * ak]);
    }
  }
  store_rows(acc, g.out + k0 * g.ok + j0, g.ok);
}
#endif

template <typename T, uint32_t L, uint32_t KB>
CACT_VEC_INLINE void gemm_rows(const Gemm& g, uint32_t k0) {
  uint32_t j0 = 0;
#if defined(__aarch64__)
  if constexpr (std::is_same_v<T, float> && L == 4 && KB == 8) {
    if (g.ak == 1) {
      for (; j0 + 2 * L <= g.J; j0 += 2 * L) gemm_tile_lanes(g, k0, j0);
    } else if (g.ai == 1) {
      for (; j0 + 2 * L <= g.J; j0 += 2 * L) gemm_tile_lanes_t(g, k0, j0);
    }
  }
#endif
  for (; j0 + 2 * L <= g.J; j0 += 2 * L) gemm_tile<T, L, KB, 2>(g, k0, j0);
  for (; j0 + L <= g.J; j0 += L) gemm_tile<T, L, KB, 1>(g, k0, j0);
  for (; j0 < g.J; ++j0) gemm_tile<T, 1, KB, 1>(g, k0, j0);
}

// Tiles of KB rows × 2 vectors: 8 rows of floats with AVX-512 and NEON (16 of
// their 32 registers accumulate), otherwise 4 rows.
template <typename T, uint32_t Bytes>
CACT_VEC_INLINE void gemm_body(const Gemm& g) {
  constexpr uint32_t L = Bytes / sizeof(T);
  constexpr uint32_t KB = (Bytes == 64 || !CACT_VEC_X86) && sizeof(T) == 4 ? 8 : 4;
  uint32_t k0 = 0;
  for (; k0 + KB <= g.K; k0 += KB) gemm_rows<T, L, KB>(g, k0);
  for (; k0 < g.K; ++k0) gemm_rows<T, L, 1>(g, k0);
}
CACT_VEC_DISPATCH(gemm, Gemm)

// s[j] += a · x[j] for j < n.
template <typename Acc>
CACT_VEC_INLINE void axpy(Acc* s, Acc a, const float* x, uint32_t n) {
  for (uint32_t j = 0; j < n; ++j) s[j] += a * Acc(x[j]);
}

struct Factor {
  const float *w, *A, *B;
  uint32_t ba, bb, rows_in, rows_out;
  bool untied;
  float *out, *tmp;
  void* acc;  // max(ba, bb) Acc (block-untied)
};

template <typename Acc, uint32_t Bytes>
CACT_VEC_INLINE void factor_body(const Factor& f) {
  Acc* s = static_cast<Acc*>(f.acc);
  const uint32_t ba = f.ba, bb = f.bb, rin = f.rows_in, rout = f.rows_out;
  // W is w viewed as ba × bb, row-major.
  if (!f.untied) {
    // tmp[k][j] = Σ_i A[i][k] W[i][j];  out[k][l] = Σ_j tmp[k][j] B[j][l].
    gemm_at<Acc, Bytes>({rout, rin, bb, f.A, ba, 1, f.w, bb, f.tmp, bb});
    gemm_at<Acc, Bytes>({rout, bb, bb, f.tmp, 1, bb, f.B, bb, f.out, bb});
    return;
  }
  // Block-untied: A [bb][ba][ba], B [ba][bb][bb];
  // tmp[j][k] = Σ_i W[i][j] A[j][i][k];  out[k][l] = Σ_j tmp[j][k] B[k][j][l].
  for (uint32_t j = 0; j < bb; ++j) {
    std::fill(s, s + rout, Acc(0));
    for (uint32_t i = 0; i < rin; ++i) axpy(s, Acc(f.w[i * bb + j]), f.A + (size_t(j) * ba + i) * ba, rout);
    for (uint32_t k = 0; k < rout; ++k) f.tmp[j * ba + k] = float(s[k]);
  }
  for (uint32_t k = 0; k < rout; ++k) {
    std::fill(s, s + bb, Acc(0));
    for (uint32_t j = 0; j < bb; ++j) axpy(s, Acc(f.tmp[j * ba + k]), f.B + (size_t(k) * bb + j) * bb, bb);
    for (uint32_t l = 0; l < bb; ++l) f.out[k * bb + l] = float(s[l]);
  }
}

CACT_VEC_DISPATCH(factor, Factor)

template <typename Acc>
Acc* acc_of(HadaScratch& s) {
  if constexpr (std::is_same_v<Acc, float>) {
    return s.acc32.data();
  } else {
    return s.acc.data();
  }
}

struct Mlp {
  const Weights* w;
  uint32_t l;
  bool untied;
  const float* m;
  size_t m_stride;
  uint32_t count;
  float* out;
  size_t out_stride;
  HadaScratch* s;
};

// z[i] = t[p[i]] · d[i] (d = nullptr: t[p[i]]) for i < n: the values copied
// exactly, so the same bits as a wide table's gathers.
CACT_VEC_INLINE void permute(const kernels::FloatMlpKernels* wide, const float* t, const uint32_t* p, const float* d,
                             uint32_t n, float* z) {
  if (wide != nullptr) return wide->permute(t, p, d, n, z);
  for (uint32_t i = 0; i < n; ++i) z[i] = d != nullptr ? t[p[i]] * d[i] : t[p[i]];
}

// Tokens c0 .. c0 + nb (nb <= s.block) stage by stage: each stage runs for
// every token of the block before the next, so that its weights (cond_v,
// cond_u, one factor pair...) are read from L1 after the first token. Each
// token's values go through the same operations as on its own.
template <typename Acc, uint32_t Bytes>
CACT_VEC_INLINE void mlp_block(const Mlp& a, uint32_t c0, uint32_t nb) {
  constexpr bool kF32 = std::is_same_v<Acc, float>;
  const Weights& w = *a.w;
  const Geometry& g = w.g;
  const LayerWeights& lw = w.layers[a.l];
  const uint32_t N = g.N, D = g.D, ba = g.ba, bb = g.bb;
  HadaScratch& s = *a.s;
  const auto m_of = [&](uint32_t c) { return a.m + (c0 + c) * a.m_stride; };
  const auto z_of = [&](uint32_t c) { return s.z.data() + size_t(c) * N; };
  const auto t_of = [&](uint32_t c) { return s.t.data() + size_t(c) * N; };
  const auto cond_of = [&](uint32_t c) { return s.cond.data() + size_t(c) * N; };
  Acc* acc = acc_of<Acc>(s);
  // The stages that read FP16 in the wide float builds (cact/float_kernels.h);
  // the portable code below otherwise.
  // A table always serves the wide float builds (the same flags build both:
  // kernels.cmake), so their portable stages are not compiled (library size).
  constexpr bool kWide = kF32 && Bytes >= 32;
  const kernels::FloatMlpKernels* wide = kWide ? kernels::float_mlp_kernels(VecIsa(Bytes)) : nullptr;

  // cond = 1 + softmax(cond_vᵀ m) · cond_u. The 8 logits are sums over D: in
  // float they run as 8 interleaved partial sums (d mod 8, added in order at
  // the end) so that decoding is not bound by one dependent chain.
  float logits[HadaScratch::kMaxBlock][8];
  for (uint32_t c = 0; c < nb; ++c) {
    const float* m = m_of(c);
    if constexpr (kWide) {
      wide->cond_logits(m, lw.cond_v, D, logits[c]);
      softmax<Acc>(logits[c], 8);
      continue;
    }
    constexpr uint32_t kSplit = kF32 ? 8 : 1;
    using W8 = Lanes<Acc, 8>;
    typename W8::V part[kSplit];
    for (uint32_t q = 0; q < kSplit; ++q) part[q] = W8::splat(Acc(0));
    const auto add_row = [&](typename W8::V& p, uint32_t row) {
      p = fused_madd(broadcast<typename W8::V>(Acc(m[row])), load_halves<Acc, 8>(lw.cond_v + size_t(row) * 8), p);
    };
    uint32_t d = 0;
    for (; d + kSplit <= D; d += kSplit) {
#pragma GCC unroll 8
      for (uint32_t q = 0; q < kSplit; ++q) add_row(part[q], d + q);
    }
    for (const uint32_t d0 = d; d < D; ++d) add_row(part[d - d0], d);
    for (uint32_t q = 1; q < kSplit; ++q) part[0] += part[q];
    for (uint32_t r = 0; r < 8; ++r) logits[c][r] = float(part[0][r]);
    softmax<Acc>(logits[c], 8);
  }
  // cond[i] = 1 + Σ_r p_r cond_u[r][i], r in order, K vectors of L outputs at
  // a time: each output is a chain of 8 dependent fused multiply-adds, so K
  // independent chains keep the FMA units busy (one vector at a time would
  // wait on each chain's latency).
  const uint16_t* cu = lw.cond_u;
  for (uint32_t c = 0; c < nb; ++c) {
    const float* p = logits[c];
    float* cond = cond_of(c);
    if constexpr (kWide) {
      wide->cond_values(p, cu, N, cond);
      continue;
    }
    const auto cond_at = [&]<uint32_t L, uint32_t K>(uint32_t i) {
      using W = Lanes<Acc, L>;
      typename W::V v[K];
#pragma GCC unroll 4
      for (uint32_t k = 0; k < K; ++k) v[k] = W::splat(Acc(1));
#pragma GCC unroll 8
      for (uint32_t r = 0; r < 8; ++r) {
        const auto pr = broadcast<typename W::V>(Acc(p[r]));
#pragma GCC unroll 4
        for (uint32_t k = 0; k < K; ++k)
          v[k] = fused_madd(pr, load_halves<Acc, L>(cu + size_t(r) * N + i + k * L), v[k]);
      }
#pragma GCC unroll 4
      for (uint32_t k = 0; k < K; ++k) W::store(cond + i + k * L, v[k]);
    };
    constexpr uint32_t L = Bytes / sizeof(Acc);
    uint32_t i0 = 0;
    for (; i0 + 4 * L <= N; i0 += 4 * L) cond_at.template operator()<L, 4>(i0);
    for (; i0 + L <= N; i0 += L) cond_at.template operator()<L, 1>(i0);
    for (; i0 < N; ++i0) cond_at.template operator()<1, 1>(i0);
  }

  // W rows from ceil(D / bb) on are zero in the first factor, and only those
  // output rows of the last factor are read.
  const uint32_t rows_d = std::min(ba, (D + bb - 1) / bb);
  Factor f{nullptr, nullptr, nullptr, ba, bb, ba, ba, a.untied, nullptr, s.tmp.data(), acc};
  const auto factor_of = [&](uint32_t c) {
    f.w = z_of(c);
    f.out = t_of(c);
    factor_body<Acc, Bytes>(f);
  };
  // z = P1(F(d1 ⊙ pad(m); w1a, w1b)).
  const float* d1 = lw.d1.data();
  f.A = lw.w1a.data();
  f.B = lw.w1b.data();
  f.rows_in = rows_d;
  for (uint32_t c = 0; c < nb; ++c) {
    const float* m = m_of(c);
    float* z = z_of(c);
    for (uint32_t i = 0; i < D; ++i) z[i] = d1[i] * m[i];
    std::fill(z + D, z + rows_d * bb, 0.0f);
    factor_of(c);
  }
  // z = P2(F(silu(d2 ⊙ cond ⊙ P1(t) + b2); w2a, w2b)).
  const uint32_t* p1 = w.p1.data();
  const float *d2 = lw.d2.data(), *b2 = lw.b2.data();
  f.A = lw.w2a.data();
  f.B = lw.w2b.data();
  f.rows_in = ba;
  for (uint32_t c = 0; c < nb; ++c) {
    float* z = z_of(c);
    const float* cond = cond_of(c);
    permute(wide, t_of(c), p1, nullptr, N, z);
    for (uint32_t i = 0; i < N; ++i) {
      const float x = d2[i] * cond[i] * z[i] + b2[i];
      if constexpr (kF32) {
        z[i] = silu_approx(x);
      } else {
        z[i] = silu(x);
      }
    }
    factor_of(c);
  }
  // z = F(d3 ⊙ P2(t); w3a, w3b); return (d4 ⊙ z)[0, D).
  const uint32_t* p2 = w.p2.data();
  const float *d3 = lw.d3.data(), *d4 = lw.d4.data();
  f.A = lw.w3a.data();
  f.B = lw.w3b.data();
  f.rows_out = rows_d;
  for (uint32_t c = 0; c < nb; ++c) {
    permute(wide, t_of(c), p2, d3, N, z_of(c));
    factor_of(c);
    const float* t = t_of(c);
    float* out = a.out + (c0 + c) * a.out_stride;
    for (uint32_t i = 0; i < D; ++i) out[i] = d4[i] * t[i];
  }
}

template <typename Acc, uint32_t Bytes>
CACT_VEC_INLINE void mlp_body(const Mlp& a) {
  const uint32_t block = a.s->block;
  for (uint32_t c = 0; c < a.count; c += block) mlp_block<Acc, Bytes>(a, c, std::min(block, a.count - c));
}

CACT_VEC_DISPATCH(mlp, Mlp)

}  // namespace

template <typename Acc>
void hada_factor(const float* w, const float* A, const float* B, uint32_t ba, uint32_t bb, bool untied, float* out,
                 float* tmp, Acc* acc, uint32_t rows_in, uint32_t rows_out, VecIsa isa) {
  std::vector<Acc> own;
  if (acc == nullptr) {
    own.resize(std::max(ba, bb));
    acc = own.data();
  }
  factor<Acc>(isa,
              {w, A, B, ba, bb, rows_in == 0 ? ba : rows_in, rows_out == 0 ? ba : rows_out, untied, out, tmp, acc});
}

template <typename Acc>
void hadamard_mlp(const Weights& w, uint32_t l, bool untied, const float* m, size_t m_stride, uint32_t count,
                  float* out, size_t out_stride, HadaScratch& s, VecIsa isa) {
  const Mlp a{&w, l, untied, m, m_stride, count, out, out_stride, &s};
  if constexpr (std::is_same_v<Acc, double>) {
    mlp_base<double>(a);  // the reference path: one build (binary size; it is not meant to be fast)
  } else {
    mlp<Acc>(isa, a);
  }
}

template void hada_factor<double>(const float*, const float*, const float*, uint32_t, uint32_t, bool, float*, float*,
                                  double*, uint32_t, uint32_t, VecIsa);
template void hada_factor<float>(const float*, const float*, const float*, uint32_t, uint32_t, bool, float*, float*,
                                 float*, uint32_t, uint32_t, VecIsa);
template void hadamard_mlp<double>(const Weights&, uint32_t, bool, const float*, size_t, uint32_t, float*, size_t,
                                   HadaScratch&, VecIsa);
template void hadamard_mlp<float>(const Weights&, uint32_t, bool, const float*, size_t, uint32_t, float*, size_t,
                                  HadaScratch&, VecIsa);

}  // namespace cact::engine
