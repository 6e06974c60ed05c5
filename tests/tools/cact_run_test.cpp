// cact-run as a user runs it: greedy text of expected.tsv, JSON result,
// seeded and random-seeded sampling, chat/tools, and one-line errors.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/run_app.h"
#include "support/test_paths.h"

using cact::test::run_app;

namespace {
std::string license_tiny() { return (cact::test::models_dir() / "license-tiny.cact").string(); }
}  // namespace

TEST_CASE("cact-run: license-tiny continues expected.tsv greedily") {
  const std::string tiny = license_tiny();
  const auto r = run_app("cact-run", {tiny, "-p", "Licensed under the Apache License", "-n", "5"});
  CHECK(r.code == 0);
  CHECK(r.out.rfind(", Version 2.0", 0) == 0);  // expected.tsv's line (the 5th token is past its low-gap stop)
  CHECK(r.err.empty());
  const auto s =
      run_app("cact-run", {tiny, "-p", "Licensed under the Apache License", "-n", "5", "--scalar", "--stats"});
  CHECK(s.out == r.out);
  CHECK(s.err.rfind("cact-run: ", 0) == 0);
  CHECK(s.err.find("prefill") != std::string::npos);
  CHECK(s.err.find("peak RSS") != std::string::npos);
  CHECK(s.err.find("seed 0") != std::string::npos);  // greedy
  const auto f = run_app("cact-run", {tiny, "-p", "Licensed under the Apache License", "-n", "5", "--float"});
  CHECK(f.out.rfind(", Version 2.0", 0) == 0);
  const auto e =
      run_app("cact-run", {tiny, "-p", "Licensed under the Apache License", "-n", "5"}, {}, "CACT_ISA=scalar ");
  CHECK(e.out == r.out);
  // An unknown level is an error naming the valid ones, not a silent fallback.
  const auto u = run_app("cact-run", {tiny, "-p", "Licensed", "-n", "1"}, {}, "CACT_ISA=avx9 ");
  CHECK(u.code == 1);
  CHECK(u.out.empty());
  CHECK(u.err.find("CACT_ISA=\"avx9\"") != std::string::npos);
  CHECK(u.err.find("valid: scalar") != std::string::npos);
  const auto m = run_app("cact-run", {"-m", tiny, "-p", "Licensed under the Apache License", "-n", "5"});
  CHECK(m.out == r.out);
}

