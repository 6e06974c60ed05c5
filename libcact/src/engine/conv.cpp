#include "engine/conv.h"

#include <algorithm>
#include <cstring>

#include "cact/error.h"
#include "engine/vec.h"

namespace cact::engine {

void CausalConv::init(uint32_t dim, uint32_t taps, uint32_t dilation, uint32_t max_chunk) {
  dim_ = dim;
  taps_ = taps;
  dil_ = dilation == 0 ? 1 : dilation;
  history_ = taps > 0 ? (taps - 1) * dil_ : 0;
  max_chunk_ = max_chunk;
  buf_.assign(size_t(history_ + max_chunk) * dim, 0.0f);
}

void CausalConv::reset() { std::fill(buf_.begin(), buf_.begin() + size_t(history_) * dim_, 0.0f); }

namespace {
// out[c][i] = Σ_j w[j][i] · buf[first + c - j·dil][i] (j in order; elementwise,
// so every vector width gives the same bits).
CACT_HOT_CLONES
void conv_rows(const float* w, const float* buf, uint32_t first, uint32_t dim, uint32_t taps, uint32_t dil,
               uint32_t count, float* out) {
  for (uint32_t c = 0; c < count; ++c) {
    float* o = out + size_t(c) * dim;
    std::fill(o, o + dim, 0.0f);
    for (uint32_t j = 0; j < taps; ++j) {
      const float* xj = buf + size_t(first + c - j * dil) * dim;
      const float* wj = w + size_t(j) * dim;
      for (uint32_t i = 0; i < dim; ++i) o[i] += wj[i] * xj[i];
    }
  }
}
}  // namespace

void CausalConv::run(const float* w, uint32_t count, float* out) {
  if (count > max_chunk_) fail("internal: conv chunk larger than the state was sized for");
  conv_rows(w, buf_.data(), history_, dim_, taps_, dil_, count, out);
  slide(count);
}

void CausalConv::rows(const float* w, uint32_t c, float* out) const {
  conv_rows(w, buf_.data(), history_ + c, dim_, taps_, dil_, 1, out);
}

void CausalConv::slide(uint32_t count) {
  // Slide: the last `history_` rows of [history | new] become the history.
  if (history_ > 0) {
    std::memmove(buf_.data(), buf_.data() + size_t(count) * dim_, size_t(history_) * dim_ * sizeof(float));
  }
}

}  // namespace cact::engine
