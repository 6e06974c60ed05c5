#pragma once
// Toolkit tier (docs/API.md): the engine's routines that are written with
// intrinsics, one table per ISA-flagged file under libcact/src/kernels/x86/ and
// arm/, chosen in kernels/dispatch.cpp like the CQ tables. Every routine gives
// the bits of the engine's portable twin (libcact/src/engine/), which runs
// wherever a table or an entry is missing: the conversions are exact and the
// float operations per output are the twin's, in its order.
#include <cstddef>
#include <cstdint>

#include "cact/vec.h"

namespace cact::kernels {

// The float MLP's stages that read FP16 weights (engine/hadamard_mlp.cpp).
struct FloatMlpKernels {
  // logits[r] = Σ_d m[d]·cond_v[d][r] (cond_v D × 8, FP16) as 8 partial sums
  // over d mod 8, fused multiply-adds, the partials added in order at the end.
  void (*cond_logits)(const float* m, const uint16_t* cond_v, uint32_t D, float logits[8]);
  // cond[i] = 1 + Σ_r p[r]·cond_u[r][i] (cond_u 8 × N, FP16): one chain of
  // fused multiply-adds per output, r in order.
  void (*cond_values)(const float p[8], const uint16_t* cond_u, uint32_t N, float* cond);
  // z[i] = t[perm[i]]·d[i] (d null: t[perm[i]]) for i < n.
  void (*permute)(const float* t, const uint32_t* perm, const float* d, uint32_t n, float* z);
};
// The table built for this float width (vec::VecIsa::avx2 or avx512), or
// null (the baseline width, another architecture, or a CPU without it).
const FloatMlpKernels* float_mlp_kernels(vec::VecIsa width);

// One 16-row tile of the int8 K cache against `rows` quantised query rows
// (engine/kv_int8.cpp: the cache layout and the score formula):
// dst[r·stride + l] = float(Σ k·q − bias[r]) · ks[l] · coef[r] for lanes l in [la, lb).
struct KvScoreTile {
  uint32_t rows;
  const uint8_t* kt;  // the tile: dq4 / 4 groups of 16 rows × 4 bytes, stored as k + 128
  uint32_t dq4;
  const int8_t* q8;  // rows × dq4 codes
  const int32_t* bias;
  const float* coef;
  const float* ks;  // the tile's 16 row scales
  float* dst;
  size_t stride;
  uint32_t la, lb;
};
// The int8 KV cache's quantiser and scores (null members: this CPU has no
// such build; the engine's portable code runs).
struct KvInt8Kernels {
  // absmax(|x|) / 127, or 1 for a row of zeros.
  float (*scale)(const float* x, uint32_t n);
  // q[i] = x[i] / scale rounded half away from zero, clamped to [-128, 127], NaN to 0.
  void (*codes)(const float* x, uint32_t n, float scale, int8_t* q);
  void (*scores)(const KvScoreTile& tile);
  // out[i] = float(v[i]) for i < n (exact): the value rows, widened once per
  // block for the float value sums.
  void (*widen)(const int8_t* v, size_t n, float* out);
  // One token's value sums over rows [ia, ib) of a block, the codes converted
  // on the way (each row is read once, so widening it first would cost a pass):
  // out[h·64 + j] += w[h·w_stride + i] · float(v[i·64 + j]) for h < heads,
  // j < 64, i in order, one fused multiply-add per term. Only for needle3's
  // shape: rows of 64 values (dv) and heads a multiple of 6 (its GQA group).
  void (*values_one)(float* out, uint32_t heads, const float* w, size_t w_stride, const int8_t* v, uint32_t ia,
                     uint32_t ib);
};
const KvInt8Kernels& kv_int8_kernels();

}  // namespace cact::kernels
