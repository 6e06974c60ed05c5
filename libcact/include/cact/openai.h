#pragma once
// OpenAI's chat completions protocol on the chat layer (docs/SERVE.md "The
// request mapping"): a request body becomes the conversation's system text,
// tool list, the turns so far and the turn to answer, plus GenerateOptions; an
// Answer becomes the assistant message and finish_reason. HTTP, streaming
// framing and ids are the caller's (apps/cact-serve).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cact/chat.h"
#include "cact/error.h"
#include "cact/json_input.h"
#include "cact/tokenizer.h"
#include "cact/tools.h"

namespace cact::chat::openai {

// A request the mapping refuses. `param` is the path of the field at fault
// ("messages[2].tool_calls[0].function.name", "tools", "temperature"); the
// message starts with it.
class RequestError : public Error {
 public:
  RequestError(std::string param, const std::string& message);
  const std::string& param() const { return param_; }

 private:
  std::string param_;
};

struct RequestLimits {
  size_t max_messages = 256;          // messages in one request
  uint32_t max_tokens = 1024;         // the most max_tokens may ask for
  uint32_t default_max_tokens = 256;  // when the request gives none
  size_t max_stop_strings = 4;        // as OpenAI
  size_t max_stop_bytes = 256;        // per stop string
};

struct ChatRequest {
  std::string model;  // as given ("" when absent)
  std::string system;
  ToolList tools;
  // The conversation before the turn to answer: empty, or from a user turn to
  // an assistant turn (assistant text in the Needle form, assistant_text()).
  std::vector<Turn> history;
  // What the answer responds to: one user turn, or the tool results of the
  // last assistant turn's calls (in call order, whatever order they came in).
  std::vector<Turn> next;
  GenerateOptions options;  // sampler.seed is meaningful only when seed_given
  bool seed_given = false;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

// Maps a parsed request body (parse_json_limited) or throws RequestError.
// `marker_surfaces`: the chat markers of the archive's tokenizer
// (marker_surfaces()); an assistant message that spells one is refused, since
// assistant text is replayed as markup.
ChatRequest parse_chat_request(const Json& body, const RequestLimits& limits,
                               const std::vector<std::string>& marker_surfaces);

// The USER_DEFINED piece surfaces of a tokenizer (<|im_end|>, <tool_call>, ...).
std::vector<std::string> marker_surfaces(const Tokenizer& tok);

// An assistant message in the form the model writes it:
// "<think>{reasoning}</think>\n" (when there is reasoning), the text, and the
// calls as one "<tool_call>[{"name":...,"arguments":{...}},...]</tool_call>"
// block (after a newline when there is text).
std::string assistant_text(std::string_view reasoning, std::string_view content, const std::vector<Call>& calls);

// Tokens of the conversation prefix (bos, system turn, tool list) of this
// system text and tool list: what the prefix cache restores.
uint32_t prefix_tokens(const Tokenizer& tok, std::string_view system, const ToolList& tools);

// "tool_calls" when the answer made a valid call, "length" when it ran out of
// max_tokens or context, else "stop".
const char* finish_reason(const Answer& answer);

// The assistant message of a completion: role, content (null when the answer
// is only calls), reasoning_content (when the answer reasoned), tool_calls
// (valid calls only; call_ids[i] is the id of function_calls[i]).
Json assistant_message(const Answer& answer, const std::vector<std::string>& call_ids);

}  // namespace cact::chat::openai
