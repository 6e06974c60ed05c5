#pragma once
// Multi-lane residual (mHC, MODEL.md step 3): from the projections of the
// rms-normalised lanes, the pre weights, the post gains and the Sinkhorn
// mixing matrix of layer l; the pre-weighted lane sum and the lane mixing.
//
// `float_sums` selects the int8 path's float work (docs/ENGINE.md "Float
// work"): the lane mixing in float, Sinkhorn in the exponential domain (still
// double). Otherwise (reference numerics) every sum is a double.
#include <cstdint>

#include "engine/vmath.h"
#include "engine/weights.h"

namespace cact::engine {

struct MhcCoefficients {
  // n, n and n·n values (row-major P[i][j]).
  float* hpre;
  float* hpost;
  float* mix;
};

// One token's inputs and outputs: pre/post are Φpre_l nx and Φpost_l nx (n
// values), res is Φres_l nx (n·n).
struct MhcToken {
  const float *pre, *post, *res;
  MhcCoefficients out;
};
inline constexpr uint32_t kMhcTokens = 8;
// The coefficients of `count` (<= kMhcTokens) tokens of layer l, each token's
// values independent of the others: with float_sums, 4 lanes and AVX-512 the
// tokens' Sinkhorn rounds run side by side in vector lanes (one token's rounds
// are a chain of dependent sums and divisions).
void mhc_coefficients(const Weights& w, uint32_t l, const MhcToken* tokens, uint32_t count, bool float_sums);

// 20 rounds of (rows -= logsumexp(row), cols -= logsumexp(col)) then exp; in place, n×n.
void sinkhorn(double* m, uint32_t n, int rounds = 20);
// The same map in the exponential domain: E = exp(m − row max), then rounds of
// (rows /= row sum, cols /= col sum) — n² exps instead of 2·rounds·n(n+1)
// exp/log. Falls back to sinkhorn() if a column underflows. In place, n×n.
void sinkhorn_exp(double* m, uint32_t n, int rounds = 20);
// sinkhorn_exp of `count` (<= kMhcTokens) 4×4 matrices m[t], each with its own
// bits: with AVX-512 the rounds of all of them side by side in vector lanes,
// elsewhere one matrix after another.
void sinkhorn_exp4_tokens(double* const* m, uint32_t count, int rounds = 20);

// u = Σ_j hpre[j] X[j] (X: n lanes of D, j in order), in float with fused
// multiply-adds for the int8 path (float_sums), else in double. Any isa gives
// the same bits.
void mhc_pre(uint32_t n, uint32_t D, const float* X, const float* hpre, float* u, bool float_sums,
             VecIsa isa = vec_isa());
// In place for every lane i: X[i] = hpost[i] (u − u_in) + Σ_j P[i][j] X[j]
// (terms in that order), then cell = (Σ_j X[j]) / n. Any isa gives the same bits.
void mhc_post(uint32_t n, uint32_t D, float* X, const float* P, const float* hpost, const float* u, const float* u_in,
              float* cell, bool float_sums, VecIsa isa = vec_isa());

}  // namespace cact::engine
