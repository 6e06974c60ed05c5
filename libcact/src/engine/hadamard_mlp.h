#pragma once
// The Hadamard MLP of one block (MODEL.md "HadamardMLP_l"): a conditioned,
// permuted product of three Kronecker-factored maps F(w; A, B) = Aᵀ W B on
// the width-N padded vector. Float in both numerics (its factors are FP16).
#include <cstdint>
#include <vector>

#include "engine/weights.h"

namespace cact::engine {

struct HadaScratch {
  std::vector<float> z, t, cond, tmp;
  std::vector<double> acc;  // one row of double accumulators (max(ba, bb), at least 8)
  void reserve(uint32_t N);
  size_t bytes() const {
    return (z.capacity() + t.capacity() + cond.capacity() + tmp.capacity()) * sizeof(float) +
           acc.capacity() * sizeof(double);
  }
};

// F(w; A, B) into out (N values); tied or block-untied factors by `untied`.
// acc: max(ba, bb) doubles of scratch (nullptr: allocated here; not for the token loop).
void hada_factor(const float* w, const float* A, const float* B, uint32_t ba, uint32_t bb, bool untied, float* out,
                 float* tmp, double* acc = nullptr);

// out[0, D) = HadamardMLP_l(m).
void hadamard_mlp(const Weights& w, uint32_t l, bool untied, const float* m, float* out, HadaScratch& s);

}  // namespace cact::engine
