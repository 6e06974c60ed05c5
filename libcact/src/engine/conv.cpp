#include "engine/conv.h"

#include <algorithm>
#include <cstring>

#include "cact/error.h"

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

void CausalConv::run(const float* w, uint32_t count, float* out) {
  if (count > max_chunk_) fail("internal: conv chunk larger than the state was sized for");
  for (uint32_t c = 0; c < count; ++c) {
    float* o = out + size_t(c) * dim_;
    std::fill(o, o + dim_, 0.0f);
    for (uint32_t j = 0; j < taps_; ++j) {
      const float* x = buf_.data() + size_t(history_ + c - j * dil_) * dim_;
      const float* wj = w + size_t(j) * dim_;
      for (uint32_t i = 0; i < dim_; ++i) o[i] += wj[i] * x[i];
    }
  }
  // Slide: the last `history_` rows of [history | new] become the history.
  if (history_ > 0) {
    std::memmove(buf_.data(), buf_.data() + size_t(count) * dim_, size_t(history_) * dim_ * sizeof(float));
  }
}

}  // namespace cact::engine
