#include "engine/mhc.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "cact/error.h"
#include "engine/vmath.h"

namespace cact::engine {

namespace {
double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }
constexpr uint32_t kMaxLanes = 16;
}  // namespace

void sinkhorn(double* m, uint32_t n, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    for (uint32_t i = 0; i < n; ++i) {
      double mx = m[i * n];
      for (uint32_t j = 1; j < n; ++j) mx = std::max(mx, m[i * n + j]);
      double s = 0.0;
      for (uint32_t j = 0; j < n; ++j) s += std::exp(m[i * n + j] - mx);
      const double lse = mx + std::log(s);
      for (uint32_t j = 0; j < n; ++j) m[i * n + j] -= lse;
    }
    for (uint32_t j = 0; j < n; ++j) {
      double mx = m[j];
      for (uint32_t i = 1; i < n; ++i) mx = std::max(mx, m[i * n + j]);
      double s = 0.0;
      for (uint32_t i = 0; i < n; ++i) s += std::exp(m[i * n + j] - mx);
      const double lse = mx + std::log(s);
      for (uint32_t i = 0; i < n; ++i) m[i * n + j] -= lse;
    }
  }
  for (uint32_t i = 0; i < n * n; ++i) m[i] = std::exp(m[i]);
}

namespace {
// e[(i·n + j)·stride] = exp(m[i][j] − max_j m[i][j]): the start of sinkhorn_exp.
void exp_minus_row_max(const double* m, uint32_t n, double* e, size_t stride) {
  for (uint32_t i = 0; i < n; ++i) {
    double mx = m[i * n];
    for (uint32_t j = 1; j < n; ++j) mx = std::max(mx, m[i * n + j]);
    for (uint32_t j = 0; j < n; ++j) e[(i * n + j) * stride] = std::exp(m[i * n + j] - mx);
  }
}

// Bit t set when lane t of a first-round column sum underflowed (a double: bit 0).
CACT_VEC_INLINE uint32_t underflowed(double s) { return !(s >= 1e-280) ? 1u : 0u; }
template <typename V>
CACT_VEC_INLINE uint32_t underflowed(const V& s) {
  uint32_t bits = 0;
  for (uint32_t t = 0; t < sizeof(V) / sizeof(double); ++t) bits |= underflowed(double(s[t])) << t;
  return bits;
}

// The exponential-domain rounds of sinkhorn_exp on n × n entries x (NL: n
// known at compile time; 0 = run time). An entry is a double, or a vector of
// doubles holding one matrix per lane, each lane going through the scalar
// operations in their order (sums from 0 in index order, one division per sum,
// then the products), so it gets their bits. Returns underflowed() of the
// first round's column sums: those matrices need the log-domain iteration.
template <typename V, uint32_t NL>
CACT_VEC_INLINE uint32_t sinkhorn_rounds(V* x, uint32_t n_rt, int rounds) {
  const uint32_t n = NL != 0 ? NL : n_rt;
  uint32_t underflow = 0;
  for (int round = 0; round < rounds; ++round) {
    // Rows: each has an entry >= 1/n afterwards (>= 1 before the first pass).
    for (uint32_t i = 0; i < n; ++i) {
      V s = V{};
      for (uint32_t j = 0; j < n; ++j) s += x[i * n + j];
      const V inv = 1.0 / s;
      for (uint32_t j = 0; j < n; ++j) x[i * n + j] *= inv;
    }
    // Columns: after a row pass every column sum is >= 1/n, except in the
    // first round, where a column can underflow (logits hundreds apart).
    V s[NL != 0 ? NL : kMaxLanes] = {};
    for (uint32_t i = 0; i < n; ++i) {
      for (uint32_t j = 0; j < n; ++j) s[j] += x[i * n + j];
    }
    for (uint32_t j = 0; j < n; ++j) {
      if (round == 0) underflow |= underflowed(s[j]);
      s[j] = 1.0 / s[j];
    }
    if constexpr (std::is_same_v<V, double>) {
      if (underflow != 0) return underflow;  // (its only matrix: no need to go on)
    }
    for (uint32_t i = 0; i < n; ++i) {
      for (uint32_t j = 0; j < n; ++j) x[i * n + j] *= s[j];
    }
  }
  return underflow;
}

// sinkhorn_exp for a lane count known at compile time (NL; 0 = run time).
template <uint32_t NL>
void sinkhorn_exp_n(double* m, uint32_t n_rt, int rounds) {
  const uint32_t n = NL != 0 ? NL : n_rt;
  double e[NL != 0 ? NL * NL : kMaxLanes * kMaxLanes];
  exp_minus_row_max(m, n, e, 1);
  if (sinkhorn_rounds<double, NL>(e, n, rounds) != 0) {
    sinkhorn(m, n, rounds);
    return;
  }
  std::copy(e, e + n * n, m);
}

// sinkhorn_rounds of kMhcTokens 4 × 4 matrices side by side: e is
// [16][kMhcTokens], lane t of row k holding matrix t's E[k].
struct SinkhornLanes4 {
  CACT_VEC_INLINE static uint32_t run(double* e, int rounds) {
    using V = VecOf<double, kMhcTokens>::type;
    V x[16];
    for (uint32_t k = 0; k < 16; ++k) std::memcpy(&x[k], e + k * kMhcTokens, sizeof(V));
    const uint32_t underflow = sinkhorn_rounds<V, 4>(x, 4, rounds);
    for (uint32_t k = 0; k < 16; ++k) std::memcpy(e + k * kMhcTokens, &x[k], sizeof(V));
    return underflow;
  }
};
}  // namespace

