#pragma once
// The forward pass of a chunk of tokens, layer-major (every token of the chunk
// goes through block l before block l+1), and the decoding state it carries
// between chunks. A chunk of one token is incremental decoding; a chunk of the
// whole prompt is a full-sequence forward. All buffers are sized once, in the
// constructor, from the geometry, the span and max_chunk: run() never allocates
// (except keep_cells, a test/debug option).
#include <cstdint>
#include <memory>
#include <span>
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

// The float width a new Forward runs: vec_isa(), or narrower after
// cap_session_vec_isa (tests compare the widths end to end; the bits must not
// change).
VecIsa engine_vec_isa();
void cap_session_vec_isa(VecIsa cap);

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

// Chunk working buffers, one struct per stage of the forward pass (MODEL.md
// "Forward pass"; symbols as there). Each buffer holds max_chunk rows,
// [token][width] row-major; a LinearInput is a buffer prepared for products
// (Linear::load).
struct Workspace {
  // Engram inputs (step 2) and Block_l's engram update at a site.
  struct Engram {
    std::vector<int32_t> tokens;      // [max(order)-1 history | chunk] token ids
    std::vector<int32_t> slots;       // [C][E] table row per table; -1: switched off
    std::vector<float> rows;          // e: one token's picked table rows, E·sd (a background decode step)
    LinearInput rows_prepared;        // e, for key_proj and value_proj
    std::vector<float> key;           // k = key_proj · e, D
    std::vector<float> value_window;  // a site's value conv runs a long chunk here (CausalConv::input)
    std::vector<float> value;         // v': the value after its causal conv, D
    size_t bytes() const;
  };
  // mHC around every block (step 3): the n lanes and the coefficients of layer l.
  struct Mhc {
    std::vector<float> lanes;        // X[0..n-1], n·D
    LinearInput lanes_rms_prepared;  // nx = rms(concat X), n·D, for the three Φ products
    std::vector<float> phi_pre;      // Φpre nx of every layer, L·n
    std::vector<float> phi_post;     // Φpost nx of every layer, L·n
    std::vector<float> phi_res;      // Φres nx of every layer, L·n·n
    std::vector<float> hpre, hpost;  // hpre, hpost of layer l, n
    std::vector<float> mix;          // P = sinkhorn(R), n·n
    std::vector<float> block;        // u = Σ hpre[j] X[j], updated in place to Block_l(u), D
    std::vector<float> block_in;     // u as Block_l received it (y = Block_l(u) - u), D
    size_t bytes() const;
  };
  // Attention_l(a).
  struct Attention {
    LinearInput input_prepared;             // a = norm(u; norm_in), D, for q/k/v/gate_proj
    std::vector<float> rope_cos, rope_sin;  // cos, sin of t·f_i, dq/2
    // The window a layer's q, k, v taps run a long chunk in (history + C rows of
    // q_proj a, k_proj a, v_proj a): one for all layers (CausalConv::input).
    std::vector<float> q_window, k_window, v_window;
    std::vector<float> q, k, v;          // after taps, head norms and RoPE: H·dq, K·dq, K·dv
    std::vector<float> gate;             // gate_proj a, H·dv
    std::vector<float> gated;            // the heads' output, then o = out ⊙ σ(gate) in place, H·dv
    LinearInput gated_prepared;          // o, for out_proj
    std::vector<float> out;              // z = out_proj o, D
    std::vector<AttendScratch> scratch;  // per pool thread
    size_t bytes() const;
  };
  // HadamardMLP_l(m).
  struct Mlp {
    // norm(z; post_norm) for the attention residual, then m = norm(u; pre_hada), D
    std::vector<float> input;
    std::vector<float> out;            // HadamardMLP_l(m), D
    std::vector<HadaScratch> scratch;  // per pool thread
    size_t bytes() const;
  };
  // Step 4: the logits' input.
  struct Output {
    LinearInput x_prepared;  // x = final_norm(mean X), D, for the tied head
    size_t bytes() const;
  };
  // Probe heads: what they fold (HeadPool::add_row).
  struct Probe {
    std::vector<float> cells;  // (L+1)·D: x, then mean X after each block; also the decode backlog
    struct Scratch {           // one pool thread's rows
      LinearInput in;
      std::vector<float> scores;
      size_t bytes() const { return in.bytes() + scores.capacity() * sizeof(float); }
    };
    std::vector<Scratch> scratch;  // per pool thread
    size_t bytes() const;
  };
  Engram engram;
  Mhc mhc;
  Attention attention;
  Mlp mlp;
  Output output;
  Probe probe;
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
  // Non-empty `logit_rows` (ascending, distinct, below out_rows; last token only):
  // only those logits are computed, the others are -infinity.
  void run(const int32_t* tokens, uint32_t count, float* all_logits, std::span<const int32_t> logit_rows = {});

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
  // here: one token (count 1) on the calling thread only (a decode step's background task), no pool jobs.
  void engram(uint32_t site, uint32_t count, bool here = false);
  // A decode step (one token, int8 numerics, two threads or more) computes a
  // site's engram rows and projections, which depend on the tokens only, as
  // the pool's background task: an idle worker runs them while the caller
  // does the float work of the two layers before (one task at a time: a site
  // that comes too soon after another runs in turn). Otherwise layer() does.
  void launch_engram(uint32_t layer, uint32_t count);
  void attention(uint32_t l, uint32_t count);
  // Probe heads: chunks of kHeadBatch tokens or more fold at once; shorter
  // ones (decode steps) wait in the backlog until it would overflow or a head
  // is read. Each probe's accumulators (a 516 KB state on needle3, in double)
  // are then read and written once per batch instead of once per token, and
  // its scores come from one batched product. Every probe still sees the
  // tokens in order, so its sums are unchanged.
  // A decode step writes its cells straight into the backlog's next slot
  // (place_cells): no copy per token. A chunk folds its cell rows a few at a
  // time as the layers write them, so it keeps a few rows of cells, not L+1.
  void fold_rows(uint32_t r0, uint32_t r1, uint32_t count);
  void settle_heads();
  // Where this run's cells go (place_cells): token c's row-r cell is at cell(c, r).
  bool place_cells(uint32_t count);
  float* cell(size_t c, size_t r) { return cells_ + c * w_->g.D + (r % cell_ring_) * cell_row_stride_; }

