#include "engine/hadamard_mlp.h"

#include <algorithm>
#include <cmath>

#include "engine/ops.h"

namespace cact::engine {

void HadaScratch::reserve(uint32_t N) {
  if (z.size() < N) z.resize(N);
  if (t.size() < N) t.resize(N);
  if (cond.size() < N) cond.resize(N);
  if (tmp.size() < N) tmp.resize(N);
}

void hada_factor(const float* w, const float* A, const float* B, uint32_t ba, uint32_t bb, bool untied, float* out,
                 float* tmp) {
  // W is w viewed as ba × bb, row-major.
  if (!untied) {
    // tmp[k][j] = Σ_i A[i][k] W[i][j];  out[k][l] = Σ_j tmp[k][j] B[j][l].
    for (uint32_t k = 0; k < ba; ++k) {
      for (uint32_t j = 0; j < bb; ++j) {
        double s = 0.0;
        for (uint32_t i = 0; i < ba; ++i) s += double(A[i * ba + k]) * double(w[i * bb + j]);
        tmp[k * bb + j] = float(s);
      }
    }
    for (uint32_t k = 0; k < ba; ++k) {
      for (uint32_t l = 0; l < bb; ++l) {
        double s = 0.0;
        for (uint32_t j = 0; j < bb; ++j) s += double(tmp[k * bb + j]) * double(B[j * bb + l]);
        out[k * bb + l] = float(s);
      }
    }
    return;
  }
  // Block-untied: A [bb][ba][ba], B [ba][bb][bb];
  // tmp[j][k] = Σ_i W[i][j] A[j][i][k];  out[k][l] = Σ_j tmp[j][k] B[k][j][l].
  for (uint32_t j = 0; j < bb; ++j) {
    for (uint32_t k = 0; k < ba; ++k) {
      double s = 0.0;
      for (uint32_t i = 0; i < ba; ++i) s += double(w[i * bb + j]) * double(A[(size_t(j) * ba + i) * ba + k]);
      tmp[j * ba + k] = float(s);
    }
  }
  for (uint32_t k = 0; k < ba; ++k) {
    for (uint32_t l = 0; l < bb; ++l) {
      double s = 0.0;
      for (uint32_t j = 0; j < bb; ++j) s += double(tmp[j * ba + k]) * double(B[(size_t(k) * bb + j) * bb + l]);
      out[k * bb + l] = float(s);
    }
  }
}

void hadamard_mlp(const Weights& w, uint32_t l, bool untied, const float* m, float* out, HadaScratch& s) {
  const Geometry& g = w.g;
  const LayerWeights& lw = w.layers[l];
  const uint32_t N = g.N, D = g.D;
  float* z = s.z.data();
  float* t = s.t.data();
  float* cond = s.cond.data();
  float* tmp = s.tmp.data();

  // cond = 1 + softmax(cond_vᵀ m) · cond_u.
  float logits[8];
  for (uint32_t r = 0; r < 8; ++r) {
    double acc = 0.0;
    for (uint32_t d = 0; d < D; ++d) acc += double(m[d]) * double(lw.cond_v[size_t(d) * 8 + r]);
    logits[r] = float(acc);
  }
  softmax(logits, 8);
  for (uint32_t i = 0; i < N; ++i) {
    double acc = 1.0;
    for (uint32_t r = 0; r < 8; ++r) acc += double(logits[r]) * double(lw.cond_u[size_t(r) * N + i]);
    cond[i] = float(acc);
  }

  // z = P1(F(d1 ⊙ pad(m); w1a, w1b)).
  for (uint32_t i = 0; i < N; ++i) z[i] = i < D ? lw.d1[i] * m[i] : 0.0f;
  hada_factor(z, lw.w1a.data(), lw.w1b.data(), g.ba, g.bb, untied, t, tmp);
  for (uint32_t i = 0; i < N; ++i) z[i] = t[w.p1[i]];
  // z = P2(F(silu(d2 ⊙ cond ⊙ z + b2); w2a, w2b)).
  for (uint32_t i = 0; i < N; ++i) z[i] = silu(lw.d2[i] * cond[i] * z[i] + lw.b2[i]);
  hada_factor(z, lw.w2a.data(), lw.w2b.data(), g.ba, g.bb, untied, t, tmp);
  for (uint32_t i = 0; i < N; ++i) z[i] = t[w.p2[i]];
  // z = F(d3 ⊙ z; w3a, w3b); return (d4 ⊙ z)[0, D).
  for (uint32_t i = 0; i < N; ++i) z[i] *= lw.d3[i];
  hada_factor(z, lw.w3a.data(), lw.w3b.data(), g.ba, g.bb, untied, t, tmp);
  for (uint32_t i = 0; i < D; ++i) out[i] = lw.d4[i] * t[i];
}

}  // namespace cact::engine