// Eight lanes of doubles fill one zmm register: the side-by-side rounds are
// built for AVX-512 only (narrower builds would spill most of their 16
// vectors, ~15 KB of code against the library's size budget); elsewhere each
// matrix runs alone.
void sinkhorn_exp4_tokens(double* const* m, uint32_t count, int rounds) {
  constexpr uint32_t n = 4;
#if CACT_VEC_LOOP_WIDTHS
  constexpr uint32_t T = kMhcTokens;
  if (rounds > 0 && count <= T && vec_isa() == VecIsa::avx512) {
    double e[n * n * T];
    std::fill(e, e + n * n * T, 1.0);  // lanes past count: any finite values
    for (uint32_t t = 0; t < count; ++t) exp_minus_row_max(m[t], n, e + t, T);
    const uint32_t underflow = run_avx512<SinkhornLanes4>(e, rounds);
    for (uint32_t t = 0; t < count; ++t) {
      if ((underflow >> t & 1u) != 0) {
        sinkhorn(m[t], n, rounds);
        continue;
      }
      for (uint32_t k = 0; k < n * n; ++k) m[t][k] = e[k * T + t];
    }
    return;
  }
#endif
  for (uint32_t t = 0; t < count; ++t) sinkhorn_exp(m[t], n, rounds);
}

void sinkhorn_exp(double* m, uint32_t n, int rounds) {
  if (rounds <= 0 || n > kMaxLanes) {
    sinkhorn(m, n, rounds);
  } else if (n == 4) {
    sinkhorn_exp_n<4>(m, n, rounds);
  } else {
    sinkhorn_exp_n<0>(m, n, rounds);
  }
}

void mhc_coefficients(const Weights& w, uint32_t l, const MhcToken* tokens, uint32_t count, bool float_sums) {
  const uint32_t n = w.g.n;
  if (n > kMaxLanes) fail("mhc_lanes " + std::to_string(n) + " exceeds the engine's limit of 16");
  if (count > kMhcTokens) fail("internal: more tokens than mhc_coefficients takes at once");
  const uint32_t lane = l % n;
  const double a_pre = w.a_pre[l], a_post = w.a_post[l], a_res = w.a_res[l];
  double m[kMhcTokens][kMaxLanes * kMaxLanes];
  double* rows[kMhcTokens] = {};
  for (uint32_t t = 0; t < count; ++t) {
    const MhcToken& tk = tokens[t];
    for (uint32_t j = 0; j < n; ++j) {
      const double c = j == lane ? 1.0 : 0.0;
      tk.out.hpre[j] = float(sig(a_pre * tk.pre[j] + w.b_pre[size_t(l) * n + j] + (8.0 * c - 4.0)));
      tk.out.hpost[j] = float(2.0 * sig(a_post * tk.post[j] + w.b_post[size_t(l) * n + j] - 4.0 * (1.0 - c)));
    }
    for (uint32_t i = 0; i < n * n; ++i) m[t][i] = a_res * tk.res[i] + w.b_res[size_t(l) * n * n + i];
    rows[t] = m[t];
  }
  if (float_sums && n == 4) {
    sinkhorn_exp4_tokens(rows, count);
  } else {
    for (uint32_t t = 0; t < count; ++t) float_sums ? sinkhorn_exp(m[t], n) : sinkhorn(m[t], n);
  }
  for (uint32_t t = 0; t < count; ++t) {
    for (uint32_t i = 0; i < n * n; ++i) tokens[t].out.mix[i] = float(m[t][i]);
  }
}

namespace {

// One routine per lane count known at compile time (NL = 4; 0 = run time),
// L columns d at a time; every output is the same Acc expression in any case.
struct LaneArgs {
  uint32_t n, D;
  const float* X;  // n lanes of D
  float* X_out;    // mhc_post: X itself, each column rewritten after it is read
  const float *hpre, *P, *hpost, *u, *u_in;
  float *out, *cell;
};

// The coefficients as Acc, and the pointers, in locals: the loops store
// floats, which could otherwise alias them and force reloads.
template <typename Acc, uint32_t NL>
struct LaneCoefficients {
  static constexpr uint32_t kCap = NL != 0 ? NL : kMaxLanes;
  Acc hpre[kCap], hpost[kCap], P[kCap * kCap];
  explicit LaneCoefficients(const LaneArgs& a, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      if (a.hpre != nullptr) hpre[i] = Acc(a.hpre[i]);
      if (a.hpost != nullptr) hpost[i] = Acc(a.hpost[i]);
      for (uint32_t j = 0; j < n && a.P != nullptr; ++j) P[i * n + j] = Acc(a.P[i * n + j]);
    }
  }
};

