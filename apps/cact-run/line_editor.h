#pragma once
// The REPL's input line: libedit (emacs keys, ~/.editrc) with a persistent
// history file. Ctrl-C at the prompt is read as a key, not a signal, so the
// REPL knows whether it came on an empty line (quit) or not (discard the line).
#include <cstdio>
#include <cwchar>
#include <filesystem>
#include <string>

typedef struct editline EditLine;
typedef struct history History;

namespace cact::run {

class LineEditor {
 public:
  // `history`: the file to load and append to ("" = no history). Problems with
  // it are reported once through `warn`.
  LineEditor(const char* program, std::filesystem::path history, void (*warn)(const std::string&));
  ~LineEditor();
  LineEditor(const LineEditor&) = delete;
  LineEditor& operator=(const LineEditor&) = delete;

  enum class Status : unsigned char { line, interrupted, end };
  struct Input {
    Status status = Status::end;
    std::string text;  // line: without the newline; interrupted: what was typed
  };
  Input read(const std::string& prompt);
  // Remember a line in the history (and its file).
  void remember(const std::string& line);

 private:
  static char* prompt_of(EditLine* el);
  static unsigned char on_interrupt(EditLine* el, wint_t ch);
  std::FILE* out_ = nullptr;  // where the prompt and the echo go
  EditLine* el_ = nullptr;
  History* hist_ = nullptr;
  std::filesystem::path history_;
  void (*warn_)(const std::string&);
  bool warned_ = false;
  std::string prompt_;
  bool interrupted_ = false;
};

// $XDG_STATE_HOME/cact/history, else ~/.local/state/cact/history ("" when neither is known).
std::filesystem::path history_path();

}  // namespace cact::run
