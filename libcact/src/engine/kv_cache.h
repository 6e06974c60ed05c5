#pragma once
// One layer's KV cache and the attention of the query heads of one KV head over it.
//
// Storage rows: a pinned area for positions [0, pinned) (the sinks), then a
// ring of `ring` rows for positions >= pinned (row = pinned + (pos - pinned) % ring).
// Layout is head-major ([kv_head][row]...): one head's rows are one run.
//
// Element formats (MODEL.md "Decoding state and numerics"):
//   f32  - reference numerics: the float vectors as computed;
//   int8 - one symmetric absmax scale per (position, head): scale = absmax/127,
//          round to nearest, clamp [-128, 127]; the query is quantised the same
//          way per head and scores are integer dot products. K is stored in
//          tiles of 16 rows, transposed by groups of 4 bytes and offset by 128
//          ([tile][dq/4][16 rows][4] bytes k + 128: the unsigned operand of
//          VPDPBUSD, see kv_int8.cpp); V row-major ([row][dv]);
//   cq   - kv_bits 2/3/4: per (position, head) groups of 64 (zero-padded),
//          order-64 Hadamard rotation, FP16 norm, nearest entry of the width's
//          codebook rescaled to group 64. Scores and value sums are taken in the
//          rotated domain (H is orthogonal), so nothing is dequantised per row.
#include <cstdint>
#include <span>
#include <vector>

#include "cact/kernels.h"
#include "engine/vmath.h"

namespace cact::engine {

enum class KvFormat : uint8_t { f32, int8, cq };

// Symmetric absmax int8 of one vector (K/V rows and queries of the int8 format):
// scale = absmax/127 (1 when all zero), q = clamp(lround(x / scale), -128, 127).
// Returns the scale.
float quantize_int8(const float* x, uint32_t n, int8_t* q);

// An inclusive range of positions to attend to.
struct PosRange {
  uint32_t first = 0, last = 0;
  uint32_t size() const { return last - first + 1; }
};

// The visible positions of one query token: up to two ascending ranges
// (Visibility::ranges).
struct TokenRanges {
  PosRange r[2];
  uint32_t n = 0;
  uint32_t size() const { return (n > 0 ? r[0].size() : 0) + (n > 1 ? r[1].size() : 0); }
};

// Per-call scratch of attend_group() / attend_tokens(), sized once by the session.
struct AttendScratch {
  static constexpr uint32_t kHeads = 8;    // query heads of one KV head attended in one pass
  static constexpr uint32_t kTokens = 8;   // int8: tokens attended in one pass (score memory permitting)
  static constexpr uint32_t kTile = 16;    // int8: K rows per tile of the stored layout
  static constexpr uint32_t kBlock = 64;   // int8: V rows converted to float at a time
  static constexpr uint32_t kMargin = 16;  // int8: spare floats before and after each score row
  std::vector<float> scores;               // f32/cq: [positions]; int8: [token][head][margin | positions | margin]
  std::vector<int8_t> q8;                  // int8: [token][head][dq rounded up to 4] quantised queries
  std::vector<float> coef;                 // int8: [token][head] q_scale / sqrt(dq)
  std::vector<int32_t> bias;               // int8: [token][head] 128 · Σ q8 (the stored K's offset)
  std::vector<float> vblock;               // int8: one block of value rows as float, [kBlock][dv]
  std::vector<float> weights;              // int8: softmax weight × value scale, [kHeads][kBlock]
  std::vector<float> rotated;              // cq: rotated query / value accumulator
  std::vector<uint8_t> idx;                // cq: unpacked indices of one group
  void reserve(uint32_t positions, uint32_t dq, uint32_t dv);
  size_t positions() const { return positions_; }
  // int8: how many of `tokens` tokens with `heads` heads and up to `width`
  // visible positions each fit in one pass (at least 1).
  uint32_t tokens_fitting(uint32_t tokens, uint32_t heads, uint32_t width) const;
  size_t bytes() const;

 private:
  size_t positions_ = 0;
};

class KvCache {
 public:
  static constexpr uint32_t kCqGroup = 64;

