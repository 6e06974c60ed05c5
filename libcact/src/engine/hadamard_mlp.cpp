#include "engine/hadamard_mlp.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/ops.h"

// The loops below keep, for every output element, exactly the sum of the
// straightforward formulation (double accumulator from 0, terms in index
// order); they only walk the elements in an order the compiler can
// vectorise (contiguous inner loops over independent outputs). Each term is
// float × float, exact in double, so contraction could not change it either.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#define CACT_HOT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CACT_HOT_CLONES
#endif

namespace cact::engine {

void HadaScratch::reserve(uint32_t N) {
  if (z.size() < N) z.resize(N);
  if (t.size() < N) t.resize(N);
  if (cond.size() < N) cond.resize(N);
  if (tmp.size() < N) tmp.resize(N);
  if (acc.size() < std::max<uint32_t>(N, 8)) acc.resize(std::max<uint32_t>(N, 8));
}

namespace {

// s[j] += a * x[j] for j < n (doubles from floats).
inline void axpy(double* s, double a, const float* x, uint32_t n) {
  for (uint32_t j = 0; j < n; ++j) s[j] += a * double(x[j]);
}

// out[k*ok + j] = float(Σ_{i<I} double(A[i*ai + k*ak]) · double(X[i*xi + j])) for k < K, j < J,
// each sum a double accumulator from 0 in i order. Register tiles of 4 × 8 outputs.
inline void gemm_tn(uint32_t K, uint32_t I, uint32_t J, const float* A, size_t ai, size_t ak, const float* X, size_t xi,
                    float* out, size_t ok) {
  constexpr uint32_t KB = 4, JB = 8;
  uint32_t k0 = 0;
  for (; k0 + KB <= K; k0 += KB) {
    uint32_t j0 = 0;
    for (; j0 + JB <= J; j0 += JB) {
      double acc[KB][JB] = {};
      for (uint32_t i = 0; i < I; ++i) {
        double x[JB];
        for (uint32_t j = 0; j < JB; ++j) x[j] = double(X[i * xi + j0 + j]);
        for (uint32_t k = 0; k < KB; ++k) {
          const double a = double(A[i * ai + (k0 + k) * ak]);
          for (uint32_t j = 0; j < JB; ++j) acc[k][j] += a * x[j];
        }
      }
      for (uint32_t k = 0; k < KB; ++k) {
        for (uint32_t j = 0; j < JB; ++j) out[(k0 + k) * ok + j0 + j] = float(acc[k][j]);
      }
    }
    for (; j0 < J; ++j0) {
      for (uint32_t k = k0; k < k0 + KB; ++k) {
        double acc = 0.0;
        for (uint32_t i = 0; i < I; ++i) acc += double(A[i * ai + k * ak]) * double(X[i * xi + j0]);
        out[k * ok + j0] = float(acc);
      }
    }
  }
  for (; k0 < K; ++k0) {
    for (uint32_t j = 0; j < J; ++j) {
      double acc = 0.0;
      for (uint32_t i = 0; i < I; ++i) acc += double(A[i * ai + k0 * ak]) * double(X[i * xi + j]);
      out[k0 * ok + j] = float(acc);
    }
  }
}

}  // namespace

CACT_HOT_CLONES
void hada_factor(const float* w, const float* A, const float* B, uint32_t ba, uint32_t bb, bool untied, float* out,
                 float* tmp, double* s) {
  std::vector<double> own;
  if (s == nullptr) {
    own.resize(std::max(ba, bb));
    s = own.data();
  }
  // W is w viewed as ba × bb, row-major.
  if (!untied) {
    // tmp[k][j] = Σ_i A[i][k] W[i][j];  out[k][l] = Σ_j tmp[k][j] B[j][l].
    gemm_tn(ba, ba, bb, A, ba, 1, w, bb, tmp, bb);
    gemm_tn(ba, bb, bb, tmp, 1, bb, B, bb, out, bb);
    return;
  }
  // Block-untied: A [bb][ba][ba], B [ba][bb][bb];
  // tmp[j][k] = Σ_i W[i][j] A[j][i][k];  out[k][l] = Σ_j tmp[j][k] B[k][j][l].
  for (uint32_t j = 0; j < bb; ++j) {
    std::fill(s, s + ba, 0.0);
    for (uint32_t i = 0; i < ba; ++i) axpy(s, double(w[i * bb + j]), A + (size_t(j) * ba + i) * ba, ba);
    for (uint32_t k = 0; k < ba; ++k) tmp[j * ba + k] = float(s[k]);
  }
  for (uint32_t k = 0; k < ba; ++k) {
    std::fill(s, s + bb, 0.0);
    for (uint32_t j = 0; j < bb; ++j) axpy(s, double(tmp[j * ba + k]), B + (size_t(k) * bb + j) * bb, bb);
    for (uint32_t l = 0; l < bb; ++l) out[k * bb + l] = float(s[l]);
  }
}

CACT_HOT_CLONES
void hadamard_mlp(const Weights& w, uint32_t l, bool untied, const float* m, float* out, HadaScratch& s) {
  const Geometry& g = w.g;
  const LayerWeights& lw = w.layers[l];
  const uint32_t N = g.N, D = g.D;
  float* z = s.z.data();
  float* t = s.t.data();
  float* cond = s.cond.data();
  float* tmp = s.tmp.data();
  double* acc = s.acc.data();

  // cond = 1 + softmax(cond_vᵀ m) · cond_u.
  std::fill(acc, acc + 8, 0.0);
  for (uint32_t d = 0; d < D; ++d) axpy(acc, double(m[d]), lw.cond_v.data() + size_t(d) * 8, 8);
  float logits[8];
  for (uint32_t r = 0; r < 8; ++r) logits[r] = float(acc[r]);
  softmax(logits, 8);
  std::fill(acc, acc + N, 1.0);
  for (uint32_t r = 0; r < 8; ++r) axpy(acc, double(logits[r]), lw.cond_u.data() + size_t(r) * N, N);
  for (uint32_t i = 0; i < N; ++i) cond[i] = float(acc[i]);

  // z = P1(F(d1 ⊙ pad(m); w1a, w1b)).
  for (uint32_t i = 0; i < N; ++i) z[i] = i < D ? lw.d1[i] * m[i] : 0.0f;
  hada_factor(z, lw.w1a.data(), lw.w1b.data(), g.ba, g.bb, untied, t, tmp, acc);
  for (uint32_t i = 0; i < N; ++i) z[i] = t[w.p1[i]];
  // z = P2(F(silu(d2 ⊙ cond ⊙ z + b2); w2a, w2b)).
  for (uint32_t i = 0; i < N; ++i) z[i] = silu(lw.d2[i] * cond[i] * z[i] + lw.b2[i]);
  hada_factor(z, lw.w2a.data(), lw.w2b.data(), g.ba, g.bb, untied, t, tmp, acc);
  for (uint32_t i = 0; i < N; ++i) z[i] = t[w.p2[i]];
  // z = F(d3 ⊙ z; w3a, w3b); return (d4 ⊙ z)[0, D).
  for (uint32_t i = 0; i < N; ++i) z[i] *= lw.d3[i];
  hada_factor(z, lw.w3a.data(), lw.w3b.data(), g.ba, g.bb, untied, t, tmp, acc);
  for (uint32_t i = 0; i < D; ++i) out[i] = lw.d4[i] * t[i];
}

}  // namespace cact::engine
