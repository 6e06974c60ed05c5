// cact-run: chat with a .cact model in a terminal, or generate text and
// answers non-interactively (docs/CHAT.md).
#include <unistd.h>

#include "common/error_policy.h"
#include "common/run_tool.h"
#include "common/std_paths.h"
#include "interrupt.h"
#include "run.h"

int main(int argc, char** argv) {
  using namespace cact::run;
  Options o;
  CLI::App cli{
      "cact-run: chat with a .cact model (a terminal opens the chat), or continue text / answer with -p, -f, --chat, "
      "--jsonl"};
  add_flags(cli, o);
  return cact::app::run_tool(kTool, cli, argc, argv, [&] {
    const Mode mode = resolve_mode(o, cli, ::isatty(STDIN_FILENO) == 1);
    // The archive is mapped from its file, and stdin may carry the conversation.
    if (cact::app::is_dash(o.archive))
      cact::app::usage_error("archive -: cact-run maps its archive from a file; give its path");
    if (mode == Mode::golden) {
      const std::filesystem::path archive = o.archive.empty() ? default_model() : std::filesystem::path(o.archive);
      const cact::Model model = cact::Model::open(archive);
      // Recorded relative to the current directory (the tests read it from the source tree's root).
      dump_golden(model, archive,
                  o.archive.empty() ? "models/tools/tools-tiny.cact" : std::filesystem::relative(archive).string(),
                  prompt_text(o), o.golden_steps, o.dump_golden);
      return 0;
    }
    install_interrupt_handler(mode == Mode::repl ? InterruptPolicy::chat : InterruptPolicy::batch);
    const Runtime rt(o);
    switch (mode) {
      case Mode::complete:
        return run_complete(rt, o);
      case Mode::chat_once:
        return run_chat_once(rt, o);
      case Mode::chat_lines:
        return run_chat_lines(rt, o);
      case Mode::jsonl:
        return run_jsonl(rt, o);
      case Mode::repl:
        return run_repl(rt, o);
      case Mode::golden:
        break;
    }
    return 0;
  });
}
