// The chunked forward pass (MODEL.md "Forward pass"): embedding, engram
// slots, the mHC lanes around every block, final norm and the tied head.
#include "engine/forward.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "cact/error.h"
#include "engine/engram.h"
#include "engine/mhc.h"
#include "engine/ops.h"

namespace cact::engine {

namespace {
constexpr uint32_t kMlpBlock = 8;    // tokens per Hadamard MLP call in a chunk
constexpr uint32_t kHeadBatch = 16;  // tokens per probe-head fold in decode (place_cells)
constexpr uint32_t kFoldRows = 4;    // cell rows per probe-head fold in a chunk (place_cells)
template <typename T>
size_t cap_bytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}
std::atomic<VecIsa> session_cap{VecIsa::avx512};
}  // namespace

void cap_session_vec_isa(VecIsa cap) { session_cap.store(cap); }

VecIsa engine_vec_isa() {
  const VecIsa cap = session_cap.load();
  return cap < vec_isa() ? cap : vec_isa();
}

size_t Workspace::Engram::bytes() const {
  return cap_bytes(tokens) + cap_bytes(slots) + cap_bytes(rows) + rows_prepared.bytes() + cap_bytes(key) +
         cap_bytes(value_window) + cap_bytes(value);
}

size_t Workspace::Mhc::bytes() const {
  size_t b = lanes_rms_prepared.bytes();
  for (const auto* buf : {&lanes, &phi_pre, &phi_post, &phi_res, &hpre, &hpost, &mix, &block, &block_in}) {
    b += cap_bytes(*buf);
  }
  return b;
}

size_t Workspace::Attention::bytes() const {
  size_t b = input_prepared.bytes() + gated_prepared.bytes();
  for (const auto* buf : {&rope_cos, &rope_sin, &q_window, &k_window, &v_window, &q, &k, &v, &gate, &gated, &out}) {
    b += cap_bytes(*buf);
  }
  for (const AttendScratch& s : scratch) b += s.bytes();
  return b;
}

size_t Workspace::Mlp::bytes() const {
  size_t b = cap_bytes(input) + cap_bytes(out);
  for (const HadaScratch& s : scratch) b += s.bytes();
  return b;
}

size_t Workspace::Output::bytes() const { return x_prepared.bytes(); }

size_t Workspace::Probe::bytes() const {
  size_t b = cap_bytes(cells);
  for (const Scratch& s : scratch) b += s.bytes();
  return b;
}

size_t Workspace::bytes() const {
  return engram.bytes() + mhc.bytes() + attention.bytes() + mlp.bytes() + output.bytes() + probe.bytes();
}

