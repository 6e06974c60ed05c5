// The int8 KV cache's scores (cact/float_kernels.h) with the dot-product
// extension (FEAT_DotProd: Cortex-A55/A75 and later). Built with
// -march=armv8.2-a+dotprod; dispatch.cpp puts them in the NEON KV table
// (kv_int8_neon.cpp) only when getauxval has HWCAP_ASIMDDP. Internal linkage
// only (the rules of x86/common.h). Compiles to nothing elsewhere.
#include "kernels/arm/kv_scores.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

namespace cact::kernels {
namespace {

// SDOT sums 4 products per row of the tile into each lane.
struct Sdot {
  struct Acc {
    int32x4_t v[4];
  };
  static void add(Acc& a, const int8x16_t (&k)[4], int8x16_t q) {
    for (uint32_t j = 0; j < 4; ++j) a.v[j] = vdotq_s32(a.v[j], k[j], q);
  }
  static void dots(const Acc& a, int32x4_t (&d)[4]) {
    for (uint32_t j = 0; j < 4; ++j) d[j] = a.v[j];
  }
};

// Rows in tiles of 6 (needle3's GQA group), then 4, 2, 1.
void scores(const KvScoreTile& t) {
  uint32_t r = 0;
  for (; r + 6 <= t.rows; r += 6) kv_neon::score_tile<Sdot, 6>(t, r);
  for (; r + 4 <= t.rows; r += 4) kv_neon::score_tile<Sdot, 4>(t, r);
  for (; r + 2 <= t.rows; r += 2) kv_neon::score_tile<Sdot, 2>(t, r);
  if (r < t.rows) kv_neon::score_tile<Sdot, 1>(t, r);
}

}  // namespace

// Constant-initialised (no code runs to build it); declared in dispatch.cpp,
// which takes only its scores.
extern const KvInt8Kernels kKvInt8Dotprod;
const KvInt8Kernels kKvInt8Dotprod{nullptr, nullptr, scores, nullptr, nullptr};

}  // namespace cact::kernels
#endif
