// cact-run's flags and the mode they select (docs/CHAT.md "Flags", "Modes").
#include <string>

#include "cact/error.h"
#include "cact/tools.h"
#include "common/error_policy.h"
#include "run.h"

namespace cact::run {

void add_flags(CLI::App& cli, Options& o) {
  cli.add_option("archive", o.archive, "the .cact file (default: the bundled tools-tiny.cact)")->type_name("FILE");
  cli.add_option("-m,--model", o.model, "the .cact file (same as the positional archive)")->type_name("FILE");
  cli.add_option("-p,--prompt", o.prompt, "one-shot: the prompt text (- = read it from stdin)");
  cli.add_option("-f,--file", o.file, "one-shot: read the prompt from FILE (- = stdin)")->type_name("FILE");
  cli.add_flag("--chat", o.chat,
               "chat turns instead of text continuation (with -p/-f: one turn; piped stdin: one turn per line)");
  cli.add_flag("--jsonl", o.jsonl, "one JSON request per stdin line, one JSON answer per stdout line");
  cli.add_option("--system", o.system, "chat: the system message");
  cli.add_option("--tools", o.tools_file,
                 "chat: JSON file with the tool list (- = stdin, with -p TEXT or -f FILE only)")
      ->type_name("FILE");
  cli.add_option("--tools-json", o.tools_json, "chat: the tool list as inline JSON")->type_name("JSON");
  cli.add_option("--tool-choice", o.tool_choice, "chat: auto, none, required or a tool name")->capture_default_str();
  cli.add_flag("--no-constrain", o.no_constrain, "chat: do not constrain tool calls to the listed schemas");
  cli.add_option("--load", o.load, "chat: resume the conversation saved in FILE (/save)")->type_name("FILE");
  cli.add_option("-n,--max-tokens", o.max_tokens, "tokens to generate at most (default: 64; chat: 256)");
  cli.add_option("--temp,--temperature", o.sampler.temperature, "sampling temperature (<= 0: greedy)")
      ->capture_default_str();
  cli.add_option("--top-k", o.sampler.top_k, "keep the k best ids (0 = all)")->capture_default_str();
  cli.add_option("--top-p", o.sampler.top_p, "nucleus mass, in (0, 1] (1 = all)")->capture_default_str();
  cli.add_option("--min-p", o.sampler.min_p,
                 "keep ids with at least this share of the best one's probability, in [0, 1]")
      ->capture_default_str();
  cli.add_option("--repeat-penalty", o.sampler.repeat_penalty, "penalty of recently seen ids, > 0 (1 = off)")
      ->capture_default_str();
  cli.add_option("--repeat-last-n", o.sampler.repeat_last_n, "how many recent ids the penalty sees")
      ->capture_default_str();
  cli.add_option("--seed", o.seed, "sampling seed (default: random; reported by --stats and --json)");
  cli.add_option("--stop", o.stop, "stop before this text (repeatable)")->allow_extra_args(false);
  cli.add_option("-c,--context", o.context,
                 "positions of the session (0: prompt + -n for text, the archive's max_seq_len for chat)");
  cli.add_option("--sinks", o.sinks, "leading positions kept visible through the kv_window span");
  cli.add_option("--kv-window", o.kv_window, "attention span when the archive leaves it open (kv_window 0)");
  cli.add_option("-t,--threads", o.threads, "engine threads (0 = the hardware concurrency; same output for any)");
  cli.add_flag("--stats", o.stats, "after each answer: tokens, tok/s, seed, peak RSS (and confidence) on stderr");
  cli.add_flag("--json", o.json, "one-shot and stdin lines: print a JSON object per answer instead of the text");
  cli.add_flag("-q,--quiet", o.quiet, "print only the answers (no banner, no notices)");
  cli.add_flag("--scalar", o.scalar, "force the scalar kernels (CACT_ISA=scalar: scalar kernels and engine)");
  cli.add_flag("--float", o.float_path, "run the float reference path");
  cli.add_option(
         "--dump-golden", o.dump_golden,
         "engine tests: write golden top-10 logits (float + int8) for the prompt to FILE (- = stdout); see cact-golden")
      ->type_name("FILE");
  cli.add_option("--golden-steps", o.golden_steps, "with --dump-golden: greedy tokens after the prompt")
      ->capture_default_str();
}

namespace {

void check_values(const Options& o) {
  try {
    check_sampler_options(o.sampler);
    (void)chat::parse_tool_choice(o.tool_choice);
  } catch (const Error& e) {
    app::usage_error(e.what());
  }
  for (const std::string& s : o.stop) {
    if (s.empty()) app::usage_error("--stop: the text is empty");
  }
}

// --dump-golden writes the engine tests' logits file: a fixed recipe (float
// greedy continuation, float and int8-scalar logits). A flag that would change
// an answer does not apply to it, and is refused rather than ignored; golden
// checks of one's own archive are cact-golden's (docs/GUIDE.md).
void refuse_with_golden(const CLI::App& cli) {
  for (const char* name :
       {"--chat",         "--jsonl",          "--system",        "--tools",       "--tools-json", "--tool-choice",
        "--no-constrain", "--load",           "--max-tokens",    "--temperature", "--top-k",      "--top-p",
        "--min-p",        "--repeat-penalty", "--repeat-last-n", "--seed",        "--stop",       "--context",
        "--sinks",        "--kv-window",      "--stats",         "--json",        "--scalar",     "--float"}) {
    if (cli.count(name) > 0) {
      app::usage_error(std::string(name) +
                       " does not apply to --dump-golden (the engine tests' logits: float greedy, float and "
                       "int8 scalar); for golden checks of an archive's answers use cact-golden");
    }
  }
}

Mode pick_mode(const Options& o, bool one_shot, bool stdin_terminal) {
  if (!o.dump_golden.empty()) {
    if (!one_shot) app::usage_error("--dump-golden needs -p or -f");
    return Mode::golden;
  }
  if (o.jsonl) {
    if (one_shot) app::usage_error("--jsonl reads its requests from stdin: no -p or -f");
    if (o.json) app::usage_error("--jsonl prints JSON already: no --json");
    return Mode::jsonl;
  }
  if (one_shot) return o.chat ? Mode::chat_once : Mode::complete;
  if (stdin_terminal) {
    if (o.json) app::usage_error("--json needs -p, -f or piped input (or use --jsonl)");
    return Mode::repl;
  }
  if (o.chat) return Mode::chat_lines;
  app::usage_error("no prompt: pass -p TEXT, -p - or -f FILE (with --chat, piped stdin gives one turn per line)");
}

}  // namespace

Mode resolve_mode(Options& o, const CLI::App& cli, bool stdin_terminal) {
  const auto given = [&](const char* name) { return cli.count(name) > 0; };
  if (given("--model")) {
    if (given("archive")) app::usage_error("the archive is given twice (positional and -m)");
    o.archive = o.model;
  }
  const bool prompt = given("--prompt"), file = given("--file");
  if (prompt && file) app::usage_error("-p and -f: give the prompt one way");
  if (given("--load")) {
    for (const char* name : {"--system", "--tools", "--tools-json"}) {
      if (given(name)) app::usage_error(std::string(name) + " and --load: the transcript has its own");
    }
  }
  if (!o.tools_file.empty() && given("--tools-json"))
    app::usage_error("--tools and --tools-json: give the tool list one way");
  check_values(o);
  if (!o.dump_golden.empty()) refuse_with_golden(cli);
  const Mode mode = pick_mode(o, prompt || file, stdin_terminal);
  if (mode == Mode::complete) {
    for (const char* name : {"--system", "--tools", "--tools-json", "--tool-choice", "--no-constrain", "--load"}) {
      if (given(name)) app::usage_error(std::string(name) + " needs --chat");
    }
  }
  const bool stdin_carries = mode == Mode::repl || mode == Mode::chat_lines || mode == Mode::jsonl ||
                             (prompt && o.prompt == "-") || (file && o.file == "-");
  for (const std::string* p : {&o.tools_file, &o.load}) {
    if (*p == "-" && stdin_carries) {
      app::usage_error(std::string(p == &o.load ? "--load" : "--tools") + " -: stdin already carries the conversation");
    }
  }
  return mode;
}

}  // namespace cact::run
