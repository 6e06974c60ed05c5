#pragma once
// The Hadamard MLP of one block (MODEL.md "HadamardMLP_l"): a conditioned,
// permuted product of three Kronecker-factored maps F(w; A, B) = Aᵀ W B on
// the width-N padded vector. Its factors are FP16 (float here) in both numerics;
// the accumulator type is the numerics' choice: double for the reference path
// (its contract), float for the int8 path (docs/ENGINE.md "Float work").
#include <cstdint>
#include <vector>

#include "engine/vmath.h"
#include "engine/weights.h"

namespace cact::engine {

struct HadaScratch {
  static constexpr uint32_t kMaxBlock = 16;
  uint32_t block = 1;             // tokens per stage-by-stage block (hadamard_mlp)
  std::vector<float> z, t, cond;  // block·N values each
  std::vector<float> tmp;         // N values
  std::vector<double> acc;        // one row of accumulators (block-untied factors), max(N, 8)
  std::vector<float> acc32;       // the same in float
  // For blocks of up to `tokens` tokens (at most kMaxBlock).
  void reserve(uint32_t N, uint32_t tokens = 1);
  size_t bytes() const {
    return (z.capacity() + t.capacity() + cond.capacity() + tmp.capacity() + acc32.capacity()) * sizeof(float) +
           acc.capacity() * sizeof(double);
  }
};

// F(w; A, B) into out (N values); tied or block-untied factors by `untied`.
// Every output is one Acc sum from 0 in index order (any vector width gives the
// same bits). Rows of W from `rows_in` on are zero, and only output rows below
// `rows_out` are wanted (0: all ba rows). acc: max(ba, bb) Acc of scratch for
// block-untied factors (nullptr: allocated here; not for the token loop).
template <typename Acc = double>
void hada_factor(const float* w, const float* A, const float* B, uint32_t ba, uint32_t bb, bool untied, float* out,
                 float* tmp, Acc* acc = nullptr, uint32_t rows_in = 0, uint32_t rows_out = 0, VecIsa isa = vec_isa());

// out[c·out_stride + i] = HadamardMLP_l(m_c)[i] for i < D and the `count`
// vectors m_c = m + c·m_stride. Acc = double: double sums and a double-exp silu
// (reference numerics); Acc = float: float sums and silu_approx (int8 numerics).
// The tokens run in blocks of s.block, stage by stage (the layer's weights of a
// stage are read once per block from memory). Each token's result does not
// depend on count, the block or isa (the double version is built for the
// baseline width only).
template <typename Acc>
void hadamard_mlp(const Weights& w, uint32_t l, bool untied, const float* m, size_t m_stride, uint32_t count,
                  float* out, size_t out_stride, HadaScratch& s, VecIsa isa = vec_isa());

}  // namespace cact::engine
