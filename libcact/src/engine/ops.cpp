#include "engine/ops.h"

#include <algorithm>

namespace cact::engine {

double inv_rms(const float* x, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += double(x[i]) * double(x[i]);
  return 1.0 / std::sqrt(sum / double(n) + kRmsEps);
}

void rms(const float* x, size_t n, float* out) {
  const double r = inv_rms(x, n);
  for (size_t i = 0; i < n; ++i) out[i] = float(double(x[i]) * r);
}

void zc_norm(const float* x, const float* s, size_t n, float* out) {
  const double r = inv_rms(x, n);
  for (size_t i = 0; i < n; ++i) out[i] = float((1.0 + double(s[i])) * double(x[i]) * r);
}

void softmax(float* x, size_t n) {
  if (n == 0) return;
  const float m = *std::max_element(x, x + n);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double e = std::exp(double(x[i]) - double(m));
    x[i] = float(e);
    sum += e;
  }
  const double inv = 1.0 / sum;
  for (size_t i = 0; i < n; ++i) x[i] = float(double(x[i]) * inv);
}

double dot(const float* a, const float* b, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += double(a[i]) * double(b[i]);
  return sum;
}

}  // namespace cact::engine