// (The loop over lanes unrolled explicitly: fused_madd's lane loop would
// otherwise keep it rolled.)
template <typename Acc, uint32_t L, uint32_t NL>
CACT_VEC_INLINE void pre_cols(const float* X, size_t D, uint32_t n, const LaneCoefficients<Acc, NL>& k, float* u,
                              uint32_t d) {
  using W = Lanes<Acc, L>;
  typename W::V s = W::splat(Acc(0));
#pragma GCC unroll 4
  for (uint32_t j = 0; j < n; ++j) s = fused_madd(broadcast<typename W::V>(k.hpre[j]), W::load(X + j * D + d), s);
  W::store(u + d, s);
}

template <typename Acc, uint32_t L, uint32_t NL>
CACT_VEC_INLINE void post_cols(float* X, size_t D, uint32_t n, const LaneCoefficients<Acc, NL>& k, const float* u,
                               const float* u_in, float* cell, uint32_t d) {
  using W = Lanes<Acc, L>;
  typename W::V x[LaneCoefficients<Acc, NL>::kCap];
  for (uint32_t j = 0; j < n; ++j) x[j] = W::load(X + j * D + d);
  const typename W::V du = W::load(u + d) - W::load(u_in + d);
  typename W::V c = W::splat(Acc(0));
  for (uint32_t i = 0; i < n; ++i) {
    typename W::V s = k.hpost[i] * du;
    for (uint32_t j = 0; j < n; ++j) s += k.P[i * n + j] * x[j];
    W::store(X + i * D + d, s);
    c += W::load(X + i * D + d);  // the lane as stored (float)
  }
  W::store(cell + d, c / Acc(n));
}

template <typename Acc, uint32_t Bytes, uint32_t NL, bool Post>
CACT_VEC_INLINE void lanes_run(const LaneArgs& a) {
  constexpr uint32_t L = Bytes / sizeof(Acc);
  const uint32_t n = NL != 0 ? NL : a.n, D = a.D;
  const LaneCoefficients<Acc, NL> k(a, n);
  uint32_t d = 0;
  if constexpr (Post) {
    float* const X = a.X_out;
    const float *const u = a.u, *const u_in = a.u_in;
    float* const cell = a.cell;
    for (; d + L <= D; d += L) post_cols<Acc, L, NL>(X, D, n, k, u, u_in, cell, d);
    for (; d < D; ++d) post_cols<Acc, 1, NL>(X, D, n, k, u, u_in, cell, d);
  } else {
    const float* const X = a.X;
    float* const u = a.out;
    for (; d + L <= D; d += L) pre_cols<Acc, L, NL>(X, D, n, k, u, d);
    for (; d < D; ++d) pre_cols<Acc, 1, NL>(X, D, n, k, u, d);
  }
}

template <typename Acc, uint32_t Bytes, bool Post>
CACT_VEC_INLINE void lanes_by_n(const LaneArgs& a) {
  if (a.n == 4) {
    lanes_run<Acc, Bytes, 4, Post>(a);  // needle3's lane count, unrolled
  } else {
    lanes_run<Acc, Bytes, 0, Post>(a);
  }
}

template <typename Acc, uint32_t Bytes>
CACT_VEC_INLINE void pre_body(const LaneArgs& a) {
  lanes_by_n<Acc, Bytes, false>(a);
}
template <typename Acc, uint32_t Bytes>
CACT_VEC_INLINE void post_body(const LaneArgs& a) {
  lanes_by_n<Acc, Bytes, true>(a);
}
CACT_VEC_DISPATCH(pre, LaneArgs)
CACT_VEC_DISPATCH(post, LaneArgs)

}  // namespace

void mhc_pre(uint32_t n, uint32_t D, const float* X, const float* hpre, float* u, bool float_sums, VecIsa isa) {
  const LaneArgs a{n, D, X, nullptr, hpre, nullptr, nullptr, nullptr, nullptr, u, nullptr};
  if (float_sums) {
    pre<float>(isa, a);
  } else {
    pre_base<double>(a);  // the reference path: one build (binary size)
  }
}

void mhc_post(uint32_t n, uint32_t D, float* X, const float* P, const float* hpost, const float* u, const float* u_in,
              float* cell, bool float_sums, VecIsa isa) {
  const LaneArgs a{n, D, X, X, nullptr, P, hpost, u, u_in, nullptr, cell};
  if (float_sums) {
    post<float>(isa, a);
  } else {
    post_base<double>(a);  // the reference path: one build (binary size)
  }
}

}  // namespace cact::engine
