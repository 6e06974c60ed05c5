#include "engine/head_fold.h"

#include "engine/vmath.h"

namespace cact::engine {

namespace {
// Elementwise, one multiply and one add per element (no contraction): the same
// bits in every width.
struct ScaleDoubles {
  CACT_VEC_INLINE static void run(double* __restrict acc, double shrink, uint32_t n) {
    for (uint32_t d = 0; d < n; ++d) acc[d] *= shrink;
  }
};
struct AddScaled4 {
  CACT_VEC_INLINE static void run(double* __restrict a0, double* __restrict a1, double* __restrict a2,
                                  double* __restrict a3, const double* e, const float* __restrict cell, uint32_t n) {
    const double e0 = e[0], e1 = e[1], e2 = e[2], e3 = e[3];
    for (uint32_t d = 0; d < n; ++d) {
      const double x = double(cell[d]);
      a0[d] += e0 * x;
      a1[d] += e1 * x;
      a2[d] += e2 * x;
      a3[d] += e3 * x;
    }
  }
};
struct AddScaled1 {
  CACT_VEC_INLINE static void run(double* __restrict acc, double e, const float* __restrict cell, uint32_t n) {
    for (uint32_t d = 0; d < n; ++d) acc[d] += e * double(cell[d]);
  }
};
}  // namespace

void scale_doubles(double* acc, double shrink, uint32_t n) { in_widest<ScaleDoubles>(acc, shrink, n); }

void add_scaled4(double* acc, const double* e, const float* cell, uint32_t n) {
  in_widest<AddScaled4>(acc, acc + n, acc + 2 * size_t(n), acc + 3 * size_t(n), e, cell, n);
}

void add_scaled1(double* acc, double e, const float* cell, uint32_t n) { in_widest<AddScaled1>(acc, e, cell, n); }

}  // namespace cact::engine
