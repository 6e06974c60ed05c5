#pragma once
// CQ-W2A8 compute kernels (MODEL.md "Decoding state and numerics"): the packed
// weight bytes are consumed as they are, against int8 activations that were
// rotated (Hadamard per 128-group) and quantised once per input vector.
// One implementation per ISA (scalar, AVX2, NEON dot-product) behind one
// dispatch table chosen at run time. The scalar table is the oracle.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cact/codec.h"

namespace cact::kernels {

// A codebook scaled to int8 once: value(i) ~= q[i] * scale.
struct Int8Codebook {
  int8_t q[16] = {};
  float scale = 0.0f;
  uint32_t bits = 0;  // CQ width this codebook serves (1..4, 5 = ternary)
};
// Scale = max|entry| / 127, entries rounded to nearest.
Int8Codebook make_int8_codebook(std::span<const float> codebook, uint32_t bits);

// One or more activation vectors, each rotated per group and quantised to
// int8 with one scale per group (absmax / 127, round to nearest). Row-major:
// vector v occupies q[v*in_pad, (v+1)*in_pad), scale[v*groups, ...).
struct QuantizedActivations {
  uint32_t in = 0, in_pad = 0, group = codec::kGroup, count = 0;
  std::vector<int8_t> q;
  std::vector<float> scale;
  // Names the contents for the tables that keep an input prepared across
  // products: quantize_activations gives every result a new version, and code
  // that writes q or scale itself calls mark_written() before the next
  // product. 0: never reused. (A copy keeps the version but has other buffers.)
  uint64_t version = 0;
  void mark_written();
  uint32_t groups() const { return in_pad / group; }
  const int8_t* vec(uint32_t v) const { return q.data() + size_t(v) * in_pad; }
  const float* scales(uint32_t v) const { return scale.data() + size_t(v) * groups(); }
};

struct KernelTable {
  const char* name;
  // Rotate + quantise `count` vectors of `in` floats (row stride `in`) into `out`
  // (resized as needed; no allocation when already large enough).
  void (*quantize_activations)(const float* x, uint32_t in, uint32_t count, QuantizedActivations& out);
  // y[v*y_stride + r] = sum over groups of dot(cb.q[idx], a.q) * norm * a.scale * cb.scale
  // for rows r in [row_begin, row_end) and every activation vector v.
  void (*cq_matmul)(const codec::CqMatrix& w, const Int8Codebook& cb, const QuantizedActivations& a, uint32_t row_begin,
                    uint32_t row_end, float* y, size_t y_stride);
  // out[0, w.in) = row r of w dequantised: per group, codebook[index] * norm,
  // then the inverse rotation (codec::fwht); the same bits as
  // codec::dequantize_row in every table. `codebook` holds codec::levels(w.bits)
  // floats. The engine's per-token rows (embedding, engram tables) go here.
  void (*dequantize_row)(const codec::CqMatrix& w, const float* codebook, uint32_t r, float* out);
};

const KernelTable& scalar_kernels();
// The best table this CPU supports, at most the level CACT_ISA=<table> names
// (docs/KERNELS.md "Dispatch"); chosen once. Throws cact::Error when CACT_ISA
// names no table.
const KernelTable& best_kernels();
// Every table usable on this CPU under CACT_ISA (scalar first, best last), for
// equality tests, benchmarks and callers that pick a table by name.
std::vector<const KernelTable*> available_kernels();

}  // namespace cact::kernels
