// cact-run: chat with a .cact model in a terminal, or generate text and
// answers non-interactively (docs/CHAT.md).
#include <unistd.h>

#include "common/run_tool.h"
#include "interrupt.h"
#include "run.h"

int main(int argc, char** argv) {
  using namespace cact::run;
  Options o;
  CLI::App cli{"cact-run: chat with a .cact model (a terminal opens the chat), or continue text / answer with -p, -f, --chat, --jsonl"};
  add_flags(cli, o);
  return cact::app::run_tool(kTool, cli, argc, argv, [&] {
    const Mode mode = resolve_mode(o, cli, ::isatty(STDIN_FILENO) == 1);
    if (mode == Mode::golden) {
      const cact::Model model = cact::Model::open(o.archive.empty() ? default_model().string() : o.archive);
      dump_golden(model, o.archive.empty() ? "models/tools/tools-tiny.cact" : o.archive, prompt_text(o), o.golden_steps,
                  o.dump_golden);
      return 0;
    }
    install_interrupt_handler(mode == Mode::repl ? InterruptPolicy::chat : InterruptPolicy::batch);
    const Runtime rt(o);
    switch (mode) {
      case Mode::complete: return run_complete(rt, o);
      case Mode::chat_once: return run_chat_once(rt, o);
      case Mode::chat_lines: return run_chat_lines(rt, o);
      case Mode::jsonl: return run_jsonl(rt, o);
      case Mode::repl: return run_repl(rt, o);
      case Mode::golden: break;
    }
    return 0;
  });
}
