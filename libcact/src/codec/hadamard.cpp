// Normalised fast Walsh-Hadamard transform: the butterfly, then one scale by
// 1/sqrt(n) so that H is orthogonal and its own inverse.
#include <cmath>
#include <cstddef>

#include "cact/codec.h"

namespace cact::codec {
namespace {
template <typename T>
void fwht_impl(T* x, size_t n) {
  for (size_t half = 1; half < n; half *= 2) {
    for (size_t block = 0; block < n; block += 2 * half) {
      for (size_t i = block; i < block + half; ++i) {
        const T a = x[i];
        const T b = x[i + half];
        x[i] = a + b;
        x[i + half] = a - b;
      }
    }
  }
  const T scale = T(1) / std::sqrt(T(n));
  for (size_t i = 0; i < n; ++i) x[i] *= scale;
}
}  // namespace

void fwht(float* x, size_t n) { fwht_impl(x, n); }
void fwht(double* x, size_t n) { fwht_impl(x, n); }

}  // namespace cact::codec
