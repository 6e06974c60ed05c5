#pragma once
// The endpoints (docs/SERVE.md "Endpoints"): /v1/chat/completions,
// /v1/models, /health, /tokenize, /detokenize; the API key check; errors of
// every kind in OpenAI's shape.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "cact/tokenizer.h"
#include "http_server.h"
#include "options.h"
#include "slots.h"

namespace cact::serve {

// Answers given, and answers stopped because their client left (/health).
struct ServeCounters {
  std::atomic<uint64_t> answered{0}, cancelled{0};
};

// What the handlers share; read-only but for the slot pool and the counters (thread-safe).
struct ServeContext {
  const Options* options = nullptr;
  const Tokenizer* tok = nullptr;
  SlotPool* slots = nullptr;
  ServeCounters* counters = nullptr;
  std::string model_id;
  int64_t model_created = 0;         // the archive's modification time
  std::vector<std::string> markers;  // chat::openai::marker_surfaces(tok)
  bool log_requests = true;
};

void install_routes(HttpServer& server, const ServeContext& context);

}  // namespace cact::serve
