#pragma once
// Small float operations of MODEL.md shared by both numerics: rms, the
// zero-centred RMSNorm, sigmoid, silu, softmax. Sums run in double so that the
// float path tracks a float64 reference closely.
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace cact::engine {

inline constexpr double kRmsEps = 1e-6;

inline float sigmoid(float x) { return float(1.0 / (1.0 + std::exp(-double(x)))); }
inline float silu(float x) { return x * sigmoid(x); }

// 1 / sqrt(mean(x²) + eps).
double inv_rms(const float* x, size_t n);
// out = rms(x) (out may alias x).
void rms(const float* x, size_t n, float* out);
// out = (1 + s) ⊙ rms(x) (out may alias x).
void zc_norm(const float* x, const float* s, size_t n, float* out);
// In-place softmax over n values.
void softmax(float* x, size_t n);
double dot(const float* a, const float* b, size_t n);

}  // namespace cact::engine
