// Assistant messages both ways between OpenAI's form and the Needle form
// (cact/openai.h): an Answer as a message, a history message as the text the
// model would have written, and the prefix the cache restores.
#include "cact/openai.h"
#include "chat/render.h"

namespace cact::chat::openai {

std::vector<std::string> marker_surfaces(const Tokenizer& tok) {
  std::vector<std::string> out;
  for (const Piece& p : tok.model().pieces) {
    if (p.type == PieceType::UserDefined && !p.surface.empty()) out.push_back(p.surface);
  }
  return out;
}

std::string assistant_text(std::string_view reasoning, std::string_view content, const std::vector<Call>& calls) {
  std::string text;
  if (!reasoning.empty()) text.append("<think>").append(reasoning).append("</think>\n");
  text.append(content);
  if (calls.empty()) return text;
  Json list = Json::array();
  for (const Call& c : calls) list.push_back({{"name", c.name}, {"arguments", Json::parse(c.arguments)}});
  if (!content.empty()) text += '\n';
  return text.append("<tool_call>").append(compact(list)).append("</tool_call>");
}

uint32_t prefix_tokens(const Tokenizer& tok, std::string_view system, const ToolList& tools) {
  return uint32_t(render_prefix(tok, ChatMarkers(tok), system, tools.compact_json).size());
}

const char* finish_reason(const Answer& answer) {
  if (!answer.function_calls.empty()) return "tool_calls";
  if (answer.stop == StopReason::max_tokens || answer.stop == StopReason::context) return "length";
  return "stop";
}

Json assistant_message(const Answer& answer, const std::vector<std::string>& call_ids) {
  Json message = {{"role", "assistant"}};
  const bool only_calls = answer.parsed.text.empty() && !answer.function_calls.empty();
  message["content"] = only_calls ? Json(nullptr) : Json(answer.parsed.text);
  if (!answer.parsed.reasoning.empty()) message["reasoning_content"] = answer.parsed.reasoning;
  if (!answer.function_calls.empty()) {
    Json calls = Json::array();
    for (size_t i = 0; i < answer.function_calls.size(); ++i) {
      const Call& c = answer.function_calls[i];
      calls.push_back(
          {{"id", call_ids.at(i)}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
    message["tool_calls"] = std::move(calls);
  }
  message["refusal"] = nullptr;
  return message;
}

}  // namespace cact::chat::openai