Forward::Forward(const Engine& engine, const SessionOptions& options)
    : engine_(&engine),
      w_(&weights_of(engine)),
      pool_(std::make_unique<ThreadPool>(options.threads)),
      linear_(weights_of(engine), engine.numerics(), engine.kernels()) {
  linear_.set_pool(pool_.get());
  const uint32_t T = pool_->size();
  const Weights& w = *w_;
  const Geometry& g = w.g;
  untied_ = engine.model().canon().block_untied();
  int8_numerics_ = engine.numerics() == Numerics::int8;
  isa_ = engine_vec_isa();
  keep_cells_ = options.keep_cells;

  context_ = options.context == 0 ? g.max_seq : options.context;
  if (context_ > g.max_seq) {
    fail("context " + std::to_string(context_) + " exceeds the archive's max_seq_len " + std::to_string(g.max_seq));
  }
  uint32_t span = g.kv_window;
  if (span == 0) {
    span = options.kv_window;
  } else if (options.kv_window != 0 && options.kv_window != span) {
    fail("kv_window " + std::to_string(options.kv_window) + " requested, but the archive fixes it at " +
         std::to_string(span));
  }
  if (span >= context_) span = 0;  // the span never cuts anything off
  vis_.span = span;
  vis_.sinks = span > 0 ? std::min(options.sinks, context_) : 0;
  vis_.sliding_window = g.sliding_window;
  max_chunk_ = std::clamp<uint32_t>(options.max_chunk, 1, context_);
  const uint32_t C = max_chunk_;

  // KV caches: pinned sinks + a ring as wide as the layer can see, plus the
  // chunk's write-ahead (C - 1 rows), never more than the context needs.
  const KvFormat format = engine.numerics() == Numerics::reference ? KvFormat::f32
                          : g.kv_bits == 8                         ? KvFormat::int8
                                                                   : KvFormat::cq;
  const uint32_t pinned = vis_.sinks;
  uint32_t widest = 0;
  layers_.resize(g.L);
  for (uint32_t l = 0; l < g.L; ++l) {
    LayerState& s = layers_[l];
    uint32_t see = context_;
    if (!w.layers[l].global && g.sliding_window > 0) see = std::min(see, g.sliding_window);
    if (span > 0) see = std::min(see, span);
    const uint32_t ring = uint32_t(std::max<uint64_t>(1, std::min<uint64_t>(uint64_t(see) + C - 1, context_ - pinned)));
    s.cache.init(format, g.K, g.dq, g.dv, pinned, ring, g.kv_bits, w.kv_codebook, &engine.kernels());
    widest = std::max(widest, pinned + ring);
    if (g.T > 0) {
      s.q.init(g.qdim(), g.T, 1, C);
      s.k.init(g.kdim(), g.T, 1, C);
      s.v.init(g.vdim(), g.T, 1, C);
    }
  }
  sites_.resize(w.sites.size());
  for (SiteState& s : sites_) s.value.init(g.D, g.etaps, g.edil, C);
  uint32_t head_rows = 0;
  for (const HeadWeights& h : w.heads) {
    pools_.emplace_back();
    pools_.back().init(h, g);
    head_rows = std::max(head_rows, g.cell_rows() * h.k);
  }

  history_ = g.max_order > 0 ? g.max_order - 1 : 0;
  Workspace& ws = ws_;
  const size_t D = g.D, n = g.n, L = g.L;
  Workspace::Engram& eg = ws.engram;
  eg.tokens.assign(history_ + C, 0);
  eg.slots.assign(size_t(C) * std::max<uint32_t>(g.E, 1), -1);
  eg.rows.assign(size_t(g.E) * g.sd, 0.0f);  // one token: only a decode step runs engram() `here`
  linear_.reserve(eg.rows_prepared, g.E * g.sd, C, true);
  eg.key.assign(C * D, 0.0f);
  eg.value.assign(C * D, 0.0f);
  if (!sites_.empty()) eg.value_window.assign(sites_[0].value.spill_floats(), 0.0f);

  Workspace::Mhc& mhc = ws.mhc;
  mhc.lanes.assign(C * n * D, 0.0f);
  linear_.reserve(mhc.lanes_rms_prepared, g.n * g.D, C, true);
  mhc.phi_pre.assign(C * L * n, 0.0f);
  mhc.phi_post.assign(C * L * n, 0.0f);
  mhc.phi_res.assign(C * L * n * n, 0.0f);
  mhc.hpre.assign(C * n, 0.0f);
  mhc.hpost.assign(C * n, 0.0f);
  mhc.mix.assign(C * n * n, 0.0f);
  mhc.block.assign(C * D, 0.0f);
  mhc.block_in.assign(C * D, 0.0f);

  Workspace::Attention& att = ws.attention;
  linear_.reserve(att.input_prepared, g.D, C, true);
  att.rope_cos.assign(size_t(C) * g.dq / 2, 0.0f);
  att.rope_sin.assign(size_t(C) * g.dq / 2, 0.0f);
  if (g.T > 0) {
    att.q_window.assign(layers_[0].q.spill_floats(), 0.0f);
    att.k_window.assign(layers_[0].k.spill_floats(), 0.0f);
    att.v_window.assign(layers_[0].v.spill_floats(), 0.0f);
  }
  att.q.assign(size_t(C) * g.qdim(), 0.0f);
  att.k.assign(size_t(C) * g.kdim(), 0.0f);
  att.v.assign(size_t(C) * g.vdim(), 0.0f);
  att.gate.assign(size_t(C) * g.odim(), 0.0f);
  att.gated.assign(size_t(C) * g.odim(), 0.0f);
  linear_.reserve(att.gated_prepared, g.odim(), C);
  att.out.assign(C * D, 0.0f);
  att.scratch.resize(T);
  for (AttendScratch& a : att.scratch) a.reserve(widest, g.dq, g.dv);

  ws.mlp.input.assign(C * D, 0.0f);
  ws.mlp.out.assign(C * D, 0.0f);
  ws.mlp.scratch.resize(T);
  for (HadaScratch& h : ws.mlp.scratch) h.reserve(g.N, kMlpBlock);

  linear_.reserve(ws.output.x_prepared, g.D, C, true);

  const size_t backlog_cells = pools_.empty() ? 0 : size_t(kHeadBatch) * (L + 1) * D;
  const size_t chunk_cells = size_t(C) * (keep_cells_ ? L + 1 : std::min<size_t>(L + 1, kFoldRows)) * D;
  ws.probe.cells.assign(std::max(backlog_cells, chunk_cells), 0.0f);
  ws.probe.scratch.resize(pools_.empty() ? 0 : T);
  const uint32_t fold = std::max(C, kHeadBatch);
  for (Workspace::Probe::Scratch& ps : ws.probe.scratch) {
    linear_.reserve(ps.in, g.D, fold);
    ps.scores.assign(size_t(fold) * head_rows, 0.0f);
  }
  last_logits_.assign(g.out_rows, 0.0f);
  reset();
}

