// Transcripts: ChatSession::transcript_json and parse_transcript (docs/CHAT.md "Transcript").
#include "cact/chat.h"
#include "cact/error.h"
#include "cact/json_input.h"

namespace cact::chat {
namespace {

constexpr const char* kSchema = "cact-transcript/1";
// A transcript holds at most a context's worth of text; generous, but bounded.
constexpr size_t kMaxTranscriptBytes = size_t(64) << 20;

const char* role_name(Turn::Role r) {
  switch (r) {
    case Turn::Role::user:
      return "user";
    case Turn::Role::tool:
      return "tool";
    case Turn::Role::assistant:
      return "assistant";
  }
  return "user";
}

}  // namespace

std::string ChatSession::transcript_json() const {
  Json turns = Json::array();
  for (const Turn& t : this->turns()) {
    Json j = {{"role", role_name(t.role)}, {"content", t.content}};
    if (t.role == Turn::Role::assistant) j["ids"] = t.ids;
    turns.push_back(std::move(j));
  }
  const ToolList& list = tools();
  const Json tools_json = list.compact_json.empty() ? Json::array() : Json::parse(list.compact_json);
  const Json j = {{"schema", kSchema}, {"system", system()}, {"tools", tools_json}, {"turns", turns}};
  return j.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
}

Transcript parse_transcript(std::string_view json_text, std::string_view origin) {
  const Json j = parse_json_limited(json_text, origin, kMaxTranscriptBytes);
  const std::string where(origin);
  // (value("schema", "") would throw nlohmann's type_error on a non-string.)
  if (!j.is_object() || !j.contains("schema") || j["schema"] != kSchema) {
    fail(where + ": not a transcript (expected an object with \"schema\": \"" + kSchema + "\")");
  }
  Transcript t;
  if (j.contains("system")) {
    if (!j["system"].is_string()) fail(where + ": system: expected a string");
    t.system = j["system"].get<std::string>();
  }
  if (j.contains("tools")) t.tools = parse_tool_list(compact(j["tools"]), where + ": tools");
  if (!j.contains("turns") || !j["turns"].is_array()) fail(where + ": turns: expected a list");
  for (size_t i = 0; i < j["turns"].size(); ++i) {
    const Json& tj = j["turns"][i];
    const std::string at = where + ": turns[" + std::to_string(i) + "]";
    if (!tj.is_object() || !tj.contains("role") || !tj["role"].is_string() || !tj.contains("content") ||
        !tj["content"].is_string()) {
      fail(at + ": expected {\"role\", \"content\"} with string values");
    }
    Turn turn;
    const std::string role = tj["role"].get<std::string>();
    if (role == "user") {
      turn.role = Turn::Role::user;
    } else if (role == "tool") {
      turn.role = Turn::Role::tool;
    } else if (role == "assistant") {
      turn.role = Turn::Role::assistant;
    } else {
      fail(at + ": role must be user, tool or assistant, not " + json_quoted(role));
    }
    turn.content = tj["content"].get<std::string>();
    if (tj.contains("ids")) {
      if (turn.role != Turn::Role::assistant || !tj["ids"].is_array())
        fail(at + ": ids: only an answer has ids (a list)");
      for (const Json& id : tj["ids"]) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
          fail(at + ": ids: expected token ids");
        }
        turn.ids.push_back(int32_t(id.get<int64_t>()));
      }
    }
    t.turns.push_back(std::move(turn));
  }
  return t;
}

}  // namespace cact::chat
