// bench_chat: the chat layer's figures (docs/TOOLS.md "Figures").
//
//   bench_chat [--rounds N] [ARCHIVE]
//
// 1. Tool-call latency on a needle3-geometry archive (default /tmp/needle3.cact,
//    synthesised if missing) with the bundled five-tool list: the wall time of
//    a request until its call list is closed (tool choice "required", so the
//    random weights must call), for a first request (the prefix prefilled) and
//    a follow-up that restores the prefix from the cache, 1 and 2 threads,
//    median of N rounds, beside what the same tokens cost the engine alone in
//    the same rounds (the ratio is what the chat layer adds); and decode tok/s
//    of answers with the constraint active against the same archive
//    unconstrained.
// 2. The share of the bundled tool model's expected answers (models/tools/
//    expected.jsonl) reproduced, int8 and float, unconstrained and constrained.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "cact/chat.h"
#include "cact/synth.h"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

const char* const kQueries[] = {"set a timer for 10 minutes", "what is the weather in Paris", "call Anna",
                                "play some jazz", "wake me at 7"};

// What a request's tokens cost the engine alone, timed in the same round as the
// request: the prompt's prefill (the cached prefix, then the rest) and one
// decode step per generated id, the prefix pinned as sinks as the chat pins it.
struct EngineAlone {
  double prefix_ms, rest_ms, steps_ms;
};
EngineAlone engine_alone(const cact::Engine& engine, cact::SessionOptions options, uint32_t prompt, uint32_t cached,
                         uint32_t generated) {
  options.sinks = cached;
  cact::Session s(engine, options);
  std::vector<int32_t> ids(prompt + generated);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t((i * 7919 + 13) % engine.output_rows());
  auto t0 = Clock::now();
  s.prefill(std::span(ids).first(cached));
  const double prefix_ms = ms_since(t0);
  t0 = Clock::now();
  s.prefill(std::span(ids).subspan(cached, prompt - cached));
  const double rest_ms = ms_since(t0);
  t0 = Clock::now();
  for (uint32_t i = prompt; i < prompt + generated; ++i) s.step(ids[i]);
  return {prefix_ms, rest_ms, ms_since(t0)};
}

void latency(const cact::Engine& engine, const cact::Tokenizer& tok, const cact::chat::ToolList& tools,
             uint32_t threads, int rounds) {
  cact::chat::ChatOptions co;
  co.session.threads = threads;
  co.session.context = 2048;
  cact::chat::GenerateOptions o;
  o.max_tokens = 96;
  o.tool_choice.mode = cact::chat::ToolChoiceMode::required;
  std::vector<double> cold, warm, engine_cold, engine_warm;
  uint32_t prompt = 0, cached = 0, generated = 0, forced = 0;
  for (int r = 0; r < rounds; ++r) {
    cact::chat::ChatSession chat(engine, tok, co);  // a fresh cache each round: the first request is cold
    chat.set_tools(tools);
    auto t0 = Clock::now();
    const cact::chat::Answer a = chat.ask(kQueries[r % 5], o);
    cold.push_back(ms_since(t0));
    prompt = a.prompt_tokens;
    generated = uint32_t(a.ids.size());
    forced = a.forced_tokens;
    chat.reset();
    t0 = Clock::now();
    const cact::chat::Answer b = chat.ask(kQueries[(r + 1) % 5], o);
    warm.push_back(ms_since(t0));
    cached = b.cached_tokens;
    if (a.function_calls.empty() || b.function_calls.empty()) std::printf("  (a request ended without a call)\n");
    const EngineAlone e = engine_alone(engine, co.session, prompt, cached, generated);
    engine_cold.push_back(e.prefix_ms + e.rest_ms + e.steps_ms);
    engine_warm.push_back(e.rest_ms + e.steps_ms);
  }
  std::printf(
      "  %u thread%s: first request %.1f ms (%u prompt tokens), prefix-cache hit %.1f ms (%u cached); "
      "%u tokens generated (%u forced)\n",
      threads, threads == 1 ? " " : "s", median(cold), prompt, median(warm), cached, generated, forced);
  std::printf(
      "             the engine alone: %.1f ms and %.1f ms (the prompt's prefill, then one step per generated id); "
      "the requests take %.2fx and %.2fx that\n",
      median(engine_cold), median(engine_warm), median(cold) / median(engine_cold), median(warm) / median(engine_warm));
}