void Forward::reset() {
  pos_ = 0;
  has_logits_ = false;
  for (LayerState& s : layers_) {
    s.q.reset();
    s.k.reset();
    s.v.reset();
  }
  for (SiteState& s : sites_) s.value.reset();
  for (HeadPool& p : pools_) p.reset();
  backlog_tokens_ = 0;
  std::fill(ws_.engram.tokens.begin(), ws_.engram.tokens.end(), 0);
  kept_cells_.clear();
}

void Forward::copy_state(const Forward& src) {
  if (src.engine_ != engine_ || src.context_ != context_ || src.max_chunk_ != max_chunk_ ||
      src.vis_.span != vis_.span || src.vis_.sinks != vis_.sinks || src.keep_cells_ != keep_cells_) {
    fail("session state can only be copied between sessions of one engine with the same options");
  }
  pos_ = src.pos_;
  // Same shapes on both sides, so these assignments reuse the buffers.
  layers_ = src.layers_;
  sites_ = src.sites_;
  pools_ = src.pools_;
  backlog_tokens_ = src.backlog_tokens_;
  if (backlog_tokens_ > 0) {  // (the rest of the cells are a run's scratch)
    std::copy_n(src.ws_.probe.cells.begin(), size_t(kHeadBatch) * w_->g.cell_rows() * w_->g.D, ws_.probe.cells.begin());
  }
  std::copy_n(src.ws_.engram.tokens.begin(), history_, ws_.engram.tokens.begin());
  last_logits_ = src.last_logits_;
  has_logits_ = src.has_logits_;
  kept_cells_ = src.kept_cells_;
}

const HeadPool* Forward::pool(HeadKind kind) {
  for (const HeadPool& p : pools_) {
    if (p.weights().kind == kind) {
      settle_heads();
      return &p;
    }
  }
  return nullptr;
}

