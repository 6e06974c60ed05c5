#pragma once
// Small float operations of MODEL.md shared by both numerics: rms, the
// zero-centred RMSNorm, sigmoid, silu, softmax.
//
// The reference numerics sum in double (so that the float path tracks a
// float64 reference closely) and take e^x from libm in double. Routines that
// the int8 path runs in float are templates on the accumulator type `Acc`
// (double: the reference contract; float: float sums and exp_approx, see
// vmath.h). Sums run over interleaved partial sums (four AVX2 vectors of them)
// combined in a fixed order, so that they vectorise and still give the same
// bits on every ISA clone and for any thread count.
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace cact::engine {

inline constexpr double kRmsEps = 1e-6;

inline float sigmoid(float x) { return float(1.0 / (1.0 + std::exp(-double(x)))); }
inline float silu(float x) { return x * sigmoid(x); }

// Σ x[i]² (fixed partial-sum order).
template <typename Acc>
Acc sum_squares(const float* x, size_t n);
// 1 / sqrt(mean(x²) + eps).
template <typename Acc>
Acc inv_rms(const float* x, size_t n);
// out = rms(x) (out may alias x), products in Acc.
template <typename Acc>
void rms(const float* x, size_t n, float* out);
// out = (1 + s) ⊙ rms(x) (out may alias x), products in Acc.
template <typename Acc>
void zc_norm(const float* x, const float* s, size_t n, float* out);
// The norms of a numerics: float sums for the int8 path (float_sums: the
// reference path keeps double).
void rms(bool float_sums, const float* x, size_t n, float* out);
void zc_norm(bool float_sums, const float* x, const float* s, size_t n, float* out);
// The double forms (both numerics unless a caller picks float for int8).
// Defined in ops.cpp, after the templates: an inline call here would
// instantiate the double templates before their definitions.
double inv_rms(const float* x, size_t n);
void rms(const float* x, size_t n, float* out);
void zc_norm(const float* x, const float* s, size_t n, float* out);

// In-place softmax over n values: double sum and libm exp (Acc = double), or
// float sum and exp_approx (Acc = float). Values far below the maximum
// (e.g. -inf for a masked position) get exactly 0.
template <typename Acc>
void softmax(float* x, size_t n);
void softmax(float* x, size_t n);  // softmax<double>

// x[i] *= σ(g[i]) (the attention output gate): double libm exp (Acc = double,
// equal to sigmoid() above) or exp_approx.
template <typename Acc>
void mul_sigmoid(float* x, const float* g, size_t n);

double dot(const float* a, const float* b, size_t n);

// Σ ((a[i]·ra)·b[i])·rb in double, added in index order (each product rounded
// as written). The products run vectorised; the sum is one chain of adds.
double scaled_dot(const float* a, double ra, const float* b, double rb, size_t n);

// x[i] = float(double(x[i]) · s).
void scale_by(float* x, double s, size_t n);

// y[i] += a · x[i] (a rounded product, then a rounded sum: the same bits in
// every width; a = 1 adds x exactly).
void add_scaled(float* y, float a, const float* x, size_t n);

}  // namespace cact::engine
