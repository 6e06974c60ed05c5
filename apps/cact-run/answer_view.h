#pragma once
// How the REPL shows an answer as it streams: the text as is, the reasoning
// (<think>...</think>) dimmed on a colour terminal, the <tool_call> blocks
// held back and shown after the answer as one line per call.
#include <string>
#include <string_view>

#include "cact/chat.h"

namespace cact::run {

class AnswerView {
 public:
  explicit AnswerView(bool color) : color_(color) {}
  // The text to show now for one streamed piece (a marker split across
  // pieces is held until it is whole).
  std::string push(std::string_view piece);
  // The rest, ending the line if the answer did not (`new_line`: in any case,
  // e.g. after the terminal echoed ^C).
  std::string finish(bool new_line = false);

 private:
  std::string take(std::string_view text);
  bool color_;
  std::string held_;
  bool in_call_ = false, in_think_ = false, at_line_start_ = true;
};

// One line per call of the answer: "→ name {args}" for a valid call, "✗ ..."
// (with the reason) for an invalid, unparseable or suppressed one.
std::string call_lines(const chat::Answer& a, bool color);

}  // namespace cact::run