// Where this run's cells go. A chunk shorter than kHeadBatch (a decode step)
// writes them into the backlog's next slots, to be folded with its neighbours;
// a longer one (or any, when cells are kept) into the chunk layout. Both are
// row-major, so that a fold reads a row's tokens in place, and share
// ws.probe.cells: the backlog [L+1][kHeadBatch][D], a chunk [kFoldRows][C][D]
// (row r in slot r % kFoldRows, folded once its group of kFoldRows rows is
// written) or, when cells are kept, [L+1][C][D]. The backlog is settled
// before a chunk. Returns whether the cells go to the backlog.
bool Forward::place_cells(uint32_t count) {
  const uint32_t rows = w_->g.cell_rows();
  const size_t D = w_->g.D;
  const bool to_backlog = count < kHeadBatch && !pools_.empty() && !keep_cells_;
  if (to_backlog) {
    if (backlog_tokens_ + count > kHeadBatch) settle_heads();
    cells_ = ws_.probe.cells.data() + size_t(backlog_tokens_) * D;
    cell_row_stride_ = size_t(kHeadBatch) * D;
    cell_ring_ = rows;
  } else {
    settle_heads();
    cells_ = ws_.probe.cells.data();
    cell_row_stride_ = size_t(max_chunk_) * D;
    cell_ring_ = keep_cells_ ? rows : std::min(rows, kFoldRows);
  }
  fold_as_written_ = !to_backlog && !pools_.empty();
  return to_backlog;
}

void Forward::settle_heads() {
  if (backlog_tokens_ == 0) return;
  cells_ = ws_.probe.cells.data();
  cell_row_stride_ = size_t(kHeadBatch) * w_->g.D;
  cell_ring_ = w_->g.cell_rows();
  fold_rows(0, cell_ring_, backlog_tokens_);
  for (HeadPool& p : pools_) p.add_tokens(backlog_tokens_);
  backlog_tokens_ = 0;
}

// Folds cell rows [r0, r1) of `count` tokens (at cell(0, r)): one task per
// (head, row), each folding the tokens in order (the reference numerics'
// products share one scratch: caller only).
void Forward::fold_rows(uint32_t r0, uint32_t r1, uint32_t count) {
  const uint32_t n = r1 - r0;
  const auto head_row = [&](uint32_t task, uint32_t t) {
    Workspace::Probe::Scratch& hs = ws_.probe.scratch[t];
    const uint32_t r = r0 + task % n;
    pools_[task / n].add_row(r, cell(0, r), count, linear_, hs.in, hs.scores);
  };
  const auto tasks = uint32_t(pools_.size() * n);
  if (int8_numerics_) {
    pool_->run(tasks, [&](uint32_t task, uint32_t t) { head_row(task, t); });
  } else {
    for (uint32_t task = 0; task < tasks; ++task) head_row(task, 0);
  }
}

size_t Forward::bytes() const {
  size_t b = ws_.bytes() + linear_.bytes() + last_logits_.capacity() * sizeof(float);
  for (const LayerState& s : layers_) b += s.cache.bytes() + s.q.bytes() + s.k.bytes() + s.v.bytes();
  for (const SiteState& s : sites_) b += s.value.bytes();
  for (const HeadPool& p : pools_) b += p.bytes();
  return b;
}

