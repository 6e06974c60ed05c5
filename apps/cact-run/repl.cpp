#include "repl.h"

#include <unistd.h>
#include <cstdio>
#include <cstdlib>

#include "answer_view.h"
#include "cact/error.h"
#include "common/output.h"
#include "interrupt.h"

namespace cact::run {

namespace {

void warn(const std::string& text) { app::note(kTool, "warning: " + text); }

bool color_terminal() {
  const char* term = std::getenv("TERM");
  return ::isatty(STDOUT_FILENO) == 1 && std::getenv("NO_COLOR") == nullptr && term != nullptr &&
         std::string(term) != "dumb";
}

}  // namespace

Repl::Repl(const Runtime& rt, const Options& o)
    : rt_(rt), o_(o), chat_(open_chat(rt, o)), editor_(kTool, history_path(), &warn), color_(color_terminal()) {}

void Repl::say(const std::string& text) const {
  if (!o_.quiet) app::note(kTool, text);
}

void Repl::banner() const {
  std::string tools;
  for (const chat::Tool& t : chat_.tools().tools) tools += (tools.empty() ? "" : ", ") + t.name;
  say(rt_.archive() + ", " + (tools.empty() ? std::string("no tools") : "tools: " + tools));
  say("/help for commands; Ctrl-C stops an answer; Ctrl-D (or Ctrl-C on an empty line) quits");
}

std::optional<std::string> Repl::read_message() {
  std::string message;
  while (true) {
    const LineEditor::Input in = editor_.read(message.empty() ? "> " : "... ");
    if (in.status == LineEditor::Status::end) return std::nullopt;
    if (in.status == LineEditor::Status::interrupted) {
      if (message.empty() && in.text.empty()) return std::nullopt;
      message.clear();  // like a shell: Ctrl-C drops what was typed
      continue;
    }
    if (!in.text.empty()) editor_.remember(in.text);
    if (!in.text.empty() && in.text.back() == '\\') {
      message.append(in.text, 0, in.text.size() - 1).push_back('\n');
      continue;
    }
    return message + in.text;
  }
}

void Repl::answer(const std::function<chat::Answer(const chat::OnPiece&)>& ask) {
  AnswerView view(color_);
  clear_interrupt();
  std::optional<chat::Answer> a;
  {
    const Generating generating;
    a = ask([&](std::string_view text) { return app::write_out(view.push(text)) && !interrupted(); });
  }
  // After Ctrl-C the terminal shows ^C where the answer stopped: end that line too.
  app::write_out(view.finish(a->stop == chat::StopReason::cancelled && ::isatty(STDOUT_FILENO) == 1));
  app::write_out(call_lines(*a, color_));
  app::check_out();
  warn_nonfinite_logits(chat_.session());
  report_answer(o_, *a, chat_.context());
  last_ = std::move(a);
}

int Repl::run() {
  banner();
  while (const std::optional<std::string> message = read_message()) {
    if (message->find_first_not_of(" \t\n") == std::string::npos) continue;
    try {
      if ((*message)[0] == '/' && message->compare(0, 2, "//") != 0) {
        if (!command(*message)) break;
        continue;
      }
      // "//text" sends "/text".
      const std::string query = message->compare(0, 2, "//") == 0 ? message->substr(1) : *message;
      answer([&](const chat::OnPiece& on_piece) { return chat_.ask(query, turn_options(o_), on_piece); });
    } catch (const Error& e) {
      if (std::ferror(stdout)) throw;  // the answers cannot be shown: give up (exit 1)
      app::note(kTool, e.what());
    }
  }
  return 0;
}

int run_repl(const Runtime& rt, const Options& o) {
  Repl repl(rt, o);
  return repl.run();
}

}  // namespace cact::run