  const Engine* engine_;
  const Weights* w_;
  std::unique_ptr<ThreadPool> pool_;
  Linear linear_;
  bool untied_ = false;
  bool int8_numerics_ = false;  // the per-token float work accumulates in float, not double
  VecIsa isa_ = VecIsa::base;
  bool keep_cells_ = false;
  uint32_t context_ = 0, max_chunk_ = 0, pos_ = 0, history_ = 0;
  Visibility vis_;
  std::vector<LayerState> layers_;
  std::vector<SiteState> sites_;
  std::vector<HeadPool> pools_;
  uint32_t backlog_tokens_ = 0;   // decode steps' cells waiting in ws_.probe.cells
  float* cells_ = nullptr;        // ws_.probe.cells: a chunk's, or the backlog's next slots
  size_t cell_row_stride_ = 0;    // (a row's tokens are D apart)
  uint32_t cell_ring_ = 1;        // rows of cells held: row r is in slot r % cell_ring_
  bool fold_as_written_ = false;  // this run folds its rows as the layers write them
  Workspace ws_;
  std::vector<float> last_logits_;
  bool has_logits_ = false;
  std::vector<float> kept_cells_;
  struct EngramTask {
    Forward* forward;
    int32_t site = -1;  // launched and not yet joined
    void operator()(uint32_t) const { forward->engram(uint32_t(site), 1, true); }
  };
  EngramTask engram_task_{this};
};

}  // namespace cact::engine
