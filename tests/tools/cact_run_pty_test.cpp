// cact-run's interactive chat on a real pseudo-terminal: the README's main
// command answers "set a timer for 10 minutes" with a set_timer call; Ctrl-C
// stops an answer and the conversation goes on; /save writes a transcript that
// a fresh process resumes (--load) to the same next answer; Ctrl-D and Ctrl-C
// on an empty line leave with exit 0; a failed stdout is exit 1.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/pty_app.h"
#include "support/run_app.h"
#include "support/test_paths.h"

using cact::test::app_path;
using cact::test::PtyApp;
using Json = nlohmann::json;

namespace {

// Generous: the sanitizer and valgrind builds are many times slower.
constexpr double kWait = 120.0;

std::vector<std::string> terminal_env(const std::filesystem::path& state) {
  return {"NO_COLOR=1", "TERM=dumb", "XDG_STATE_HOME=" + state.string(), "HOME=" + state.string()};
}

// Wait for a prompt after `from`, and for the line editor to read keys.
void wait_prompt(PtyApp& app, const char* prompt, size_t from) {
  REQUIRE_MESSAGE(app.wait_for(prompt, kWait, from), app.screen());
  REQUIRE(app.wait_keys_mode(kWait));
}

// Type a line and wait for the next prompt after it.
void say(PtyApp& app, const std::string& line) {
  const size_t from = app.mark();
  app.type(line + "\r");
  wait_prompt(app, "\n> ", from);
}

}  // namespace

TEST_CASE("cact-run at a terminal: a tool call, line editing keys, history, Ctrl-C on an empty line quits") {
  const auto state = cact::test::scratch_dir("cact-run-pty");
  PtyApp app({app_path("cact-run")}, terminal_env(state));
  REQUIRE(app.started());
  wait_prompt(app, "> ", 0);
  CHECK(app.screen().find("tools: set_timer") != std::string::npos);  // the banner names the bundled tools

  size_t from = app.mark();
  say(app, "set a timer for 10 minutes");
  CHECK_MESSAGE(app.screen().find("→ set_timer {\"minutes\":10}", from) != std::string::npos, app.screen());
  // The call is shown once, as a call line (its <tool_call> block is not printed).
  CHECK(app.screen().find("<tool_call>", from) == std::string::npos);

  // A line ending in \ continues on a "... " line.
  from = app.mark();
  app.type("what is the weather \\\r");
  wait_prompt(app, "... ", from);
  say(app, "in Paris");
  CHECK(app.screen().find("→ get_weather", from) != std::string::npos);

  // Ctrl-C on a typed line drops it; a mistyped command gets a suggestion.
  from = app.mark();
  app.type("never sent\x03");
  REQUIRE(app.wait_for("^C", kWait, from));
  wait_prompt(app, "\n> ", from);
  from = app.mark();
  say(app, "/quitt");
  CHECK(app.screen().find("did you mean /quit?", from) != std::string::npos);
  from = app.mark();
  say(app, "/stats");
  CHECK(app.screen().find("conversation: 4 turns", from) != std::string::npos);

  app.type("\x03");  // on an empty line: leave
  CHECK(app.wait_exit(kWait) == 0);
  const std::string history = cact::test::slurp(state / "cact" / "history");
  CHECK(history.find("set\\040a\\040timer\\040for\\04010\\040minutes") != std::string::npos);
  CHECK(history.find("never") == std::string::npos);
}

