#pragma once
// Causal depthwise convolution over positions with a history ring:
//   out_t = Σ_{j<taps} w[j] ⊙ x_{t - j·dil}   (x before position 0 is zero).
// The working window is [(taps-1)·dil history rows | up to max_chunk new rows];
// the caller writes a chunk's pre-conv rows into input(), run() produces the
// outputs and slides the window by the chunk: it moves forward in a buffer with
// kSlack spare rows, and only once it reaches the end are its last
// (taps-1)·dil rows copied back to the front (decoding copies the history once
// every kSlack tokens, not every token).
// Used for the q/k/v taps (dil 1) and the engram value conv (dil = engram_conv_dilation).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace cact::engine {

class CausalConv {
 public:
  void init(uint32_t dim, uint32_t taps, uint32_t dilation, uint32_t max_chunk);
  void reset();  // zero history (positions before 0)
  float* input() { return buf_.data() + (size_t(start_) + history_) * dim_; }
  // w is [taps][dim]; out is [count][dim]; count <= max_chunk.
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
  uint32_t dim_ = 0, taps_ = 0, dil_ = 1, history_ = 0, max_chunk_ = 0;
  uint32_t start_ = 0;  // first row of the window (<= kSlack)
  std::vector<float> buf_;
};

}  // namespace cact::engine
