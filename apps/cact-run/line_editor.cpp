#include "line_editor.h"

#include <histedit.h>

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <system_error>

namespace cact::run {

std::filesystem::path history_path() {
  const char* state = std::getenv("XDG_STATE_HOME");
  if (state != nullptr && state[0] == '/') return std::filesystem::path(state) / "cact" / "history";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::filesystem::path(home) / ".local" / "state" / "cact" / "history";
  return {};
}

LineEditor::LineEditor(const char* program, std::filesystem::path history, void (*warn)(const std::string&))
    : history_(std::move(history)), warn_(warn) {
  // The prompt and the echo go to the terminal even when stdout is redirected.
  out_ = ::isatty(STDOUT_FILENO) == 1 ? stdout : stderr;
  el_ = el_init(program, stdin, out_, stderr);
  hist_ = history_init();
  HistEvent ev;
  ::history(hist_, &ev, H_SETSIZE, 1000);
  ::history(hist_, &ev, H_SETUNIQUE, 1);
  if (!history_.empty()) ::history(hist_, &ev, H_LOAD, history_.c_str());  // a missing file is a new history
  el_set(el_, EL_CLIENTDATA, this);
  el_set(el_, EL_EDITOR, "emacs");
  el_set(el_, EL_SIGNAL, 1);  // window size changes, Ctrl-Z
  el_set(el_, EL_HIST, ::history, hist_);
  el_set(el_, EL_PROMPT, &LineEditor::prompt_of);
  // Ctrl-C while editing is a key (isig off in edit mode): see on_interrupt.
  el_set(el_, EL_SETTY, "-d", "-isig", nullptr);
  // The wide call: the narrow one copies the name and help and never frees them.
  el_wset(el_, EL_ADDFN, L"cact-interrupt", L"end the line as interrupted", &LineEditor::on_interrupt);
  el_set(el_, EL_BIND, "^C", "cact-interrupt", nullptr);
  el_source(el_, nullptr);  // ~/.editrc
}

LineEditor::~LineEditor() {
  el_end(el_);
  history_end(hist_);
}

char* LineEditor::prompt_of(EditLine* el) {
  void* self = nullptr;
  el_get(el, EL_CLIENTDATA, &self);
  return static_cast<LineEditor*>(self)->prompt_.data();
}

unsigned char LineEditor::on_interrupt(EditLine* el, wint_t) {
  void* self = nullptr;
  el_get(el, EL_CLIENTDATA, &self);
  static_cast<LineEditor*>(self)->interrupted_ = true;
  return CC_NEWLINE;
}

LineEditor::Input LineEditor::read(const std::string& prompt) {
  prompt_ = prompt;
  interrupted_ = false;
  int count = 0;
  const char* line = el_gets(el_, &count);
  Input in;
  if (line != nullptr && count > 0) in.text.assign(line, size_t(count));
  if (!in.text.empty() && in.text.back() == '\n') in.text.pop_back();
  if (interrupted_) {
    in.status = Status::interrupted;
    std::fputs("^C\n", out_);  // like a shell: show the key, leave the abandoned line
  } else if (line == nullptr || count <= 0) {
    in.status = Status::end;  // Ctrl-D on an empty line, or the terminal went away
    std::fputs("\n", out_);
  } else {
    in.status = Status::line;
  }
  std::fflush(out_);
  return in;
}

void LineEditor::remember(const std::string& line) {
  HistEvent ev;
  ::history(hist_, &ev, H_ENTER, line.c_str());
  if (history_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(history_.parent_path(), ec);
  if ((ec || ::history(hist_, &ev, H_SAVE, history_.c_str()) < 0) && !warned_) {
    warned_ = true;
    warn_("cannot write the history file " + history_.string() + (ec ? " (" + ec.message() + ")" : std::string()));
  }
}

}  // namespace cact::run
