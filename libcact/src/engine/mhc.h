#pragma once
// Multi-lane residual (mHC, MODEL.md step 3): from the projections of the
// rms-normalised lanes, the pre weights, the post gains and the Sinkhorn
// mixing matrix of layer l.
#include <cstdint>

#include "engine/weights.h"

namespace cact::engine {

struct MhcCoefficients {
  // n, n and n·n values (row-major P[i][j]).
  float* hpre;
  float* hpost;
  float* mix;
};

// pre/post are Φpre_l nx and Φpost_l nx (n values), res is Φres_l nx (n·n).
void mhc_coefficients(const Weights& w, uint32_t l, const float* pre, const float* post, const float* res,
                      MhcCoefficients out);

// 20 rounds of (rows -= logsumexp(row), cols -= logsumexp(col)) then exp; in place, n×n.
void sinkhorn(double* m, uint32_t n, int rounds = 20);

}  // namespace cact::engine
