#include "engine/mhc.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "cact/error.h"

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

void mhc_coefficients(const Weights& w, uint32_t l, const float* pre, const float* post, const float* res,
                      MhcCoefficients out) {
  const uint32_t n = w.g.n;
  if (n > kMaxLanes) fail("mhc_lanes " + std::to_string(n) + " exceeds the engine's limit of 16");
  const uint32_t lane = l % n;
  const double a_pre = w.a_pre[l], a_post = w.a_post[l], a_res = w.a_res[l];
  for (uint32_t j = 0; j < n; ++j) {
    const double c = j == lane ? 1.0 : 0.0;
    out.hpre[j] = float(sig(a_pre * pre[j] + w.b_pre[size_t(l) * n + j] + (8.0 * c - 4.0)));
    out.hpost[j] = float(2.0 * sig(a_post * post[j] + w.b_post[size_t(l) * n + j] - 4.0 * (1.0 - c)));
  }
  double m[kMaxLanes * kMaxLanes];
  for (uint32_t i = 0; i < n * n; ++i) m[i] = a_res * res[i] + w.b_res[size_t(l) * n * n + i];
  sinkhorn(m, n);
  for (uint32_t i = 0; i < n * n; ++i) out.mix[i] = float(m[i]);
}

}  // namespace cact::engine
