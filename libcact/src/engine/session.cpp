// Engine (prepared weights + numerics) and Session (decoding state): the public
// shell around engine::Forward, with the context and token-id checks.
#include <algorithm>
#include <cmath>
#include <string>

#include "base/cpu_features.h"
#include "cact/engine.h"
#include "cact/error.h"
#include "engine/forward.h"
#include "engine/weights.h"

namespace cact {

const char* numerics_name(Numerics n) { return n == Numerics::reference ? "float" : "int8"; }

namespace {
// An unknown CACT_ISA fails here, whichever table the caller chose.
const kernels::KernelTable* kernels_of(const EngineOptions& options) {
  cpu_features();
  return options.kernels != nullptr ? options.kernels : &kernels::best_kernels();
}
}  // namespace

Engine::Engine(const Model& model, EngineOptions options)
    : model_(&model),
      numerics_(options.numerics),
      kernels_(kernels_of(options)),
      weights_(std::make_unique<engine::Weights>(engine::load_weights(model))) {}

Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

bool Engine::has_head(HeadKind kind) const { return weights_->head(kind) != nullptr; }

const engine::Weights& engine::weights_of(const Engine& e) { return *e.weights_; }

struct Session::Impl {
  Impl(const Engine& e, const SessionOptions& o) : engine(&e), forward(e, o) {}
  const Engine* engine;
  engine::Forward forward;
  bool nonfinite = false;  // sticky: some logits held NaN or inf

  void check(std::span<const int32_t> tokens) const {
    const uint32_t vocab = engine->header().vocab;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i] < 0 || uint32_t(tokens[i]) >= vocab) {
        fail("token id " + std::to_string(tokens[i]) + " (input " + std::to_string(i) +
             ") is outside the vocabulary of " + std::to_string(vocab));
      }
    }
    const uint64_t end = uint64_t(forward.position()) + tokens.size();
    if (end > forward.context()) {
      if (forward.position() == 0) {
        fail("prompt of " + std::to_string(tokens.size()) + " tokens does not fit the context of " +
             std::to_string(forward.context()) + " positions");
      }
      fail("the context of " + std::to_string(forward.context()) + " positions is full (" +
           std::to_string(forward.position()) + " used, " + std::to_string(tokens.size()) + " more requested)");
    }
  }

  void check_rows(std::span<const int32_t> rows) const {
    const uint32_t out_rows = engine->output_rows();
    bool ok = !rows.empty();
    for (size_t i = 0; ok && i < rows.size(); ++i) {
      ok = rows[i] >= 0 && uint32_t(rows[i]) < out_rows && (i == 0 || rows[i] > rows[i - 1]);
    }
    if (!ok) fail("logit rows must be a non-empty ascending list of distinct ids below " + std::to_string(out_rows));
  }

  // `rows` empty: every logit.
  void feed(std::span<const int32_t> tokens, float* all_logits, size_t stride, std::span<const int32_t> rows = {}) {
    check(tokens);
    size_t done = 0;
    while (done < tokens.size()) {
      const uint32_t n = uint32_t(std::min<size_t>(forward.max_chunk(), tokens.size() - done));
      forward.run(tokens.data() + done, n, all_logits != nullptr ? all_logits + done * stride : nullptr, rows);
      done += n;
    }
    // A scan of the last logits per feed: a vocabulary of floats, small next to the forward pass.
    if (!nonfinite && forward.has_logits()) {
      const std::vector<float>& logits = forward.last_logits();
      auto finite = [&](float v) { return std::isfinite(v); };
      if (rows.empty()) {
        nonfinite = !std::all_of(logits.begin(), logits.end(), finite);
      } else {
        nonfinite = !std::all_of(rows.begin(), rows.end(), [&](int32_t r) { return finite(logits[size_t(r)]); });
      }
    }
  }
};

Session::Session(const Engine& engine, SessionOptions options) : impl_(std::make_unique<Impl>(engine, options)) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

void Session::reset() { impl_->forward.reset(); }

void Session::copy_state_from(const Session& other) {
  if (&other == this) return;
  impl_->forward.copy_state(other.impl_->forward);
  impl_->nonfinite = other.impl_->nonfinite;
}

std::span<const float> Session::prefill(std::span<const int32_t> tokens) {
  impl_->feed(tokens, nullptr, 0);
  return logits();
}

std::span<const float> Session::prefill(std::span<const int32_t> tokens, std::span<const int32_t> rows) {
  impl_->check_rows(rows);
  impl_->feed(tokens, nullptr, 0, rows);
  return logits();
}

std::vector<float> Session::prefill_all(std::span<const int32_t> tokens) {
  const size_t rows = impl_->engine->output_rows();
  impl_->check(tokens);
  std::vector<float> all(tokens.size() * rows);
  impl_->feed(tokens, all.data(), rows);
  return all;
}

std::span<const float> Session::step(int32_t token) {
  impl_->feed({&token, 1}, nullptr, 0);
  return logits();
}

std::span<const float> Session::logits() const {
  if (!impl_->forward.has_logits()) return {};
  return impl_->forward.last_logits();
}

bool Session::nonfinite_logits() const { return impl_->nonfinite; }

uint32_t Session::position() const { return impl_->forward.position(); }
uint32_t Session::context() const { return impl_->forward.context(); }
uint32_t Session::sinks() const { return impl_->forward.visibility().sinks; }
uint32_t Session::kv_span() const { return impl_->forward.visibility().span; }
const Engine& Session::engine() const { return *impl_->engine; }

bool Session::has_head(HeadKind kind) const { return impl_->engine->has_head(kind); }

std::vector<float> Session::head_output(HeadKind kind) const {
  const engine::HeadPool* pool = impl_->forward.pool(kind);
  if (pool == nullptr) fail(std::string("this archive has no ") + head_kind_name(kind) + " head");
  const Engine& e = *impl_->engine;
  engine::Linear linear(engine::weights_of(e), e.numerics(), e.kernels());
  return pool->output(linear);
}

float Session::confidence() const {
  const std::vector<float> out = head_output(HeadKind::confidence);
  return float(1.0 / (1.0 + std::exp(-double(out.at(0)))));
}

std::span<const float> Session::cells() const { return impl_->forward.kept_cells(); }

size_t Session::state_bytes() const { return impl_->forward.bytes(); }

}  // namespace cact
