// The answer envelope (docs/TOOLS.md "The answer envelope").
#include <nlohmann/json.hpp>

#include "cact/chat.h"

namespace cact::chat {

const char* stop_reason_name(StopReason s) {
  switch (s) {
    case StopReason::eos:
      return "eos";
    case StopReason::im_end:
      return "im_end";
    case StopReason::max_tokens:
      return "max_tokens";
    case StopReason::context:
      return "context";
    case StopReason::stop_string:
      return "stop_string";
    case StopReason::suppressed_call:
      return "suppressed_call";
    case StopReason::cancelled:
      return "cancelled";
  }
  return "unknown";
}

std::string answer_json(const Answer& a) {
  using json = nlohmann::ordered_json;
  json calls = json::array();
  for (const Call& c : a.function_calls) {
    // Validated calls: their arguments are a JSON object by construction.
    calls.push_back({{"name", c.name}, {"arguments", json::parse(c.arguments)}});
  }
  json suppressed = json::array();
  for (const SuppressedCall& s : a.suppressed_calls) suppressed.push_back({{"name", s.name}, {"reason", s.reason}});
  json validation = json::array();
  auto verdict = [](const json& name, const CallCheck& check) {
    json v = {{"name", name}, {"ok", check.violation == Violation::ok}};
    if (check.violation != Violation::ok) {
      v["violation"] = violation_name(check.violation);
      v["message"] = check.message;
    }
    return v;
  };
  for (size_t i = 0; i < a.parsed.calls.size() && i < a.validation.size(); ++i) {
    validation.push_back(verdict(a.parsed.calls[i].name, a.validation[i]));
  }
  for (const CallCheck& bad : a.parsed.call_json) validation.push_back(verdict(nullptr, bad));
  json j = {
      {"schema", "cact-answer/1"},
      {"text", a.parsed.text},
      {"reasoning", a.parsed.reasoning},
      {"function_calls", calls},
      {"suppressed_calls", suppressed},
      {"validation", validation},
      {"confidence", a.confidence ? json(double(*a.confidence)) : json(nullptr)},
      {"stop", stop_reason_name(a.stop)},
      {"raw", a.raw},
      {"tokens",
       {{"prompt", a.prompt_tokens},
        {"cached", a.cached_tokens},
        {"generated", a.ids.size()},
        {"dropped_turns", a.dropped_turns}}},
      {"timings", {{"prefill_ms", a.prefill_seconds * 1e3}, {"decode_ms", a.decode_seconds * 1e3}}},
      {"seed", a.seed},
  };
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace cact::chat
