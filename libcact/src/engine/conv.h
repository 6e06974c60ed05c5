#pragma once
// Causal depthwise convolution over positions with a history ring:
//   out_t = Σ_{j<taps} w[j] ⊙ x_{t - j·dil}   (x before position 0 is zero).
// The working window is [(taps-1)·dil history rows | up to max_chunk new rows];
// the caller writes a chunk's pre-conv rows into input(), run() produces the
// outputs and slides the window by the chunk: it moves forward in a buffer with
// kSlack spare rows, and only once it reaches the end are its last
// (taps-1)·dil rows copied back to the front (decoding copies the history once
// every kSlack tokens, not every token).
// Only one-row chunks (decode steps) run in the convolution's own buffer: a
// longer chunk is computed in a window the caller lends to input()
// (spill_floats() floats, shared by convolutions that are never in use at
// once, such as one tap of every layer or the value of every engram site),
// with the history copied in there and back. The state of every layer then
// costs history rows, not history plus a chunk.
// Used for the q/k/v taps (dil 1) and the engram value conv (dil =
// engram_conv_dilation).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace cact::engine {

class CausalConv {
 public:
  void init(uint32_t dim, uint32_t taps, uint32_t dilation, uint32_t max_chunk);
  void reset();  // zero history (positions before 0)
  // Where the caller writes the next chunk's `count` pre-conv rows; `spill`
  // is the lent window (needed when count > 1) and stays in use until slide().
  float* input(uint32_t count, float* spill = nullptr);
  size_t spill_floats() const { return (size_t(history_) + max_chunk_) * dim_; }
  // w is [taps][dim]; out is [count][dim]; the chunk given to input().
  void run(const float* w, uint32_t count, float* out);
  // run() in two steps, for splitting a chunk by token or by column:
  // rows(w, c, begin, end, out) writes elements [begin, end) of output row c
  // of the chunk (out is that row), any order, any thread; then slide(count)
  // once. Elementwise: any split gives run()'s bits.
  void rows(const float* w, uint32_t c, uint32_t begin, uint32_t end, float* out) const;
  void slide(uint32_t count);
  uint32_t history_rows() const { return history_; }
  size_t bytes() const { return buf_.capacity() * sizeof(float); }

 private:
  static constexpr uint32_t kSlack = 8;
  // The window: [history | chunk] rows, in the lent window or in buf_.
  const float* window() const { return spill_ != nullptr ? spill_ : buf_.data() + size_t(start_) * dim_; }
  uint32_t dim_ = 0, taps_ = 0, dil_ = 1, history_ = 0, max_chunk_ = 0;
  uint32_t start_ = 0;  // first row of the window in buf_ (<= kSlack)
  std::vector<float> buf_;
  float* spill_ = nullptr;  // the lent window, from input() to slide()
};

}  // namespace cact::engine
