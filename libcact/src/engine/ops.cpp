#include "engine/ops.h"

#include <algorithm>
#include <limits>

#include "engine/vmath.h"

namespace cact::engine {

namespace {

// Interleaved partial sums per accumulator type: `vectors` AVX2 vectors of
// them. Plain sums take four (enough independent additions to hide the add
// latency); softmax, bound by exp's arithmetic, takes two.
template <typename Acc, size_t vectors>
inline constexpr size_t kLanes = 32 / sizeof(Acc) * vectors;

// Combines L partial sums pairwise in a fixed order.
template <size_t L, typename Acc>
inline Acc combine(Acc* part) {
  for (size_t width = L / 2; width > 0; width /= 2) {
    for (size_t k = 0; k < width; ++k) part[k] += part[k + width];
  }
  return part[0];
}

template <typename Acc>
inline Acc exp_of(Acc x);
template <>
inline double exp_of(double x) {
  return std::exp(x);
}
template <>
inline float exp_of(float x) {
  return exp_approx(x);
}

template <typename Acc>
inline Acc sigmoid_of(float x) {
  return Acc(1) / (Acc(1) + exp_of<Acc>(-Acc(x)));
}

}  // namespace

namespace {
template <typename Acc>
struct SumSquares {
  CACT_VEC_INLINE static Acc run(const float* x, size_t n) {
    constexpr size_t L = kLanes<Acc, 4>;
    Acc part[L] = {};
    size_t i = 0;
    for (; i + L <= n; i += L) {
      for (size_t k = 0; k < L; ++k) part[k] += Acc(x[i + k]) * Acc(x[i + k]);
    }
    for (size_t k = 0; i < n; ++i, ++k) part[k] += Acc(x[i]) * Acc(x[i]);
    return combine<L>(part);
  }
};
}  // namespace
template <typename Acc>
Acc sum_squares(const float* x, size_t n) {
  return in_widest<SumSquares<Acc>>(x, n);
}
template double sum_squares<double>(const float*, size_t);
template float sum_squares<float>(const float*, size_t);

template <typename Acc>
Acc inv_rms(const float* x, size_t n) {
  return Acc(1) / std::sqrt(sum_squares<Acc>(x, n) / Acc(n) + Acc(kRmsEps));
}
template double inv_rms<double>(const float*, size_t);
template float inv_rms<float>(const float*, size_t);

namespace {
template <typename Acc>
struct Rms {
  CACT_VEC_INLINE static void run(const float* x, size_t n, float* out) {
    const Acc r = inv_rms<Acc>(x, n);
    for (size_t i = 0; i < n; ++i) out[i] = float(Acc(x[i]) * r);
  }
};
}  // namespace
template <typename Acc>
void rms(const float* x, size_t n, float* out) {
  in_widest<Rms<Acc>>(x, n, out);
}
template void rms<double>(const float*, size_t, float*);
template void rms<float>(const float*, size_t, float*);

namespace {
template <typename Acc>
struct ZcNorm {
  CACT_VEC_INLINE static void run(const float* x, const float* s, size_t n, float* out) {
    const Acc r = inv_rms<Acc>(x, n);
    for (size_t i = 0; i < n; ++i) out[i] = float((Acc(1) + Acc(s[i])) * Acc(x[i]) * r);
  }
};
}  // namespace
template <typename Acc>
void zc_norm(const float* x, const float* s, size_t n, float* out) {
  in_widest<ZcNorm<Acc>>(x, s, n, out);
}
template void zc_norm<double>(const float*, const float*, size_t, float*);
template void zc_norm<float>(const float*, const float*, size_t, float*);

namespace {
template <typename Acc>
struct Softmax {
  CACT_VEC_INLINE static void run(float* x, size_t n) {
    if (n == 0) return;
    constexpr size_t L = kLanes<Acc, 2>;
    // Maximum: exact whatever the order (one lane-wise vector select, so that
    // it vectorises).
    using W = Lanes<float, L>;
    typename W::V mv = broadcast<typename W::V>(x[0]);
    size_t i = 0;
    for (; i + L <= n; i += L) {
      const typename W::V v = W::load(x + i);
      mv = v > mv ? v : mv;
    }
    float mx[L];
    for (size_t k = 0; k < L; ++k) mx[k] = mv[k];
    for (size_t k = 0; i < n; ++i, ++k) mx[k] = x[i] > mx[k] ? x[i] : mx[k];
    const Acc m = Acc(*std::max_element(mx, mx + L));
    // e = exp(x - m) into x, partial sums by index mod L; the last partial block
    // runs as a whole one padded with -inf (e = 0, and part[k] + 0 = part[k]).
    Acc part[L] = {};
    const auto block = [&](float* b) {
      for (size_t k = 0; k < L; ++k) {
        const Acc e = exp_of<Acc>(Acc(b[k]) - m);
        b[k] = float(e);
        part[k] += e;
      }
    };
    for (i = 0; i + L <= n; i += L) block(x + i);
    if (i < n) {
      float tail[L];
      std::fill(tail, tail + L, -std::numeric_limits<float>::infinity());
      std::copy(x + i, x + n, tail);
      block(tail);
      std::copy(tail, tail + (n - i), x + i);
    }
    const Acc inv = Acc(1) / combine<L>(part);
    for (i = 0; i < n; ++i) x[i] = float(Acc(x[i]) * inv);
  }
};
}  // namespace
template <typename Acc>
void softmax(float* x, size_t n) {
  in_widest<Softmax<Acc>>(x, n);
}
template void softmax<double>(float*, size_t);
template void softmax<float>(float*, size_t);

namespace {
template <typename Acc>
struct MulSigmoid {
  CACT_VEC_INLINE static void run(float* x, const float* g, size_t n) {
    for (size_t i = 0; i < n; ++i) x[i] *= float(sigmoid_of<Acc>(g[i]));
  }
};
}  // namespace
template <typename Acc>
void mul_sigmoid(float* x, const float* g, size_t n) {
  in_widest<MulSigmoid<Acc>>(x, g, n);
}
template void mul_sigmoid<double>(float*, const float*, size_t);
template void mul_sigmoid<float>(float*, const float*, size_t);

double inv_rms(const float* x, size_t n) { return inv_rms<double>(x, n); }
void rms(const float* x, size_t n, float* out) { rms<double>(x, n, out); }
void zc_norm(const float* x, const float* s, size_t n, float* out) { zc_norm<double>(x, s, n, out); }
void rms(bool float_sums, const float* x, size_t n, float* out) {
  float_sums ? rms<float>(x, n, out) : rms<double>(x, n, out);
}
void zc_norm(bool float_sums, const float* x, const float* s, size_t n, float* out) {
  float_sums ? zc_norm<float>(x, s, n, out) : zc_norm<double>(x, s, n, out);
}
void softmax(float* x, size_t n) { softmax<double>(x, n); }

double dot(const float* a, const float* b, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += double(a[i]) * double(b[i]);
  return sum;
}

// Built once, at the baseline width: the sum's chain of additions, not the
// products, sets the speed, and the library has a size budget.
double scaled_dot(const float* __restrict a, double ra, const float* __restrict b, double rb, size_t n) {
  // The products a block at a time, then their sum in order: the additions
  // are the only chain. (A scalar loop also chains through the registers its
  // float-to-double conversions merge into.)
  constexpr size_t kBlock = 32;
  double sum = 0.0;
  for (size_t i0 = 0; i0 < n; i0 += kBlock) {
    const size_t m = n - i0 < kBlock ? n - i0 : kBlock;
    double prod[kBlock];
    for (size_t i = 0; i < m; ++i) prod[i] = double(a[i0 + i]) * ra * double(b[i0 + i]) * rb;
    for (size_t i = 0; i < m; ++i) sum += prod[i];
  }
  return sum;
}

void scale_by(float* x, double s, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = float(double(x[i]) * s);
}

namespace {
struct AddScaled {
  CACT_VEC_INLINE static void run(float* __restrict y, float a, const float* __restrict x, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] += a * x[i];
  }
};
}  // namespace
void add_scaled(float* y, float a, const float* x, size_t n) { in_widest<AddScaled>(y, a, x, n); }

}  // namespace cact::engine
