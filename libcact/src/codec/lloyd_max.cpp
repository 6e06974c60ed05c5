// Gaussian Lloyd-Max quantisers computed numerically (never typed in):
// alternate "thresholds = midpoints" and "levels = conditional means of the
// standard normal between thresholds" until the levels stop moving.
#include <cmath>
#include <limits>
#include <vector>

#include "cact/codec.h"
#include "cact/error.h"

namespace cact::codec {
namespace {
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

double normal_pdf(double x) { return std::isinf(x) ? 0.0 : kInvSqrt2Pi * std::exp(-0.5 * x * x); }
double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
}  // namespace

std::vector<double> lloyd_max_gaussian(unsigned levels) {
  if (levels < 2) fail("Lloyd-Max quantiser needs at least 2 levels");
  std::vector<double> level(levels);
  for (unsigned i = 0; i < levels; ++i) level[i] = -2.5 + 5.0 * (i + 0.5) / levels;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> edge(levels + 1);
  for (int iter = 0; iter < 100000; ++iter) {
    edge[0] = -inf;
    edge[levels] = inf;
    for (unsigned i = 1; i < levels; ++i) edge[i] = 0.5 * (level[i - 1] + level[i]);
    double moved = 0.0;
    for (unsigned i = 0; i < levels; ++i) {
      // E[X | a < X < b] for X ~ N(0,1) is (pdf(a) - pdf(b)) / (cdf(b) - cdf(a)).
      const double mass = normal_cdf(edge[i + 1]) - normal_cdf(edge[i]);
      const double next = (normal_pdf(edge[i]) - normal_pdf(edge[i + 1])) / mass;
      moved = std::max(moved, std::fabs(next - level[i]));
      level[i] = next;
    }
    if (moved < 1e-15) break;
  }
  // Enforce exact symmetry, which the iteration only reaches to rounding.
  for (unsigned i = 0; i < levels / 2; ++i) {
    const double m = 0.5 * (level[levels - 1 - i] - level[i]);
    level[i] = -m;
    level[levels - 1 - i] = m;
  }
  if (levels % 2) level[levels / 2] = 0.0;
  return level;
}

std::array<float, kStoredCodebookLen> standard_codebooks() {
  std::array<float, kStoredCodebookLen> out{};
  size_t k = 0;
  const double scale = 1.0 / std::sqrt(double(kGroup));
  for (unsigned levels : {4u, 8u, 16u}) {
    for (double v : lloyd_max_gaussian(levels)) out[k++] = float(v * scale);
  }
  return out;
}

}  // namespace cact::codec