void decode_cost(const cact::Engine& engine, const cact::Tokenizer& tok, const cact::chat::ToolList& tools,
                 int rounds) {
  cact::chat::ChatOptions co;
  co.session.threads = 1;
  co.session.context = 2048;
  auto rate = [&](bool constrain) {
    cact::chat::ChatSession chat(engine, tok, co);
    chat.set_tools(tools);
    cact::chat::GenerateOptions o;
    o.max_tokens = 128;
    o.constrain = constrain;
    o.tool_choice.mode = cact::chat::ToolChoiceMode::required;
    std::vector<double> rates;
    uint32_t tokens = 0;
    for (int r = 0; r < rounds; ++r) {
      chat.reset();
      const cact::chat::Answer a = chat.ask(kQueries[r % 5], o);
      tokens = uint32_t(a.ids.size());
      rates.push_back(double(a.ids.size()) / a.decode_seconds);
    }
    std::printf("  %-13s %7.0f tok/s (%u tokens an answer)\n", constrain ? "constrained" : "unconstrained",
                median(rates), tokens);
    return median(rates);
  };
  const double free = rate(false), bound = rate(true);
  // Forced ids (fed without a step of their own) and the mask's cost, together.
  std::printf("  time per token with the constraint %+.1f %%\n", (free / bound - 1.0) * 100.0);
}

void expected_share(const std::filesystem::path& models) {
  const cact::Model model = cact::Model::open(models / "tools-tiny.cact");
  const cact::Tokenizer tok(model.tokenizer_model());
  std::vector<nlohmann::ordered_json> convs;
  std::istringstream lines(slurp(models / "expected.jsonl"));
  for (std::string line; std::getline(lines, line);) convs.push_back(nlohmann::ordered_json::parse(line));
  for (const cact::Numerics numerics : {cact::Numerics::int8, cact::Numerics::reference}) {
    const cact::Engine engine(model, {.numerics = numerics});
    for (const bool constrain : {false, true}) {
      cact::chat::ChatSession chat(engine, tok);
      cact::chat::GenerateOptions o;
      o.constrain = constrain;
      int total = 0, same = 0, valid_total = 0, valid_same = 0;
      for (const auto& c : convs) {
        chat.set_system(c["system"].get<std::string>());
        chat.set_tools(cact::chat::parse_tool_list(c["tools"].dump(), "expected.jsonl"));
        bool on_track = true;  // later turns were generated after the file's own answers
        for (size_t i = 0; i < c["messages"].size() && on_track; ++i) {
          const auto& m = c["messages"][i];
          const std::string content = m["content"].get<std::string>();
          const cact::chat::Answer a = m["role"] == "user" ? chat.ask(content, o) : chat.tool_results({content}, o);
          const bool equal = a.raw == c["answers"][i].get<std::string>();
          const bool valid = c["valid"][i].get<bool>();
          total += 1;
          same += equal;
          valid_total += valid;
          valid_same += valid && equal;
          on_track = equal;
        }
      }
      std::printf("  %-5s %-13s %d of %d answers reproduced (%d of %d marked valid)\n", cact::numerics_name(numerics),
                  constrain ? "constrained" : "unconstrained", same, total, valid_same, valid_total);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path archive = "/tmp/needle3.cact";
  int rounds = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (argv[i][0] == '-') {
      std::fprintf(stderr, "usage: bench_chat [--rounds N] [ARCHIVE]\n");
      return 2;
    } else {
      archive = argv[i];
    }
  }
  const std::filesystem::path models = std::filesystem::path(CACT_SOURCE_DIR) / "models" / "tools";
  if (!std::filesystem::exists(archive)) {
    std::printf("writing %s (synth preset needle3)\n", archive.c_str());
    cact::write_synth_archive(archive, cact::synth_preset("needle3"));
  }
  const cact::Model model = cact::Model::open(archive);
  const cact::Tokenizer tok(model.tokenizer_model());
  const cact::Engine engine(model);
  const cact::chat::ToolList tools = cact::chat::parse_tool_list(slurp(models / "tools.json"), "tools.json");
  std::printf("tool-call latency, %s, five tools, tool choice required (median of %d)\n", archive.c_str(), rounds);
  latency(engine, tok, tools, 1, rounds);
  latency(engine, tok, tools, 2, rounds);
  std::printf("decode with and without the constraint, 1 thread\n");
  decode_cost(engine, tok, tools, rounds);
  std::printf("expected answers of models/tools/expected.jsonl (greedy)\n");
  expected_share(models);
  return 0;
}
