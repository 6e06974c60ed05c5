// --jsonl: one JSON request per stdin line, one JSON answer (or error) per
// stdout line (docs/CHAT.md "JSONL").
#include <algorithm>
#include <iostream>

#include "cact/error.h"
#include "cact/json_input.h"
#include "common/input.h"
#include "common/output.h"
#include "common/suggest.h"
#include "interrupt.h"
#include "run.h"
#include "tool_result.h"

namespace cact::run {

namespace {

using chat::Json;

const std::vector<std::string> kKeys{"query",      "system",   "tools",      "tool_choice",
                                     "max_tokens", "continue", "tool_result"};

// A request line holds a query, a system text and a tool list: generous, but bounded.
constexpr size_t kMaxRequestBytes = size_t(16) << 20;

class JsonlChat {
 public:
  JsonlChat(const Runtime& rt, const Options& o)
      : o_(o), chat_(open_chat(rt, o)), tools_(chat_.tools()), system_(chat_.system()) {}

  // One request line to one answer line; throws cact::Error on a bad request.
  std::string handle(const Json& req) {
    if (!req.is_object()) fail("a request is a JSON object");
    for (const auto& [key, value] : req.items()) {
      if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
        const std::string near = app::nearest(key, kKeys);
        fail("unknown key \"" + key + "\"" + (near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
      }
    }
    const bool query = req.contains("query"), result = req.contains("tool_result");
    if (query == result) fail("a request has either \"query\" or \"tool_result\"");
    chat::GenerateOptions g = turn_options(o_);
    if (req.contains("tool_choice")) g.tool_choice = chat::parse_tool_choice(string_of(req, "tool_choice"));
    if (req.contains("max_tokens")) {
      const Json& n = req["max_tokens"];
      if (!n.is_number_unsigned() || n.get<uint64_t>() > UINT32_MAX) fail("\"max_tokens\" is a whole number");
      g.max_tokens = n.get<uint32_t>();
    }
    const chat::Answer a = query ? ask(req, g) : answer_results(req["tool_result"], g);
    return answer_line(a);
  }

 private:
  static std::string string_of(const Json& req, const char* key) {
    if (!req[key].is_string()) fail(std::string("\"") + key + "\" is a string");
    return req[key].get<std::string>();
  }

  chat::Answer ask(const Json& req, const chat::GenerateOptions& g) {
    bool keep = false;
    if (req.contains("continue")) {
      if (!req["continue"].is_boolean()) fail("\"continue\" is true or false");
      keep = req["continue"].get<bool>();
    }
    if (keep && (req.contains("system") || req.contains("tools"))) {
      fail("\"continue\": the conversation keeps its system and tools");
    }
    if (!keep) {
      // A new conversation; its prefix comes from the prefix cache when seen before.
      chat_.set_system(req.contains("system") ? string_of(req, "system") : system_);
      chat_.set_tools(req.contains("tools") ? chat::parse_tool_list(req["tools"].dump(), "\"tools\"") : tools_);
      chat_.reset();
    }
    return generate([&](const chat::OnPiece& on_piece) { return chat_.ask(string_of(req, "query"), g, on_piece); });
  }

  chat::Answer answer_results(const Json& v, const chat::GenerateOptions& g) {
    const std::vector<std::string> results = tool_result_texts(v, pending_calls(chat_), "\"tool_result\"");
    return generate([&](const chat::OnPiece& on_piece) { return chat_.tool_results(results, g, on_piece); });
  }

  template <typename F>
  chat::Answer generate(F&& run) {
    const Generating generating;
    return run([](std::string_view) { return !interrupted(); });
  }

  const Options& o_;
  chat::ChatSession chat_;
  chat::ToolList tools_;
  std::string system_;
};

}  // namespace

int run_jsonl(const Runtime& rt, const Options& o) {
  JsonlChat chat(rt, o);
  bool failed = false;
  std::string line;
  bool too_long = false;
  for (uint64_t n = 1; app::read_line(std::cin, line, kMaxRequestBytes, too_long); ++n) {
    if (!too_long && line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string out;
    try {
      if (too_long) fail("request: more than " + std::to_string(kMaxRequestBytes) + " bytes on one line, the limit");
      out = chat.handle(parse_json_limited(line, "request", kMaxRequestBytes));
    } catch (const std::exception& e) {  // cact::Error, nlohmann's parse and type errors
      failed = true;
      out = Json{{"error", e.what()}, {"line", n}}.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
      if (!o.quiet) app::note(kTool, "line " + std::to_string(n) + ": " + e.what());
    }
    app::write_out(out);
    app::check_out();
    if (interrupted()) return 130;
  }
  return failed ? 1 : 0;
}

}  // namespace cact::run
