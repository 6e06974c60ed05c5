#include <cmath>

#include "cact/error.h"
#include "cact/kernels.h"

namespace cact::kernels {

Int8Codebook make_int8_codebook(std::span<const float> codebook, uint32_t bits) {
  if (codebook.empty() || codebook.size() > 16) fail("int8 codebook: need 1 to 16 entries");
  Int8Codebook out;
  out.bits = bits;
  float absmax = 0.0f;
  for (float v : codebook) absmax = std::max(absmax, std::fabs(v));
  out.scale = absmax > 0.0f ? absmax / 127.0f : 1.0f;
  for (size_t i = 0; i < codebook.size(); ++i) {
    out.q[i] = int8_t(std::lround(codebook[i] / out.scale));
  }
  return out;
}

}  // namespace cact::kernels
