#pragma once
// What the C API's opaque handles hold (docs/API.md "Lifecycle"). A handle
// made from another shares ownership of what it needs (a session keeps its
// engine, an engine its model), so the caller may free them in any order.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "cact/cact.h"
#include "cact/chat.h"
#include "cact/engine.h"
#include "cact/error.h"
#include "cact/model.h"
#include "cact/sampler.h"
#include "cact/tokenizer.h"
#include "capi/guard.h"

namespace cact::capi {

struct FreeBytes {
  void operator()(uint8_t* p) const { std::free(p); }
};

// A checked archive and, when it came from a copied buffer, that copy.
struct ModelData {
  ModelData(std::unique_ptr<uint8_t, FreeBytes> bytes, Model m) : copy(std::move(bytes)), model(std::move(m)) {}
  std::unique_ptr<uint8_t, FreeBytes> copy;
  Model model;
};

// An Engine and the model it reads (declared first: released last).
struct EngineData {
  EngineData(std::shared_ptr<const ModelData> m, EngineOptions o) : model(std::move(m)), engine(model->model, o) {}
  std::shared_ptr<const ModelData> model;
  Engine engine;
};

}  // namespace cact::capi

struct cact_model {
  std::shared_ptr<const cact::capi::ModelData> data;
};

struct cact_engine {
  std::shared_ptr<const cact::capi::EngineData> data;
};

struct cact_tokenizer {
  std::shared_ptr<const cact::Tokenizer> tok;
};

struct cact_session {
  cact_session(std::shared_ptr<const cact::capi::EngineData> e, const cact::SessionOptions& o)
      : engine(std::move(e)), session(engine->engine, o) {}
  std::shared_ptr<const cact::capi::EngineData> engine;
  cact::Session session;
  mutable cact::capi::ErrorText error;  // also written by the calls that only read the session
};

struct cact_sampler {
  explicit cact_sampler(const cact::SamplerOptions& o) : sampler(o) {}
  cact::Sampler sampler;
  mutable cact::capi::ErrorText error;
};

struct cact_chat {
  cact_chat(std::shared_ptr<const cact::capi::EngineData> e, std::shared_ptr<const cact::Tokenizer> t,
            const cact::chat::ChatOptions& o)
      : engine(std::move(e)), tok(std::move(t)), chat(engine->engine, *tok, o) {}
  std::shared_ptr<const cact::capi::EngineData> engine;
  std::shared_ptr<const cact::Tokenizer> tok;
  cact::chat::ChatSession chat;
  mutable cact::capi::ErrorText error;
  bool generating = false;  // inside ask / tool_results: a call from the piece callback is refused
};

struct cact_answer {
  cact::chat::Answer answer;
  std::string json;  // the envelope, made once
};
