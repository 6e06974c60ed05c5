#include "engine/conv.h"

#include <algorithm>
#include <cstring>

#include "cact/error.h"
#include "engine/vmath.h"

namespace cact::engine {

void CausalConv::init(uint32_t dim, uint32_t taps, uint32_t dilation, uint32_t max_chunk) {
  dim_ = dim;
  taps_ = taps;
  dil_ = dilation == 0 ? 1 : dilation;
  history_ = taps > 0 ? (taps - 1) * dil_ : 0;
  max_chunk_ = max_chunk;
  start_ = 0;
  spill_ = nullptr;
  // [history | one decode row], sliding through kSlack spare rows.
  buf_.assign((size_t(history_) + 1 + (history_ > 0 ? kSlack : 0)) * dim, 0.0f);
}

void CausalConv::reset() {
  start_ = 0;
  spill_ = nullptr;
  std::fill(buf_.begin(), buf_.begin() + size_t(history_) * dim_, 0.0f);
}

namespace {
// out[i] = Σ_j w[j][i] · x_j[i] for x_j = buf[row - j·dil], j in order from
// 0.0f, one element at a time in registers (elementwise, so every vector width
// gives the same bits). Taps: the tap count at compile time (0: run time).
// Rows are `dim` apart; the first `width` elements of a row are computed.
template <uint32_t Taps>
[[gnu::always_inline]] inline void conv_row(const float* __restrict w, const float* __restrict buf, size_t row,
                                            uint32_t dim, uint32_t width, uint32_t taps, uint32_t dil,
                                            float* __restrict out) {
  if constexpr (Taps == 0) {
    std::fill(out, out + width, 0.0f);
    for (uint32_t j = 0; j < taps; ++j) {
      const float* xj = buf + (row - size_t(j) * dil) * dim;
      const float* wj = w + size_t(j) * dim;
      for (uint32_t i = 0; i < width; ++i) out[i] += wj[i] * xj[i];
    }
  } else {
    const float* x[Taps];
    for (uint32_t j = 0; j < Taps; ++j) x[j] = buf + (row - size_t(j) * dil) * dim;
    for (uint32_t i = 0; i < width; ++i) {
      float s = 0.0f;
      for (uint32_t j = 0; j < Taps; ++j) s += w[size_t(j) * dim + i] * x[j][i];
      out[i] = s;
    }
  }
}

// out[c][i] = Σ_j w[j][i] · buf[first + c - j·dil][i] (j in order).
struct ConvRows {
  CACT_VEC_INLINE static void run(const float* w, const float* buf, uint32_t first, uint32_t dim, uint32_t width,
                                  uint32_t taps, uint32_t dil, uint32_t count, float* out) {
    for (uint32_t c = 0; c < count; ++c) {
      float* o = out + size_t(c) * dim;
      const size_t row = size_t(first) + c;
      switch (taps) {  // the shipped tap counts (q/k/v 3, engram 4), unrolled
        case 3:
          conv_row<3>(w, buf, row, dim, width, taps, dil, o);
          break;
        case 4:
          conv_row<4>(w, buf, row, dim, width, taps, dil, o);
          break;
        default:
          conv_row<0>(w, buf, row, dim, width, taps, dil, o);
      }
    }
  }
};
void conv_rows(const float* w, const float* buf, uint32_t first, uint32_t dim, uint32_t width, uint32_t taps,
               uint32_t dil, uint32_t count, float* out) {
  in_widest<ConvRows>(w, buf, first, dim, width, taps, dil, count, out);
}
}  // namespace

float* CausalConv::input(uint32_t count, float* spill) {
  if (count > max_chunk_) fail("internal: conv chunk larger than the state was sized for");
  if (count == 1) {  // (a short chunk spilled costs two history copies)
    spill_ = nullptr;
    return buf_.data() + (size_t(start_) + history_) * dim_;
  }
  if (spill == nullptr) fail("internal: a long chunk needs a window to spill into");
  std::copy_n(buf_.data() + size_t(start_) * dim_, size_t(history_) * dim_, spill);
  spill_ = spill;
  return spill + size_t(history_) * dim_;
}

void CausalConv::run(const float* w, uint32_t count, float* out) {
  conv_rows(w, window(), history_, dim_, dim_, taps_, dil_, count, out);
  slide(count);
}

void CausalConv::rows(const float* w, uint32_t c, uint32_t begin, uint32_t end, float* out) const {
  conv_rows(w + begin, window() + begin, history_ + c, dim_, end - begin, taps_, dil_, 1, out + begin);
}

void CausalConv::slide(uint32_t count) {
  if (spill_ != nullptr) {  // the new history goes home to the front of buf_
    std::copy_n(spill_ + size_t(count) * dim_, size_t(history_) * dim_, buf_.data());
    start_ = 0;
    spill_ = nullptr;
    return;
  }
  // Slide: the last `history_` rows of [history | new] become the history,
  // where they are while the next window still fits, else at the front.
  if (history_ == 0) return;
  start_ += count;
  if (start_ > kSlack) {
    std::memmove(buf_.data(), buf_.data() + size_t(start_) * dim_, size_t(history_) * dim_ * sizeof(float));
    start_ = 0;
  }
}

}  // namespace cact::engine
