#pragma once
// The Needle chat format as token ids (TOKENIZER.md "The Needle chat format").
// The template's own markers become marker ids; everything between them —
// template words and the texts of people and tools alike — is encoded as
// data, so a marker typed by a user stays text.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cact/chat.h"
#include "cact/tokenizer.h"

namespace cact::chat {

// The ids of the markers the template uses; throws cact::Error naming a
// marker the tokenizer lacks.
struct ChatMarkers {
  int32_t bos = -1, eos = -1;
  int32_t im_start = -1, im_end = -1, tools = -1, tools_end = -1, result = -1, result_end = -1;
  // Every USER_DEFINED piece, for text the model wrote (markup, not data).
  std::vector<std::pair<std::string, int32_t>> all;
  explicit ChatMarkers(const Tokenizer& tok);
};

class PromptBuilder {
 public:
  PromptBuilder(const Tokenizer& tok, const ChatMarkers& markers, std::vector<int32_t>& out)
      : tok_(&tok), markers_(&markers), out_(&out) {}
  ~PromptBuilder() { flush(); }
  PromptBuilder(const PromptBuilder&) = delete;
  PromptBuilder& operator=(const PromptBuilder&) = delete;

  PromptBuilder& text(std::string_view s) {
    run_ += s;
    return *this;
  }
  PromptBuilder& marker(int32_t id);
  // Text the model wrote: marker surfaces in it are marker ids.
  PromptBuilder& markup(std::string_view s);
  PromptBuilder& ids(const std::vector<int32_t>& ids);
  // Encode the pending text run now (the builder's destructor does it too).
  void flush();

 private:
  const Tokenizer* tok_;
  const ChatMarkers* markers_;
  std::vector<int32_t>* out_;
  std::string run_;
};

// bos, [system turn], "<|im_start|>user\n<tools>{tools}</tools>": the part of
// every conversation that depends only on the system text and the tool list.
std::vector<int32_t> render_prefix(const Tokenizer& tok, const ChatMarkers& m, std::string_view system,
                                   std::string_view tools_json);

// One turn appended after what the conversation holds. `first` is the user
// turn that follows the prefix; `after_answer` closes the previous answer
// ("<|im_end|>\n") first. Each ends with "<|im_start|>assistant\n".
void render_user_turn(PromptBuilder& b, const ChatMarkers& m, std::string_view query, bool first, bool after_answer);
void render_tool_turn(PromptBuilder& b, const ChatMarkers& m, const std::vector<std::string>& results,
                      bool after_answer);

// turns[from, end) as they follow what the session holds, where the
// conversation after the prefix starts at turns[first] (earlier ones dropped).
// A run of tool turns is one user message with a <tool_result> per turn;
// assistant turns are their ids (or their text as markup when they have none).
void render_turns(PromptBuilder& b, const ChatMarkers& m, const std::vector<Turn>& turns, size_t from, size_t first);

}  // namespace cact::chat
