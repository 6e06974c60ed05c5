#include "tool_result.h"

#include "cact/error.h"

namespace cact::run {

namespace {
std::string text_of(const nlohmann::ordered_json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }
}  // namespace

size_t pending_calls(const chat::ChatSession& chat) {
  const std::vector<chat::Turn>& turns = chat.turns();
  if (turns.empty() || turns.back().role != chat::Turn::Role::assistant) return 0;
  return chat::parse_answer(turns.back().content).calls.size();
}

std::vector<std::string> tool_result_texts(const nlohmann::ordered_json& value, size_t calls,
                                           const std::string& origin) {
  // After an answer without a call a result is still a turn the model knows
  // (the caller acted on its own); the library needs an answer before it.
  if (calls <= 1) return {text_of(value)};
  if (!value.is_array() || value.size() != calls) {
    fail(origin + ": the last answer made " + std::to_string(calls) + " calls: give a list of " +
         std::to_string(calls) + " results, one per call");
  }
  std::vector<std::string> texts;
  for (const auto& v : value) texts.push_back(text_of(v));
  return texts;
}

}  // namespace cact::run