TEST_CASE("cact-run at a terminal: Ctrl-C stops an answer, /save, the next turn equals a fresh --load run, Ctrl-D") {
  const auto state = cact::test::scratch_dir("cact-run-pty-save");
  // A tool whose string argument the model never ends: a long answer (hundreds
  // of tokens on the slow float path), so Ctrl-C surely lands in the middle.
  std::ofstream(state / "story.json")
      << R"([{"name":"write_story","description":"Write a story.","parameters":{"type":"object",)"
      << R"("properties":{"text":{"type":"string","minLength":50}},"required":["text"]}}])";
  const std::vector<std::string> flags{"--float", "--tool-choice", "required", "-n", "400"};
  std::vector<std::string> argv{app_path("cact-run")};
  argv.insert(argv.end(), flags.begin(), flags.end());
  PtyApp app(argv, terminal_env(state));
  REQUIRE(app.started());
  wait_prompt(app, "> ", 0);
  size_t from = app.mark();
  say(app, "set a timer for 10 minutes");
  CHECK_MESSAGE(app.screen().find("→ set_timer {\"minutes\":10}", from) != std::string::npos, app.screen());

  say(app, "/tools " + (state / "story.json").string());
  from = app.mark();
  app.type("tell me a long story\r");
  REQUIRE_MESSAGE(app.wait_for("</think>", kWait, from), app.screen());  // the answer is streaming
  app.type("\x03");
  wait_prompt(app, "\n> ", from);                                        // back at the prompt
  CHECK(app.screen().find("→ write_story", from) == std::string::npos);  // stopped before its call was complete

  const auto t1 = state / "t1.json", t2 = state / "t2.json";
  say(app, "/save " + t1.string());
  say(app, "write another one");
  say(app, "/save " + t2.string());
  app.type("\x04");  // Ctrl-D
  CHECK(app.wait_exit(kWait) == 0);

  const Json saved = Json::parse(cact::test::slurp(t1)), after = Json::parse(cact::test::slurp(t2));
  REQUIRE(saved["turns"].size() == 2);  // the request and its stopped answer (a closed turn)
  CHECK(saved["turns"][1]["role"] == "assistant");
  REQUIRE(after["turns"].size() == 4);
  std::vector<std::string> args{"--load", t1.string(), "--chat", "-p", "write another one", "--json"};
  args.insert(args.end(), flags.begin(), flags.end());
  const auto fresh = cact::test::run_app("cact-run", args);
  REQUIRE_MESSAGE(fresh.code == 0, fresh.err);
  CHECK(Json::parse(fresh.out)["raw"] == after["turns"][3]["content"]);
}

TEST_CASE("cact-run at a terminal with stdout on a full disk: one line, exit 1") {
  const auto state = cact::test::scratch_dir("cact-run-pty-full");
  // The prompt goes to the terminal (stderr) when stdout is not one.
  PtyApp app({"/bin/sh", "-c", "exec " + cact::test::shell_quote(app_path("cact-run")) + " >/dev/full"},
             terminal_env(state));
  REQUIRE(app.started());
  wait_prompt(app, "> ", 0);
  app.type("set a timer for 10 minutes\r");
  CHECK(app.wait_exit(kWait) == 1);
  CHECK(app.screen().find("cact-run: cannot write to standard output: No space left on device") != std::string::npos);
}

TEST_CASE("cact-run -p at a terminal: Ctrl-C ends the answer on a new line, exit 130") {
  const auto state = cact::test::scratch_dir("cact-run-pty-once");
  std::ofstream(state / "story.json")
      << R"([{"name":"write_story","description":"Write a story.","parameters":{"type":"object",)"
      << R"("properties":{"text":{"type":"string","minLength":50}},"required":["text"]}}])";
  PtyApp app({app_path("cact-run"), "--chat", "--float", "--tools", (state / "story.json").string(), "--tool-choice",
              "required", "-n", "400", "-p", "tell me a long story"},
             terminal_env(state));
  REQUIRE(app.started());
  REQUIRE_MESSAGE(app.wait_for("<tool_call>", kWait), app.screen());  // streaming (one-shot text is the raw answer)
  app.type("\x03");
  CHECK(app.wait_exit(kWait) == 130);
  const std::string& s = app.screen();
  CHECK(s.find("</tool_call>") == std::string::npos);  // stopped in the middle
  CHECK(s.size() >= 2);
  CHECK(s.compare(s.size() - 2, 2, "\r\n") == 0);  // the text ends its line
}
