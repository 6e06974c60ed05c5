#pragma once
// The chat / tool-calling layer (docs/CHAT.md, docs/TOOLS.md): a conversation in
// the Needle chat format (TOKENIZER.md) on one engine Session. Each turn appends
// only its new tokens; the system + tools prefix is prefilled once per distinct
// prefix and restored from a snapshot for every later conversation that starts
// with it (the prefix cache); answers are decoded under the tool-call
// constraint and come back parsed and validated.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cact/engine.h"
#include "cact/sampler.h"
#include "cact/tokenizer.h"
#include "cact/tools.h"

namespace cact::chat {

struct GenerateOptions {
  uint32_t max_tokens = 256;
  SamplerOptions sampler;
  std::vector<std::string> stop;  // stop strings: generation ends before the first match
  ToolChoice tool_choice;
  bool constrain = true;  // schema-constrained tool calls when tools are listed
  // false: ids the constraint forces share a forward call with the id before
  // them, and a feed computes only the logits of the ids allowed next when
  // they are few (the answer is the same). true: one decode step with every
  // logit per id, before its piece reaches OnPiece (for callers that read
  // Session::logits() there, as cact-golden does).
  bool every_step_logits = false;
};

enum class StopReason : uint8_t { eos, im_end, max_tokens, context, stop_string, suppressed_call, cancelled };
const char* stop_reason_name(StopReason s);  // "eos", "im_end", ...

struct SuppressedCall {
  std::string name;
  std::string reason;
};

struct Answer {
  std::string raw;  // the answer's text as decoded (markers as their surfaces), without the stop
  ParsedAnswer parsed;
  std::vector<Call> function_calls;   // the calls that validate
  std::vector<CallCheck> validation;  // one per parsed call, in order (ok or what is wrong)
  std::vector<SuppressedCall> suppressed_calls;
  std::vector<int32_t> ids;  // generated ids (the stop token excluded)
  // Of those, ids the constraint forced (it allowed no other): fed with the id
  // before them in one forward call, not one decode step each.
  uint32_t forced_tokens = 0;
  StopReason stop = StopReason::max_tokens;
  uint32_t prompt_tokens = 0;  // tokens prefilled for this turn
  uint32_t cached_tokens = 0;  // prefix tokens restored from the prefix cache instead
  uint32_t dropped_turns = 0;  // turns dropped from the front to make room (context policy)
  double prefill_seconds = 0.0, decode_seconds = 0.0;
  uint64_t seed = 0;  // the sampler's seed
  std::optional<float> confidence;
};

// One message of a conversation, as a transcript keeps it.
struct Turn {
  enum class Role : uint8_t { user, tool, assistant };
  Role role = Role::user;
  std::string content;       // user query, tool result JSON, or the assistant's raw text
  std::vector<int32_t> ids;  // assistant: the generated ids (exact replay)
};

// Per generated token: the text it completed (may be empty). Return false to
// stop generation (the answer then ends with StopReason::cancelled).
using OnPiece = std::function<bool(std::string_view text)>;

// A saved conversation (docs/CHAT.md "Transcript"): what ChatSession's
// transcript_json() writes and load() resumes.
struct Transcript {
  std::string system;
  ToolList tools;
  std::vector<Turn> turns;
};
// Throws cact::Error starting with `origin` when the text is not a transcript.
Transcript parse_transcript(std::string_view json_text, std::string_view origin);

struct ChatOptions {
  SessionOptions session;  // context 0 = the archive's max_seq_len; sinks is set from the prefix
  bool prefix_cache = true;
};

class ChatSession {
 public:
  // `engine` and `tok` must outlive the ChatSession.
  ChatSession(const Engine& engine, const Tokenizer& tok, ChatOptions options = {});
  ~ChatSession();
  ChatSession(ChatSession&&) noexcept;
  ChatSession& operator=(ChatSession&&) noexcept;

  // The conversation's prefix; setting either starts a new conversation.
  void set_system(std::string system);
  void set_tools(ToolList tools);
  const std::string& system() const;
  const ToolList& tools() const;

  // A new conversation with the same prefix (the prefix cache makes it cheap).
  void reset();

  // A user turn (the first carries the tool list), then the answer.
  Answer ask(std::string_view query, const GenerateOptions& options, const OnPiece& on_piece = {});
  // Tool results answering the last answer's calls (one JSON text per call, in
  // call order), then the answer.
  Answer tool_results(const std::vector<std::string>& results, const GenerateOptions& options,
                      const OnPiece& on_piece = {});

  // Replace the conversation by a saved one (system, tools and turns; prefilled
  // at once, assistant turns by their ids when present).
  void load(const Transcript& transcript);
  const std::vector<Turn>& turns() const;

  // The transcript as JSON (docs/CHAT.md "Transcript"): version, system, tools, turns.
  std::string transcript_json() const;

  uint32_t position() const;  // tokens in the session
  uint32_t context() const;
  const Session& session() const;
  uint64_t prefix_cache_hits() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The ids of a conversation's first turn (the system text, the tool list and one
// user query, up to "<|im_start|>assistant\n") as ChatSession::ask feeds them.
// Throws cact::Error when the tokenizer lacks a marker of the chat format.
std::vector<int32_t> render_first_turn(const Tokenizer& tok, std::string_view system, const ToolList& tools,
                                       std::string_view query);

// The answer envelope of docs/TOOLS.md ("schema_version" 1): text, reasoning,
// function_calls, suppressed_calls, validation, confidence, stop, tokens, timings.
std::string answer_json(const Answer& a);

}  // namespace cact::chat
