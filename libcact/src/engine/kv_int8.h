#pragma once
// The int8 KV cache's quantiser and attention (kv_int8.cpp), used by KvCache.
#include <cstddef>
#include <cstdint>

#include "engine/kv_cache.h"
#include "engine/vmath.h"

namespace cact::engine::detail {

// quantize_int8 in two steps: the scale (absmax/127, 1 when all zero; NaN
// ignored), then the codes for that scale. AVX-512 where the CPU has it, else
// the portable loops below (the same results: every step is exact or one
// correctly rounded division).
float int8_scale(const float* x, uint32_t n);
void int8_codes(const float* x, uint32_t n, float scale, int8_t* q);
float int8_scale_portable(const float* x, uint32_t n);
void int8_codes_portable(const float* x, uint32_t n, float scale, int8_t* q);

// Quantises k (dq floats) into row `row` of one KV head's tiled K layout
// (kv_cache.h: [tile][dq4 / 4][16][4] bytes code + 128, code 0 in the
// padding up to dq4); returns the scale.
float store_k_row(const float* k, uint32_t dq, uint32_t dq4, uint8_t* k8, uint32_t row);

// Positions [pos, pos + count) stored in rows [row, row + count).
struct Int8Segment {
  uint32_t pos, row, count;
};

// One pass of the int8 attention over one KV head: `tokens` tokens ×
// `heads` query heads (heads <= AttendScratch::kHeads, tokens <= kTokens, and
// their score rows fit the scratch: AttendScratch::tokens_fitting).
struct Int8Pass {
  // The KV head's rows.
  const uint8_t* k8;  // [tile][dq4 / 4][16][4]
  const int8_t* v8;   // [row][dv]
  const float* ks;    // [rows16]
  const float* vs;    // [rows16]
  uint32_t dq, dq4, dv;
  // The positions any token of the pass sees, ascending, as stored runs.
  const Int8Segment* segments;
  uint32_t nsegments;
  // Token c's heads at q + c·q_stride ([heads][dq]), its visible positions
  // ranges[c], its output at out + c·out_stride ([heads][dv]).
  const float* q;
  size_t q_stride;
  uint32_t tokens, heads;
  const TokenRanges* ranges;
  float* out;
  size_t out_stride;
  AttendScratch* s;
};
void int8_pass(VecIsa isa, const Int8Pass& p);

// The softmax of a row of the pass's scores, built as int8_pass builds it for
// `isa` (for tests: it must give softmax<float>'s bits). Reads and writes x up
// to n rounded up to 16 values; those past n come out 0.
void attention_softmax(VecIsa isa, float* x, uint32_t n);

// Tests: score every pass with the portable integer code (on) or with the
// CPU's dot-product instructions where it has them (off, the default).
void use_portable_scores(bool on);

}  // namespace cact::engine::detail
