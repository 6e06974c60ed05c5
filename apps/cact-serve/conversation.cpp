// answer_request (conversation.h).
#include "conversation.h"

#include <random>

#include "errors.h"

namespace cact::serve {

namespace {

chat::GenerateOptions with_seed(const chat::openai::ChatRequest& request) {
  chat::GenerateOptions options = request.options;
  if (!request.seed_given && options.sampler.temperature > 0.0f) {
    std::random_device rd;
    options.sampler.seed = (uint64_t(rd()) << 32) ^ uint64_t(rd());
  }
  return options;
}

// Put the request's conversation (before its last turn) on the session.
void prepare(chat::ChatSession& chat, SlotFit fit, const chat::openai::ChatRequest& request) {
  if (fit == SlotFit::conversation) return;  // the session holds it already
  if (!request.history.empty()) {
    chat.load({request.system, request.tools, request.history});
  } else if (fit == SlotFit::prefix) {
    chat.reset();  // keeps the tool constraint, which set_tools would rebuild
  } else {
    chat.set_system(request.system);
    chat.set_tools(request.tools);
  }
}

// Template tokens around one turn's text: markers, role words and newlines.
constexpr uint32_t kTurnFrame = 8;

}  // namespace

void check_fits(const Tokenizer& tok, const chat::openai::ChatRequest& request, uint32_t context) {
  uint64_t needed = chat::openai::prefix_tokens(tok, request.system, request.tools);
  const uint64_t prefix = needed;
  for (const chat::Turn& t : request.next) needed += tok.encode_data(t.content, false).size() + kTurnFrame;
  if (needed + 1 > context) {
    throw HttpError(400,
                    "messages: the system text and tools (" + std::to_string(prefix) + " tokens) and the last turn (" +
                        std::to_string(needed - prefix) + " tokens) do not fit the context of " +
                        std::to_string(context) + " positions",
                    "messages", "context_length_exceeded");
  }
}

Outcome answer_request(chat::ChatSession& chat, SlotFit fit, const chat::openai::ChatRequest& request,
                       const Tokenizer& tok, const chat::OnPiece& on_piece) {
  const chat::GenerateOptions options = with_seed(request);
  Outcome out;
  try {
    const uint64_t hits_before = chat.prefix_cache_hits();
    const uint32_t held = fit == SlotFit::conversation ? chat.position() : 0;
    prepare(chat, fit, request);
    const bool replay_hit = chat.prefix_cache_hits() > hits_before;
    if (request.next.front().role == chat::Turn::Role::user) {
      out.answer = chat.ask(request.next.front().content, options, on_piece);
    } else {
      std::vector<std::string> results;
      for (const chat::Turn& t : request.next) results.push_back(t.content);
      out.answer = chat.tool_results(results, options, on_piece);
    }
    const chat::Answer& a = out.answer;
    out.usage.completion = uint32_t(a.ids.size());
    out.usage.prompt = chat.position() - out.usage.completion;
    // Dropping turns to make room restarts the session behind the prefix: only that restart counts.
    out.usage.cached = a.cached_tokens;
    if (a.dropped_turns == 0) {
      out.usage.cached += held;
      if (replay_hit) out.usage.cached += chat::openai::prefix_tokens(tok, request.system, request.tools);
    }
  } catch (...) {
    chat.reset();
    throw;
  }
  return out;
}

}  // namespace cact::serve