void Forward::run(const int32_t* tokens, uint32_t count, float* all_logits, std::span<const int32_t> logit_rows) {
  const Weights& w = *w_;
  const Geometry& g = w.g;
  Workspace& ws = ws_;
  if (count == 0 || count > max_chunk_ || pos_ + count > context_) fail("internal: chunk does not fit the state");
  const size_t D = g.D, n = g.n, L = g.L, rows = L + 1;

  // Token history; then per token (on the pool): engram slots, embedding, RoPE tables.
  for (uint32_t c = 0; c < count; ++c) ws.engram.tokens[history_ + c] = tokens[c];
  const double scale = std::sqrt(double(D));
  const uint32_t half = g.dq / 2;
  const bool cells_in_backlog = place_cells(count);
  pool_->run(count, [&](uint32_t c, uint32_t) {
    const int32_t* tok = ws.engram.tokens.data() + history_ + c;
    if (!w.sites.empty()) engram_slots(g, tok, pos_ + c, ws.engram.slots.data() + size_t(c) * g.E);
    float* x0 = cell(c, 0);
    linear_.row(w.embedding, uint32_t(*tok), x0);
    scale_by(x0, scale, D);
    for (size_t j = 0; j < n; ++j) std::memcpy(ws.mhc.lanes.data() + (size_t(c) * n + j) * D, x0, D * sizeof(float));
    for (uint32_t i = 0; i < half; ++i) {
      const double angle = double(pos_ + c) * w.rope_freq[i];
      ws.attention.rope_cos[size_t(c) * half + i] = float(std::cos(angle));
      ws.attention.rope_sin[size_t(c) * half + i] = float(std::sin(angle));
    }
  });

  struct JoinOnExit {  // no background task outlives the run (an exception)
    ThreadPool& pool;
    ~JoinOnExit() { pool.join(); }
  } join_on_exit{*pool_};
  launch_engram(0, count);
  launch_engram(1, count);
  for (uint32_t l = 0; l < g.L; ++l) layer(l, count);

  // x = final_norm(mean of lanes) (= the last cell); logits = embedding[0:out_rows] · x.
  const uint32_t first = all_logits != nullptr ? 0 : count - 1;
  Workspace::Output& out = ws.output;
  linear_.load(out.x_prepared, g.D, count - first, [&](uint32_t i, uint32_t, float* dst) {
    zc_norm(int8_numerics_, cell(first + i, L), w.final_norm.data(), D, dst);
  });
  // Straight into the caller's rows, or into last_logits_ (no chunk-sized
  // logits buffer: 32 KiB per token of max_chunk on needle3).
  float* const y = all_logits != nullptr ? all_logits : last_logits_.data();
  if (logit_rows.empty() || all_logits != nullptr) {
    linear_.apply(out.x_prepared, w.embedding, 0, g.out_rows, y, g.out_rows);
  } else {
    // A row's logit does not depend on the range it is computed in, so each
    // run of consecutive ids is one product.
    std::fill(last_logits_.begin(), last_logits_.end(), -std::numeric_limits<float>::infinity());
    for (size_t i = 0; i < logit_rows.size();) {
      size_t j = i + 1;
      while (j < logit_rows.size() && logit_rows[j] == logit_rows[j - 1] + 1) ++j;
      linear_.apply(out.x_prepared, w.embedding, uint32_t(logit_rows[i]), uint32_t(logit_rows[j - 1]) + 1, y,
                    g.out_rows);
      i = j;
    }
  }
  if (all_logits != nullptr) {
    std::memcpy(last_logits_.data(), all_logits + size_t(count - 1) * g.out_rows, g.out_rows * sizeof(float));
  }
  has_logits_ = true;

  if (cells_in_backlog) {
    backlog_tokens_ += count;
  } else if (fold_as_written_) {
    fold_rows(uint32_t(rows) / kFoldRows * kFoldRows, uint32_t(rows), count);  // the last group's rows
    for (HeadPool& p : pools_) p.add_tokens(count);
  }
  if (keep_cells_) {
    for (uint32_t c = 0; c < count; ++c) {
      for (size_t r = 0; r < rows; ++r) kept_cells_.insert(kept_cells_.end(), cell(c, r), cell(c, r) + D);
    }
  }

  // Slide the token history.
  if (history_ > 0) std::memmove(ws.engram.tokens.data(), ws.engram.tokens.data() + count, history_ * sizeof(int32_t));
  pos_ += count;
}

