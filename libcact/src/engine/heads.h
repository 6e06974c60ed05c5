#pragma once
// Probe heads (MODEL.md "Probe heads") in streaming form. The per-(row, probe)
// softmax over tokens is kept as an online softmax: running max, running sum
// of exponentials and the running weighted sum of cells, so the state is
// (L+1)·k·(D+2) numbers however long the sequence is; the pooled vectors
// ρ[r,i] are exact at any point. The rest (rms·gain, query attention, proj)
// runs on demand in output().
#include <cstdint>
#include <vector>

#include "engine/linear.h"
#include "engine/weights.h"

namespace cact::engine {

class HeadPool {
 public:
  void init(const HeadWeights& head, const Geometry& g);
  void reset();
  // Fold cell row r of `count` consecutive tokens ([count][D]) into the
  // pooling of row r, token by token. Rows are independent: different rows
  // may run on different threads, each with its own scratch (`input`,
  // `scores` [count][k]); products run on the calling thread
  // (Linear::apply_here). Call add_tokens(count) once all rows are in.
  void add_row(uint32_t r, const float* cells, uint32_t count, Linear& linear, LinearInput& input,
               std::vector<float>& scores);
  void add_tokens(uint32_t count) { tokens_ += count; }
  uint32_t rows() const { return rows_; }
  uint32_t tokens() const { return tokens_; }
  // The head's `out` vector over every token added since reset.
  std::vector<float> output(Linear& linear) const;
  const HeadWeights& weights() const { return *head_; }
  size_t bytes() const { return (max_.capacity() + sum_.capacity() + acc_.capacity()) * sizeof(double); }

 private:
  const HeadWeights* head_ = nullptr;
  uint32_t rows_ = 0, k_ = 0, D_ = 0, tokens_ = 0;
  std::vector<double> max_, sum_, acc_;  // [(L+1)·k], [(L+1)·k], [(L+1)·k][D]
};

}  // namespace cact::engine
