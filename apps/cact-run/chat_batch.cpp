// Chat without a terminal: one turn from -p / -f, or one turn per stdin line
// of one conversation; each answer as streamed text or one JSON envelope.
#include <iostream>

#include "cact/error.h"
#include "common/input.h"
#include "common/output.h"
#include "interrupt.h"
#include "run.h"

namespace cact::run {

namespace {

// Ask, print the answer, report; false when Ctrl-C stopped it.
bool answer_turn(chat::ChatSession& chat, const Options& o, std::string_view query) {
  chat::Answer a;
  {
    const Generating generating;
    a = chat.ask(query, turn_options(o), [&](std::string_view text) {
      if (!o.json && !app::write_out(text)) return false;
      return !interrupted();
    });
  }
  app::write_out(o.json ? answer_line(a) : std::string("\n"));
  app::check_out();
  warn_nonfinite_logits(chat.session());
  report_answer(o, a, chat.context());
  return !interrupted();
}

}  // namespace

int run_chat_once(const Runtime& rt, const Options& o) {
  const std::string query = prompt_text(o);
  chat::ChatSession chat = open_chat(rt, o);
  return answer_turn(chat, o, query) ? 0 : 130;
}

int run_chat_lines(const Runtime& rt, const Options& o) {
  chat::ChatSession chat = open_chat(rt, o);
  std::string line;
  bool too_long = false;
  while (app::read_line(std::cin, line, app::kMaxInputBytes, too_long)) {
    if (too_long) fail("stdin: a line of more than " + std::to_string(app::kMaxInputBytes) + " bytes, the limit");
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (!answer_turn(chat, o, line)) return 130;
  }
  return 0;
}

}  // namespace cact::run
