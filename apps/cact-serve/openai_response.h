#pragma once
// Responses of /v1/chat/completions (docs/SERVE.md "Responses"): the
// chat.completion object, the chat.completion.chunk objects of a stream, and
// the split of the streamed answer into content and reasoning deltas.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cact/json_input.h"
#include "conversation.h"
#include "slots.h"

namespace cact::serve {

// What every object of one response shares.
struct ResponseHead {
  std::string id;  // "chatcmpl-..."
  int64_t created = 0;
  std::string model;
};
ResponseHead new_response_head(std::string model);
// "call_" + 24 random letters and digits, one per call.
std::vector<std::string> new_call_ids(size_t count);

// Where the request ran, for the `cact` extension object.
struct SlotReport {
  size_t slot = 0;
  SlotFit fit = SlotFit::none;
  double queue_ms = 0.0;
};

Json usage_json(const Usage& usage);
// The chat layer's answer envelope (cact-answer/1) plus the server's view:
// slot, what it held, time in the queue, cached tokens.
Json cact_extension(const Outcome& outcome, const SlotReport& slot);
// The whole chat.completion object.
Json completion_json(const ResponseHead& head, const Outcome& outcome, const std::vector<std::string>& call_ids,
                     const SlotReport& slot);

// One chat.completion.chunk with one choice; `finish_reason` null until the last.
Json chunk_json(const ResponseHead& head, Json delta, Json finish_reason = nullptr);
// The usage chunk of stream_options.include_usage (no choices).
Json usage_chunk_json(const ResponseHead& head, const Usage& usage);
// The deltas of the valid calls: per call one chunk with id, type, name and
// empty arguments, then one with the arguments.
std::vector<Json> tool_call_chunks(const ResponseHead& head, const chat::Answer& answer,
                                   const std::vector<std::string>& call_ids);
// One server-sent event.
std::string sse_event(const Json& data);

// Splits streamed answer text the way chat::parse_answer splits the whole:
// <think> bodies are reasoning, <tool_call> blocks are held back (their calls
// go out as tool-call deltas once validated), the rest is content without its
// leading and trailing newlines. The concatenated deltas equal the
// non-streamed message's content and reasoning_content.
class StreamSplitter {
 public:
  struct Delta {
    std::string content, reasoning;
    bool empty() const { return content.empty() && reasoning.empty(); }
  };
  Delta push(std::string_view piece);
  Delta finish();

 private:
  enum class Where : uint8_t { text, think, call };
  void take_text(std::string_view text, Delta& out);
  void scan(bool final, Delta& out);
  std::string pending_;  // not yet sent: a possible marker's start, or an open call block
  Where where_ = Where::text;
  bool content_started_ = false;  // a non-newline content byte went out
  std::string held_newlines_;     // trailing newlines, sent only if more content follows
};

}  // namespace cact::serve