  // `kernels`: no longer used (the int8 dots are kv_int8.cpp's own, exact).
  void init(KvFormat format, uint32_t kv_heads, uint32_t dq, uint32_t dv, uint32_t pinned, uint32_t ring,
            uint32_t cq_bits, std::span<const float> cq_codebook, const kernels::KernelTable* kernels);
  uint32_t pinned() const { return pinned_; }
  uint32_t ring() const { return ring_; }
  uint32_t rows() const { return pinned_ + ring_; }
  uint32_t row_of(uint32_t pos) const { return pos < pinned_ ? pos : pinned_ + (pos - pinned_) % ring_; }

  // Store position `pos`: k is [kv_heads][dq] (normed, roped), v is [kv_heads][dv].
  void write(uint32_t pos, const float* k, const float* v);
  // Store KV head `head` of position `pos` (k is [dq], v is [dv]); heads are
  // stored apart, so different heads may be written from different threads.
  void write_head(uint32_t pos, uint32_t head, const float* k, const float* v);
  // out[dv] = Σ softmax(q·k_s / sqrt(dq)) v_s over the positions of `ranges`
  // (all of which must be stored and not overwritten), for KV head `kv_head`.
  void attend(const float* q, uint32_t kv_head, std::span<const PosRange> ranges, float* out,
              AttendScratch& scratch) const {
    attend_group(q, 1, kv_head, ranges, out, scratch);
  }
  // attend() for `heads` query heads that share KV head `kv_head` (a GQA group):
  // q is [heads][dq], out is [heads][dv]. Each head's output has the same bits
  // as attend() of that head alone.
  void attend_group(const float* q, uint32_t heads, uint32_t kv_head, std::span<const PosRange> ranges, float* out,
                    AttendScratch& scratch) const;
  // attend_group() for `tokens` query tokens: token c's heads at q + c·q_stride
  // ([heads][dq]), its visible positions ranges[c], its output at
  // out + c·out_stride ([heads][dv]). Each token's output has the same bits as
  // attend_group() of that token alone, for any `isa` (the vector width of the
  // float work; int8 reads each tile of K and block of V rows once for all the
  // tokens of a pass that see it).
  void attend_tokens(const float* q, size_t q_stride, uint32_t tokens, uint32_t heads, uint32_t kv_head,
                     const TokenRanges* ranges, float* out, size_t out_stride, AttendScratch& scratch,
                     VecIsa isa) const;
  size_t bytes() const;

 private:
  template <typename F>
  void for_each_segment(std::span<const PosRange> ranges, F&& f) const;
  void attend_int8(const float* q, size_t q_stride, uint32_t tokens, uint32_t heads, uint32_t kv_head,
                   const TokenRanges* ranges, float* out, size_t out_stride, AttendScratch& s, VecIsa isa) const;
  void attend_one(const float* q, uint32_t kv_head, std::span<const PosRange> ranges, float* out,
                  AttendScratch& s) const;
  void quantize_cq(const float* x, uint32_t dim, uint8_t* packed, uint16_t* norms, float* scratch) const;

  KvFormat format_ = KvFormat::f32;
  uint32_t K_ = 0, dq_ = 0, dv_ = 0, pinned_ = 0, ring_ = 0;
  // f32
  std::vector<float> kf_, vf_;
  // int8: rows padded to whole tiles per KV head (rows16_)
  uint32_t rows16_ = 0, dq4_ = 0;  // dq4_: dq rounded up to a multiple of 4
  std::vector<uint8_t> k8_;        // [kv_head][tile][dq4 / 4][16][4], k + 128
  std::vector<int8_t> v8_;         // [kv_head][row][dv]
  std::vector<float> ks_, vs_;     // [kv_head][rows16]
  // cq
  uint32_t bits_ = 0, kgroups_ = 0, vgroups_ = 0, group_bytes_ = 0;
  std::vector<float> codebook_;
  std::vector<uint8_t> kc_, vc_;
  std::vector<uint16_t> kn_, vn_;
};

}  // namespace cact::engine