void Forward::layer(uint32_t l, uint32_t count) {
  const Weights& w = *w_;
  const Geometry& g = w.g;
  const LayerWeights& lw = w.layers[l];
  Workspace::Mhc& mhc = ws_.mhc;
  Workspace::Engram& eg = ws_.engram;
  Workspace::Attention& att = ws_.attention;
  Workspace::Mlp& mlp = ws_.mlp;
  const size_t D = g.D, n = g.n, L = g.L, nD = n * D;

  // mHC: one rms-normalised concat of the lanes, read by the three Φ matrices.
  // Per-token work runs over the pool by token (each token's values are computed
  // by the same operations whichever thread runs it).
  ThreadPool& pool = *pool_;
  const bool engram_launched = lw.site >= 0 && engram_task_.site == lw.site;
  if (lw.site >= 0 && !engram_launched) engram_prefetch(w.sites[uint32_t(lw.site)], g, eg.slots.data(), count);
  linear_.load(mhc.lanes_rms_prepared, uint32_t(nD), count,
               [&](uint32_t c, uint32_t, float* dst) { rms(int8_numerics_, mhc.lanes.data() + c * nD, nD, dst); });
  const auto ln = uint32_t(l * n), lnn = uint32_t(l * n * n);
  linear_.apply_small(mhc.lanes_rms_prepared,
                      {{&w.phi_pre, ln, ln + uint32_t(n), mhc.phi_pre.data(), L * n},
                       {&w.phi_post, ln, ln + uint32_t(n), mhc.phi_post.data(), L * n},
                       {&w.phi_res, lnn, lnn + uint32_t(n * n), mhc.phi_res.data(), L * n * n}});
  pool.run((count + kMhcTokens - 1) / kMhcTokens, [&](uint32_t b, uint32_t) {
    const uint32_t c0 = b * kMhcTokens, c1 = std::min(count, c0 + kMhcTokens);
    MhcToken tokens[kMhcTokens];
    for (uint32_t c = c0; c < c1; ++c) {
      tokens[c - c0] = {mhc.phi_pre.data() + c * L * n + l * n,
                        mhc.phi_post.data() + c * L * n + l * n,
                        mhc.phi_res.data() + c * L * n * n + l * n * n,
                        {mhc.hpre.data() + c * n, mhc.hpost.data() + c * n, mhc.mix.data() + c * n * n}};
    }
    mhc_coefficients(w, l, tokens, c1 - c0, int8_numerics_);
    for (uint32_t c = c0; c < c1; ++c) {
      float* u = mhc.block.data() + c * D;
      mhc_pre(uint32_t(n), uint32_t(D), mhc.lanes.data() + c * nD, mhc.hpre.data() + c * n, u, int8_numerics_, isa_);
      std::memcpy(mhc.block_in.data() + c * D, u, D * sizeof(float));
    }
  });

  // Block_l(u): the engram update (at a site), then a = norm(u; norm_in).
  if (engram_launched) {
    pool.join();
    engram_task_.site = -1;
  } else if (lw.site >= 0) {
    engram(uint32_t(lw.site), count);
  }
  // (a is prepared here for q/k/v/gate, in the same pool job.)
  // (At a site, each token's value conv row is computed here too, on the pool.)
  CausalConv* conv = lw.site >= 0 ? &sites_[uint32_t(lw.site)].value : nullptr;
  const float* taps = lw.site >= 0 ? w.sites[uint32_t(lw.site)].taps.data() : nullptr;
  linear_.load(att.input_prepared, g.D, count, [&](uint32_t c, uint32_t, float* dst) {
    float* u = mhc.block.data() + c * D;
    if (conv != nullptr) {
      conv->rows(taps, c, 0, g.D, eg.value.data() + c * D);
      engram_update(u, eg.key.data() + c * D, eg.value.data() + c * D, g.D);
    }
    zc_norm(int8_numerics_, u, lw.norm_in.data(), D, dst);
  });
  if (conv != nullptr) conv->slide(count);
  attention(l, count);
  // After this layer's last pool job: the worker has this layer's MLP and
  // the next layer's float work to compute the site two layers on.
  launch_engram(l + 2, count);

  // Per block of tokens: each token's attention residual and pre_hada norm, the
  // Hadamard MLP of the whole block in one call (the layer's factors stay in
  // cache from token to token), then each token's MLP residual and lane mixing.
  // A token's values do not depend on the blocking or the thread.
  pool.run((count + kMlpBlock - 1) / kMlpBlock, [&](uint32_t b, uint32_t t) {
    const uint32_t c0 = b * kMlpBlock, c1 = std::min(count, c0 + kMlpBlock);
    for (size_t c = c0; c < c1; ++c) {
      float* u = mhc.block.data() + c * D;
      float* m = mlp.input.data() + c * D;
      zc_norm(int8_numerics_, att.out.data() + c * D, lw.post_norm.data(), D, m);
      add_scaled(u, lw.attn_gate_sigmoid, m, D);
      zc_norm(int8_numerics_, u, lw.pre_hada.data(), D, m);
    }
    float* m0 = mlp.input.data() + c0 * D;
    float* out0 = mlp.out.data() + c0 * D;
    if (int8_numerics_) {
      hadamard_mlp<float>(w, l, untied_, m0, D, c1 - c0, out0, D, mlp.scratch[t], isa_);
    } else {
      hadamard_mlp<double>(w, l, untied_, m0, D, c1 - c0, out0, D, mlp.scratch[t], isa_);
    }
    for (size_t c = c0; c < c1; ++c) {
      float* u = mhc.block.data() + c * D;
      const float* mlp_out = mlp.out.data() + c * D;
      add_scaled(u, 1.0f, mlp_out, D);
      // X'[i] = Σ_j P[i,j] X[j] + hpost[i] · (Block(u) - u); cell l+1 = mean of the lanes.
      mhc_post(uint32_t(n), uint32_t(D), mhc.lanes.data() + c * nD, mhc.mix.data() + c * n * n,
               mhc.hpost.data() + c * n, u, mhc.block_in.data() + c * D, cell(c, l + 1), int8_numerics_, isa_);
    }
  });
  // Cell row l+1 is written: fold the group of rows that it completes.
  if (fold_as_written_ && (l + 2) % kFoldRows == 0) fold_rows(l + 2 - kFoldRows, l + 2, count);
}

