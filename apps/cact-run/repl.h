#pragma once
// The interactive chat (docs/CHAT.md "Interactive chat"): read a message with
// line editing, stream the answer, show its tool calls; /commands change the
// conversation.
#include <functional>
#include <optional>
#include <string>

#include "line_editor.h"
#include "run.h"

namespace cact::run {

class Repl {
 public:
  Repl(const Runtime& rt, const Options& o);
  int run();

 private:
  // The next message (a line ending in '\' continues on the next); nullopt: quit.
  std::optional<std::string> read_message();
  // Generate an answer with `ask`, streaming it through the view.
  void answer(const std::function<chat::Answer(const chat::OnPiece&)>& ask);
  void banner() const;
  void say(const std::string& text) const;  // a note on stderr unless --quiet

  // repl_commands.cpp: false when the command quits.
  bool command(const std::string& line);
  void help();
  void tool_result(const std::string& arg);
  void show_stats();
  void show_tools();
  void save(const std::string& path);

  const Runtime& rt_;
  const Options& o_;
  chat::ChatSession chat_;
  LineEditor editor_;
  bool color_;
  std::optional<chat::Answer> last_;
};

}  // namespace cact::run
