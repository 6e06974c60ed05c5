// cact-run as a user runs it: bundled default archive, greedy text of
// expected.tsv, JSON result, seeded sampling, chat/tools, and one-line errors.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/run_app.h"
#include "support/test_paths.h"

using cact::test::run_app;

TEST_CASE("cact-run: the bundled archive continues expected.tsv greedily") {
  const auto r = run_app("cact-run", {"-p", "Licensed under the Apache License", "-n", "5"});
  CHECK(r.code == 0);
  CHECK(r.out.rfind(", Version 2.0", 0) == 0);  // expected.tsv's line (the 5th token is past its low-gap stop)
  CHECK(r.err.empty());
  const auto s = run_app("cact-run", {"-p", "Licensed under the Apache License", "-n", "5", "--scalar", "--stats"});
  CHECK(s.out == r.out);
  CHECK(s.err.find("prefill") != std::string::npos);
  CHECK(s.err.find("peak RSS") != std::string::npos);
  const auto f = run_app("cact-run", {"-p", "Licensed under the Apache License", "-n", "5", "--float"});
  CHECK(f.out.rfind(", Version 2.0", 0) == 0);
  const auto e = run_app("cact-run", {"-p", "Licensed under the Apache License", "-n", "5"}, {}, "CACT_KERNELS=scalar ");
  CHECK(e.out == r.out);
}

TEST_CASE("cact-run --json and seeded sampling") {
  const auto archive = (cact::test::models_dir() / "license-tiny.cact").string();
  const auto r = run_app("cact-run", {archive, "-p", "Everyone is permitted", "-n", "12", "--json", "--temperature",
                                      "0.9", "--top-k", "40", "--top-p", "0.95", "--seed", "5"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "cact-run/1");
  CHECK(j["generated_ids"].size() == j["generated_tokens"].get<size_t>());
  CHECK(j["prompt_ids"][0] == 2);  // bos
  CHECK(j["stop"].is_string());
  CHECK(j["stats"]["peak_rss_bytes"].get<uint64_t>() > 0);
  CHECK(j["confidence"].is_null());  // the tiny archive has no confidence head
  const auto again = run_app("cact-run", {archive, "-p", "Everyone is permitted", "-n", "12", "--json",
                                          "--temperature", "0.9", "--top-k", "40", "--top-p", "0.95", "--seed", "5"});
  CHECK(nlohmann::json::parse(again.out)["generated_ids"] == j["generated_ids"]);
}

TEST_CASE("cact-run: chat with tools, confidence head, context stop") {
  const auto dir = cact::test::scratch_dir("cact-run");
  std::ofstream(dir / "tools.json") << "[{\"name\": \"get_time\", \"parameters\": {}}]\n";
  const auto r = run_app("cact-run", {"--chat", "--system", "be brief", "--tools", (dir / "tools.json").string(), "-p",
                                      "what time is it", "-n", "4", "--json"});
  CHECK(r.code == 0);
  CHECK(nlohmann::json::parse(r.out)["chat"] == true);
  const auto heads = cact::test::golden_dir() / "archives" / "micro-heads.cact";
  if (std::filesystem::exists(heads)) {
    const auto h = run_app("cact-run", {heads.string(), "-p", "abc", "-n", "3"});
    CHECK(h.code == 0);
    CHECK(h.err.find("confidence: ") != std::string::npos);
  }
  const auto c = run_app("cact-run", {"-p", "This program is free software", "--context", "10", "-n", "50"});
  CHECK(c.code == 0);
  CHECK(c.err == "cact-run: stopped: the context of 10 positions is full\n");
}

TEST_CASE("cact-run: bad input is one line and a non-zero exit") {
  const auto dir = cact::test::scratch_dir("cact-run-bad");
  std::ofstream(dir / "bad.json") << "{not json";
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string says;
  };
  const std::vector<Case> cases{
      {{"-p", "x", "--no-such-flag"}, 2, "--no-such-flag"},
      {{"-p", "x", "-n", "abc"}, 2, "-n: 'abc' is not a whole number"},
      {{"-p", "x", "--top-k", "-1"}, 2, "--top-k: '-1' is not a whole number"},
      {{"-p", "x", "--top-p", "nan"}, 2, "is not a finite number"},
      {{"-p", "x", "-n"}, 2, "-n needs a value"},
      {{"-p", "x", "-p", "y"}, 2, "-p given more than once"},
      {{"-p", "x", "--json=yes"}, 2, "--json takes no value"},
      {{"a.cact", "b.cact", "-p", "x"}, 2, "unexpected argument b.cact"},
      {{(dir / "missing.cact").string(), "-p", "x"}, 1, "missing.cact"},
      {{"-n", "3"}, 1, "no prompt"},
      {{"-p", "This program is free software", "--context", "3"}, 1, "does not fit the context of 3"},
      {{"--chat", "--tools", (dir / "bad.json").string(), "-p", "x"}, 1, "not valid JSON"},
      {{"--tools", (dir / "bad.json").string(), "-p", "x"}, 1, "need --chat"},
      {{"-p", "x", "--context", "100000"}, 1, "max_seq_len"},
      {{"-p", "x", "--top-p", "0"}, 1, "top_p"},
      {{(dir / "bad.json").string(), "-p", "x"}, 1, "bad.json"},
  };
  for (const Case& c : cases) {
    const auto r = run_app("cact-run", c.args);
    INFO(c.says << " -> " << r.err);
    CHECK(r.code == c.code);
    CHECK(r.err_lines() == 1);
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(r.out.empty());
  }
}

TEST_CASE("cact-run --help lists every option; --name=value equals --name value") {
  const auto h = run_app("cact-run", {"--help"});
  CHECK(h.code == 0);
  for (const char* name : {"--prompt", "--chat", "--system", "--tools", "--max-tokens", "--temperature", "--top-k",
                           "--top-p", "--seed", "--context", "--sinks", "--kv-window", "--threads", "--stats", "--json",
                           "--scalar", "--float", "--dump-golden", "--golden-steps"}) {
    CHECK_MESSAGE(h.out.find(name) != std::string::npos, name);
  }
  const auto a = run_app("cact-run", {"-p", "Licensed under", "--max-tokens=4", "--json"});
  const auto b = run_app("cact-run", {"-p", "Licensed under", "--max-tokens", "4", "--json"});
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  CHECK(ja["generated_tokens"] == 4);
  CHECK(ja["generated_ids"] == jb["generated_ids"]);
}

TEST_CASE("cact-run sizes the session for prompt + -n unless --context is given") {
  const auto archive = (cact::test::models_dir() / "license-tiny.cact").string();
  const auto sized = run_app("cact-run", {archive, "-p", "Everyone is permitted", "-n", "7", "--json"});
  const auto full = run_app("cact-run", {archive, "-p", "Everyone is permitted", "-n", "7", "--json", "--context", "512"});
  REQUIRE(sized.code == 0);
  REQUIRE(full.code == 0);
  auto a = nlohmann::json::parse(sized.out);
  auto b = nlohmann::json::parse(full.out);
  CHECK(a["context"] == a["prompt_tokens"].get<int>() + 7);
  CHECK(b["context"] == 512);
  CHECK(a["stats"]["state_bytes"].get<double>() < b["stats"]["state_bytes"].get<double>());
  for (auto* j : {&a, &b}) {
    j->erase("context");
    j->erase("stats");
  }
  CHECK(a == b);  // same ids, text, stop and confidence
}