void Forward::launch_engram(uint32_t layer, uint32_t count) {
  if (layer >= w_->g.L || w_->layers[layer].site < 0 || engram_task_.site >= 0 || count != 1 || !int8_numerics_ ||
      pool_->size() < 2) {
    return;
  }
  engram_task_.site = w_->layers[layer].site;
  pool_->launch(engram_task_);
}

void Forward::engram(uint32_t site, uint32_t count, bool here) {
  const Weights& w = *w_;
  const Geometry& g = w.g;
  const SiteWeights& sw = w.sites[site];
  Workspace::Engram& ws = ws_.engram;
  const size_t D = g.D, width = size_t(g.E) * g.sd;
  const auto gather = [&](uint32_t c, uint32_t, float* dst) {
    engram_gather(sw, g, ws.slots.data() + size_t(c) * g.E, linear_, dst);
  };
  // The value conv's rows are computed by layer() (with the per-token norm).
  const LinearJob key{&sw.key_proj, 0, sw.key_proj.out, ws.key.data(), D};
  const LinearJob value{&sw.value_proj, 0, sw.value_proj.out, sites_[site].value.input(count, ws.value_window.data()),
                        D};
  if (!here) {
    linear_.load(ws.rows_prepared, uint32_t(width), count, gather);
    linear_.apply_many(ws.rows_prepared, {key, value});
    return;
  }
  gather(0, 0, ws.rows.data());
  linear_.load_here(ws.rows_prepared, ws.rows.data(), uint32_t(width), 1);
  for (const LinearJob& j : {key, value}) {
    linear_.apply_here(ws.rows_prepared, *j.m, j.row_begin, j.row_end, j.y, j.y_stride);
  }
}

}  // namespace cact::engine
