// cact-run's output discipline: a continuation is decoded in context (prompt +
// text == decode(all ids)), stdout write failures are exit 1 in every mode,
// merged stdout/stderr keep their order, and mistyped names get suggestions
// in every tool.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cact/model.h"
#include "cact/tokenizer.h"
#include "support/run_app.h"
#include "support/test_paths.h"

using cact::test::run_app;
using cact::test::run_shell;
using cact::test::shell_quote;
using Json = nlohmann::json;

namespace {
std::string app(const std::string& tool) { return shell_quote((cact::test::binary_dir() / "apps" / tool).string()); }
}  // namespace

TEST_CASE("cact-run: prompt + continuation == decode(prompt ids + generated ids), streamed and in --json") {
  for (const char* rel : {"license-tiny.cact", "tools/tools-tiny.cact"}) {
    const auto archive = cact::test::models_dir() / rel;
    const auto model = cact::Model::open(archive);
    const cact::Tokenizer tok(model.tokenizer_model());
    // Ending in a word, a space, a multi-byte character, a marker.
    for (const std::string& prompt :
         {std::string("Permission is hereby granted"), std::string("Permission is hereby granted "),
          std::string("Copyright (C) caf\xc3\xa9"), std::string("Permission<|im_end|>")}) {
      CAPTURE(rel);
      CAPTURE(prompt);
      const auto r = run_app("cact-run", {archive.string(), "-p", prompt, "-n", "8", "--json"});
      REQUIRE_MESSAGE(r.code == 0, r.err);
      const Json j = Json::parse(r.out);
      std::vector<int32_t> ids = j["prompt_ids"].get<std::vector<int32_t>>();
      REQUIRE(tok.decode(ids) == prompt);
      for (int32_t id : j["generated_ids"]) ids.push_back(id);
      CHECK(prompt + j["text"].get<std::string>() == tok.decode(ids));
      const auto streamed = run_app("cact-run", {archive.string(), "-p", prompt, "-n", "8"});
      CHECK(streamed.out == j["text"].get<std::string>() + "\n");
    }
  }
}

TEST_CASE("cact-run: stdout on a full disk is one line and exit 1, in every mode") {
  const std::string tiny = shell_quote((cact::test::models_dir() / "license-tiny.cact").string());
  const std::vector<std::string> one_shot{tiny + " -p x -n 4", tiny + " -p x -n 4 --json",
                                          "--chat -p 'set a timer for 10 minutes'",
                                          "--chat -p 'set a timer for 10 minutes' --json", "--help"};
  for (const std::string& args : one_shot) {
    CAPTURE(args);
    const auto r = run_shell(app("cact-run") + " " + args + " >/dev/full");
    CHECK(r.code == 1);
    CHECK(r.err == "cact-run: cannot write to standard output: No space left on device\n");
  }
  for (const std::string& mode : {std::string("--chat"), std::string("--chat --json")}) {
    const auto r = run_shell("echo 'set a timer for 10 minutes' | " + app("cact-run") + " " + mode + " >/dev/full");
    CHECK(r.code == 1);
    CHECK(r.err_lines() == 1);
  }
  const auto j =
      run_shell("echo '{\"query\": \"set a timer for 10 minutes\"}' | " + app("cact-run") + " --jsonl >/dev/full");
  CHECK(j.code == 1);
  CHECK(j.err_lines() == 1);
  // The other tools follow the same rule.
  const auto inspect = run_shell(app("cact-inspect") + " " + tiny + " >/dev/full");
  CHECK(inspect.code == 1);
  CHECK(inspect.err == "cact-inspect: cannot write to standard output: No space left on device\n");
}

TEST_CASE("cact-run: merged stdout and stderr keep their order; stats only with --stats, --quiet only answers") {
  const std::string tiny = shell_quote((cact::test::models_dir() / "license-tiny.cact").string());
  const auto text =
      run_app("cact-run", {(cact::test::models_dir() / "license-tiny.cact").string(), "-p", "Copyright", "-n", "6"});
  REQUIRE(text.code == 0);
  const auto merged = run_shell(app("cact-run") + " " + tiny + " -p Copyright -n 6 --stats 2>&1");
  REQUIRE(merged.code == 0);
  CHECK(merged.out.rfind(text.out + "cact-run: ", 0) == 0);  // the text and its newline first
  const auto chat =
      run_shell("printf 'set a timer for 10 minutes\\nphone Ben\\n' | " + app("cact-run") + " --chat --stats 2>&1");
  REQUIRE(chat.code == 0);
  // answer, stats, answer, stats
  const size_t first_stats = chat.out.find("\ncact-run: "), second_answer = chat.out.find("<think>", 1);
  CHECK(first_stats < second_answer);
  CHECK(chat.out.find("\ncact-run: ", second_answer) != std::string::npos);
  const auto quiet =
      run_shell(app("cact-run") + " " + tiny + " -p 'This program is free software' -c 10 -n 50 -q 2>&1");
  CHECK(quiet.out.find("cact-run:") == std::string::npos);
}

TEST_CASE("every tool suggests the nearest name for a mistyped flag or command") {
  struct Case {
    std::string tool;
    std::vector<std::string> args;
    std::string says;
  };
  const std::string tiny = (cact::test::models_dir() / "license-tiny.cact").string();
  const std::vector<Case> cases{
      {"cact-run", {"-p", "x", "--stat"}, "unknown option --stat (did you mean --stats?)"},
      {"cact-run", {"-p", "x", "--temp=0.5", "--seeed", "3"}, "(did you mean --seed?)"},
      {"cact-inspect", {tiny, "--jsno"}, "unknown option --jsno (did you mean --json?)"},
      {"cact-slice", {tiny, "o.cact", "--layer", "2"}, "(did you mean --layers?)"},
      {"cact-build", {"synht", "o.cact"}, "unknown command synht (did you mean synth?)"},
      {"cact-build",
       {"synth", "o.cact", "--preset", "micro", "--sed", "1"},
       "unknown option --sed (did you mean --seed?)"},
      {"cact-quant", {"report", tiny, "--jsn"}, "(did you mean --json?)"},
  };
  for (const Case& c : cases) {
    const auto r = run_app(c.tool, c.args);
    INFO(c.tool << " -> " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err_lines() == 1);
    CHECK(r.err.find(c.says) != std::string::npos);
  }
}
