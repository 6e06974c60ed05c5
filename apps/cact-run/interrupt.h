#pragma once
// Ctrl-C (docs/CHAT.md "Ctrl-C"): while an answer is being generated, SIGINT
// only raises a flag, which the piece callback turns into "stop this answer".
// Elsewhere, and on a second Ctrl-C in batch modes, SIGINT keeps its default
// action (the process ends, status 130). An ignored SIGINT stays ignored.
namespace cact::run {

enum class InterruptPolicy : unsigned char {
  chat,   // the REPL: Ctrl-C never ends the process (at the prompt it is a key, see LineEditor)
  batch,  // one-shot and stdin modes: the first Ctrl-C ends the answer, a second one the process
};
void install_interrupt_handler(InterruptPolicy policy);

// While alive, an answer is being generated: Ctrl-C sets interrupted().
class Generating {
 public:
  Generating();
  ~Generating();
  Generating(const Generating&) = delete;
  Generating& operator=(const Generating&) = delete;
};
bool interrupted();
void clear_interrupt();

}  // namespace cact::run
