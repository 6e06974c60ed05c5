#pragma once
// The Needle 3 inference engine (MODEL.md): an Engine holds the prepared,
// read-only view of one archive (CQ matrices stay in the mapped file); a
// Session is one decoding state (KV cache, conv rings, token history, probe
// pooling) sized once when it is made. Two numerics share one forward pass:
//   - Numerics::reference: float, CQ rows dequantised on the fly, float KV cache;
//   - Numerics::int8: CQ-W2A8 through a kernels::KernelTable, KV cache at the
//     archive's kv_bits (int8 or CQ 2/3/4).
// Numerics, state layout and the sinks/context policy: docs/ENGINE.md.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cact/canon.h"
#include "cact/kernels.h"
#include "cact/model.h"

namespace cact {

enum class Numerics : uint8_t { reference, int8 };
const char* numerics_name(Numerics n);  // "float", "int8"

struct EngineOptions {
  Numerics numerics = Numerics::int8;
  // Kernel table of the int8 path; nullptr = kernels::best_kernels().
  const kernels::KernelTable* kernels = nullptr;
};

class Engine;
namespace engine {
struct Weights;  // private to libcact/src/engine
// The engine's prepared view, for libcact/src/engine (and its white-box tests) only.
const Weights& weights_of(const Engine& e);
}  // namespace engine

class Engine {
 public:
  // `model` must outlive the Engine; the Engine must outlive (and stay where it
  // is while there are) the Sessions made from it.
  explicit Engine(const Model& model, EngineOptions options = {});
  ~Engine();
  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const Model& model() const { return *model_; }
  const Header& header() const { return model_->header(); }
  Numerics numerics() const { return numerics_; }
  const kernels::KernelTable& kernels() const { return *kernels_; }
  bool has_head(HeadKind kind) const;
  // Logit rows (out_vocab, or vocab when out_vocab is 0).
  uint32_t output_rows() const { return header().output_rows(); }

 private:
  friend const engine::Weights& engine::weights_of(const Engine& e);
  const Model* model_;
  Numerics numerics_;
  const kernels::KernelTable* kernels_;
  std::unique_ptr<engine::Weights> weights_;
};

struct SessionOptions {
  // Positions a session can hold (prompt + generated); 0 = the archive's max_seq_len.
  uint32_t context = 0;
  // Leading positions that stay visible through the kv_window span ("sinks",
  // e.g. the tool list). Only meaningful when a kv_window applies.
  uint32_t sinks = 0;
  // Attention span when the archive's kv_window is 0 ("size from memory
  // budget"); 0 = the whole context. An archive with kv_window > 0 fixes the
  // span: a different non-zero value here is refused.
  uint32_t kv_window = 0;
  // Tokens per forward call during prefill; the state is sized for it.
  uint32_t max_chunk = 48;
  // Threads of this session's pool (the caller plus threads-1 workers); 0 = the
  // hardware concurrency. Results do not depend on it.
  uint32_t threads = 0;
  // Keep every token's cells ((L+1) x D floats per token), for tests and tools.
  bool keep_cells = false;
};

class Session {
 public:
  Session(const Engine& engine, SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Forget every token (the state is kept, nothing is reallocated).
  void reset();
  // Become a copy of `other`'s decoding state (a snapshot restored: the next
  // tokens give exactly the logits `other` would give). `other` must come from
  // the same Engine with the same options; throws cact::Error otherwise.
  void copy_state_from(const Session& other);
  // Feed tokens (in chunks of max_chunk, layer-major within a chunk) and
  // return the logits after the last one. Throws cact::Error, before any state
  // changes, if the tokens do not fit the context or an id is out of range.
  std::span<const float> prefill(std::span<const int32_t> tokens);
  // Same, but computes only the logits of `rows` (ascending, distinct ids below
  // output_rows()), each the same bits as prefill()'s; the others read
  // -infinity, so argmax and sampling choose among `rows` as they would after
  // prefill() with the others masked out. For a decoder that knows which ids
  // may come next (a grammar). Throws cact::Error, before any state changes,
  // on an empty or malformed row list.
  std::span<const float> prefill(std::span<const int32_t> tokens, std::span<const int32_t> rows);
  // Same, but returns the logits of every fed token ([n][output_rows]).
  std::vector<float> prefill_all(std::span<const int32_t> tokens);
  // Feed one token; returns its logits.
  std::span<const float> step(int32_t token);
  // Logits of the last fed token (empty before the first).
  std::span<const float> logits() const;
  // True once the logits after some feed held a NaN or an infinity (an archive
  // whose values overflow): what was generated from them is meaningless.
  bool nonfinite_logits() const;

  uint32_t position() const;  // tokens fed so far
  uint32_t context() const;   // positions this session can hold
  uint32_t remaining() const { return context() - position(); }
  uint32_t sinks() const;    // pinned prefix actually in effect (0 without a span)
  uint32_t kv_span() const;  // kv_window in effect (0 = none)
  const Engine& engine() const;

  // Probe heads over every token fed since reset (MODEL.md "Probe heads").
  bool has_head(HeadKind kind) const;
  // The head's `out` vector; throws cact::Error if the archive lacks the head
  // or no token was fed.
  std::vector<float> head_output(HeadKind kind) const;
  // σ(out[0]) of the confidence head.
  float confidence() const;

  // Cells of every token since reset, [t][L+1][D] (needs keep_cells).
  std::span<const float> cells() const;
  // Bytes of state this session allocated (KV cache, rings, scratch).
  size_t state_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cact