TEST_CASE("cact-run --json, seeded sampling, and the random default seed it reports") {
  const auto archive = license_tiny();
  const std::vector<std::string> sampled{
      archive,   "-p",  "Everyone is permitted", "-n", "12", "--json", "--temperature", "0.9", "--top-k", "40",
      "--top-p", "0.95"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = sampled;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_app("cact-run", args);
  };
  const auto r = with({"--seed", "5"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "cact-run/1");
  CHECK(j["generated_ids"].size() == j["generated_tokens"].get<size_t>());
  CHECK(j["prompt_ids"][0] == 2);  // bos
  CHECK(j["stop"].is_string());
  CHECK(j["seed"] == 5);
  CHECK(j["stats"]["peak_rss_bytes"].get<uint64_t>() > 0);
  CHECK(j["confidence"].is_null());  // the tiny archive has no confidence head
  CHECK(nlohmann::json::parse(with({"--seed", "5"}).out)["generated_ids"] == j["generated_ids"]);
  // No --seed: a random one, reported, and it reproduces the text.
  const auto a = nlohmann::json::parse(with({}).out), b = nlohmann::json::parse(with({}).out);
  CHECK(a["seed"] != b["seed"]);
  const auto again = nlohmann::json::parse(with({"--seed", std::to_string(a["seed"].get<uint64_t>())}).out);
  CHECK(again["generated_ids"] == a["generated_ids"]);
  // Every sampling knob is accepted in range; --temperature -1 is greedy.
  const auto knobs = with({"--min-p", "0.05", "--repeat-penalty", "1.3", "--repeat-last-n", "16", "--seed", "1"});
  CHECK(knobs.code == 0);
  const auto cold = run_app("cact-run", {archive, "-p", "Everyone is permitted", "-n", "6", "--json", "--temp", "-1"});
  const auto greedy = run_app("cact-run", {archive, "-p", "Everyone is permitted", "-n", "6", "--json"});
  REQUIRE(cold.code == 0);
  CHECK(nlohmann::json::parse(cold.out)["generated_ids"] == nlohmann::json::parse(greedy.out)["generated_ids"]);
  CHECK(nlohmann::json::parse(cold.out)["seed"] == 0);
}

TEST_CASE("cact-run --stop ends the text before the stop string") {
  const auto archive = license_tiny();
  const auto full = run_app("cact-run", {archive, "-p", "Licensed under the Apache License", "-n", "12", "--json"});
  REQUIRE(full.code == 0);
  const std::string text = nlohmann::json::parse(full.out)["text"];
  REQUIRE(text.find("Version") != std::string::npos);
  const auto cut = run_app("cact-run", {archive, "-p", "Licensed under the Apache License", "-n", "12", "--json",
                                        "--stop", "zzz", "--stop", "Version"});
  const auto j = nlohmann::json::parse(cut.out);
  CHECK(j["stop"] == "stop_string");
  CHECK(j["text"] == text.substr(0, text.find("Version")));
  const auto streamed =
      run_app("cact-run", {archive, "-p", "Licensed under the Apache License", "-n", "12", "--stop", "Version"});
  CHECK(streamed.out == text.substr(0, text.find("Version")) + "\n");
}

TEST_CASE("cact-run: chat with tools, confidence head, context stop") {
  const auto dir = cact::test::scratch_dir("cact-run");
  std::ofstream(dir / "tools.json")
      << "[{\"name\": \"get_time\", \"parameters\": {\"type\": \"object\", \"properties\": {}}}]\n";
  const auto r = run_app("cact-run", {"--chat", "--system", "be brief", "--tools", (dir / "tools.json").string(), "-p",
                                      "what time is it", "-n", "4", "--json"});
  CHECK(r.code == 0);
  CHECK(nlohmann::json::parse(r.out)["schema"] == "cact-answer/1");
  const auto heads = cact::test::golden_dir() / "archives" / "micro-heads.cact";
  if (std::filesystem::exists(heads)) {
    const auto h = run_app("cact-run", {heads.string(), "-p", "abc", "-n", "3"});
    CHECK(h.code == 0);
    CHECK(h.err.empty());  // confidence only with --stats
    const auto s = run_app("cact-run", {heads.string(), "-p", "abc", "-n", "3", "--stats"});
    CHECK(s.err.find("cact-run: confidence: ") != std::string::npos);
  }
  const auto c =
      run_app("cact-run", {license_tiny(), "-p", "This program is free software", "--context", "10", "-n", "50"});
  CHECK(c.code == 0);
  CHECK(c.err == "cact-run: stopped: the context of 10 positions is full\n");
  const auto q =
      run_app("cact-run", {license_tiny(), "-p", "This program is free software", "-c", "10", "-n", "50", "-q"});
  CHECK(q.err.empty());
  CHECK(q.out == c.out);
}

TEST_CASE("cact-run: bad input is one line and exit 1, bad usage exit 2") {
  const auto dir = cact::test::scratch_dir("cact-run-bad");
  std::ofstream(dir / "bad.json") << "{not json";
  const std::string tiny = license_tiny();
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string says;
  };
  const std::vector<Case> cases{
      {{"-p", "x", "--no-such-flag"}, 2, "unknown option --no-such-flag"},
      {{"-p", "x", "--temprature", "0.5"}, 2, "unknown option --temprature (did you mean --temperature?)"},
      {{"-p", "x", "--max-token", "5"}, 2, "(did you mean --max-tokens?)"},
      {{"-p", "x", "-n", "abc"}, 2, "abc"},
      {{"-p", "x", "--top-k", "-1"}, 2, "-1"},
      {{"-p", "x", "--top-p", "nan"}, 2, "top_p"},
      {{"-p", "x", "--top-p", "2"}, 2, "top_p"},
      {{"-p", "x", "--top-p", "0"}, 2, "top_p"},
      {{"-p", "x", "--min-p", "1.5"}, 2, "min_p"},
      {{"-p", "x", "--repeat-penalty", "0"}, 2, "repeat_penalty"},
      {{"-p", "x", "--temperature", "inf"}, 2, "temperature"},
      {{"-p", "x", "--tool-choice", ""}, 2, "tool"},
      {{"-p", "x", "-n"}, 2, "--max-tokens"},
      {{"-p", "x", "-f", "y"}, 2, "-p and -f"},
      {{"a.cact", "-m", "b.cact", "-p", "x"}, 2, "twice"},
      {{"a.cact", "b.cact", "-p", "x"}, 2, "b.cact"},
      {{"--dump-golden", "g.json"}, 2, "--dump-golden needs -p or -f"},
      {{"--tools", (dir / "bad.json").string(), "-p", "x"}, 2, "--tools needs --chat"},
      {{"--jsonl", "-p", "x"}, 2, "--jsonl"},
      {{(dir / "missing.cact").string(), "-p", "x"}, 1, "missing.cact"},
      {{"-n", "3"}, 2, "no prompt"},
      {{tiny, "-p", "This program is free software", "--context", "3"}, 1, "does not fit the context of 3"},
      {{"--chat", "--tools", (dir / "bad.json").string(), "-p", "x"}, 1, "--tools " + (dir / "bad.json").string()},
      {{"--chat", "--tools", (dir / "missing.json").string(), "-p", "x"}, 1, "cannot open"},
      {{"-f", (dir / "missing.txt").string()}, 1, "-f " + (dir / "missing.txt").string()},
      {{"-p", "x", "--context", "100000"}, 1, "max_seq_len"},
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
  for (const char* name :
       {"--model",         "--prompt",      "--file",        "--chat",         "--jsonl",  "--system",
        "--tools",         "--tools-json",  "--tool-choice", "--no-constrain", "--load",   "--max-tokens",
        "--temperature",   "--temp",        "--top-k",       "--top-p",        "--min-p",  "--repeat-penalty",
        "--repeat-last-n", "--seed",        "--stop",        "--context",      "--sinks",  "--kv-window",
        "--threads",       "--stats",       "--json",        "--quiet",        "--scalar", "--float",
        "--dump-golden",   "--golden-steps"}) {
    CHECK_MESSAGE(h.out.find(name) != std::string::npos, name);
  }
  const std::string tiny = license_tiny();
  const auto a = run_app("cact-run", {tiny, "-p", "Licensed under", "--max-tokens=4", "--json"});
  const auto b = run_app("cact-run", {tiny, "-p", "Licensed under", "--max-tokens", "4", "--json"});
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  CHECK(ja["generated_tokens"] == 4);
  CHECK(ja["generated_ids"] == jb["generated_ids"]);
}

TEST_CASE("cact-run sizes the session for prompt + -n unless --context is given") {
  const auto archive = license_tiny();
  const auto sized = run_app("cact-run", {archive, "-p", "Everyone is permitted", "-n", "7", "--json"});
  const auto full =
      run_app("cact-run", {archive, "-p", "Everyone is permitted", "-n", "7", "--json", "--context", "512"});
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
