#pragma once
// The forward pass of a chunk of tokens, layer-major (every token of the chunk
// goes through block l before block l+1), and the decoding state it carries
// between chunks. A chunk of one token is incremental decoding; a chunk of the
// whole prompt is a full-sequence forward. All buffers are sized once, in the
// constructor, from the geometry, the span and max_chunk: run() never allocates
// (except keep_cells, a test/debug option).
#include <cstdint>
#include <memory>
#include <vector>

#include "cact/engine.h"
#include "engine/conv.h"
#include "engine/hadamard_mlp.h"
#include "engine/heads.h"
#include "engine/kv_cache.h"
#include "engine/linear.h"
#include "engine/pool.h"
#include "engine/weights.h"

namespace cact::engine {

// Which positions a query may see (MODEL.md Attention_l and kv_window).
struct Visibility {
  uint32_t sliding_window = 0;  // local layers only; 0 = none
  uint32_t span = 0;            // kv_window in effect; 0 = none
  uint32_t sinks = 0;           // pinned prefix kept through the span
  // Up to two ascending ranges for query t (sinks first). Returns the count.
  uint32_t ranges(uint32_t t, bool global, PosRange out[2]) const;
};

struct LayerState {
  CausalConv q, k, v;  // pre-conv rings (T > 0)
  KvCache cache;
};

struct SiteState {
  CausalConv value;  // pre-conv engram values, dilation engram_conv_dilation
};

// Chunk working buffers ([count][width] row-major).
struct Workspace {
  std::vector<int32_t> tokens;  // [max_order-1 history | chunk]
  std::vector<int32_t> slots;   // [C][E]
  std::vector<float> lanes, nx, pre, post, res, hpre, hpost, mix;
  std::vector<float> u, u_in, e, ek, ev, a, q, k, v, gate, att, z, m, mlp, fin, cells;
  std::vector<float> rope_cos, rope_sin;
  LinearInput in_nx, in_e, in_a, in_o, in_fin;
  struct HeadScratch {  // probe-head rows of a chunk (HeadPool::add_row)
    LinearInput in;
    std::vector<float> gather, scores;
    size_t bytes() const { return in.bytes() + (gather.capacity() + scores.capacity()) * sizeof(float); }
  };
  std::vector<HeadScratch> heads;  // per pool thread
  std::vector<HadaScratch> hada;      // per pool thread
  std::vector<AttendScratch> attend;  // per pool thread
  size_t bytes() const;
};

class Forward {
 public:
  Forward(const Engine& engine, const SessionOptions& options);
  void reset();
  // Take over `src`'s decoding state (positions, caches, rings, heads), as if
  // this had been fed the same tokens. Both must come from the same engine with
  // the same context, chunk, span and sinks; throws cact::Error otherwise.
  void copy_state(const Forward& src);
  // Feed `count` tokens (1..max_chunk) at positions position()...; logits of
  // the last token, or of every token into all_logits ([count][out_rows]).
  void run(const int32_t* tokens, uint32_t count, float* all_logits);

  uint32_t position() const { return pos_; }
  uint32_t context() const { return context_; }
  uint32_t max_chunk() const { return max_chunk_; }
  uint32_t threads() const { return pool_->size(); }
  const Visibility& visibility() const { return vis_; }
  const std::vector<float>& last_logits() const { return last_logits_; }
  bool has_logits() const { return has_logits_; }
  const std::vector<float>& kept_cells() const { return kept_cells_; }
  // The head's pool with every fed token folded in (settles the backlog), or
  // nullptr when the archive lacks the head.
  const HeadPool* pool(HeadKind kind);
  Linear& linear() { return linear_; }
  size_t bytes() const;

 private:
  void layer(uint32_t l, uint32_t count);
  void engram(uint32_t site, uint32_t count);
  void attention(uint32_t l, uint32_t count);
  // Probe heads: chunks of kHeadBatch tokens or more fold at once; shorter
  // ones (decode steps) wait in the backlog until it would overflow or a head
  // is read. Each probe's accumulators (a 516 KB state on needle3, in double)
  // are then read and written once per batch instead of once per token, and
  // its scores come from one batched product. Every probe still sees the
  // tokens in order, so its sums are unchanged.
  // A decode step writes its cells straight into the backlog's next slot
  // (place_cells): no copy per token.
  void feed_heads(const float* cells, uint32_t count);
  void fold_heads(const float* cells, uint32_t count, size_t token_stride, size_t row_stride);
  void settle_heads();
  // Where this run's cells go (place_cells): token c's row-r cell is at cell(c, r).
  bool place_cells(uint32_t count);
  float* cell(size_t c, size_t r) { return cells_ + c * cell_token_stride_ + r * cell_row_stride_; }

  const Engine* engine_;
  const Weights* w_;
  std::unique_ptr<ThreadPool> pool_;
  Linear linear_;
  bool untied_ = false;
  bool f32_ = false;  // int8 numerics: the per-token float work accumulates in float
  VecIsa isa_ = VecIsa::base;
  bool keep_cells_ = false;
  uint32_t context_ = 0, max_chunk_ = 0, pos_ = 0, history_ = 0;
  Visibility vis_;
  std::vector<LayerState> layers_;
  std::vector<SiteState> sites_;
  std::vector<HeadPool> pools_;
  std::vector<float> head_backlog_;  // [L+1][kHeadBatch][D] cells
  uint32_t backlog_tokens_ = 0;
  float* cells_ = nullptr;  // ws_.cells, or a decode step's backlog slot
  size_t cell_token_stride_ = 0, cell_row_stride_ = 0;
  Workspace ws_;
  std::vector<float> last_logits_;
  bool has_logits_ = false;
  std::vector<float> kept_cells_;
};

}  // namespace cact::engine
