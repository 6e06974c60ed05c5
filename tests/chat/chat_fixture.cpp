// The bundled tool model for the chat tests (chat_fixture.h).
#include "chat/chat_fixture.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/test_paths.h"

namespace cact::test {

std::vector<ExpectedConversation> expected_conversations() {
  std::ifstream in(models_dir() / "tools" / "expected.jsonl");
  std::vector<ExpectedConversation> out;
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::ordered_json::parse(line);
    ExpectedConversation c;
    c.system = j["system"].get<std::string>();
    c.tools_json = j["tools"].dump();
    for (const auto& m : j["messages"]) {
      const bool user = m["role"] == "user";
      c.messages.push_back(
          {user ? chat::Turn::Role::user : chat::Turn::Role::tool, m["content"].get<std::string>(), {}});
    }
    for (const auto& a : j["answers"]) c.answers.push_back(a.get<std::string>());
    for (const auto& v : j["valid"]) c.valid.push_back(v.get<bool>());
    out.push_back(std::move(c));
  }
  return out;
}

ToolModel::ToolModel()
    : model(Model::open(models_dir() / "tools" / "tools-tiny.cact")),
      tok(model.tokenizer_model()),
      int8(model, {.numerics = Numerics::int8}),
      reference(model, {.numerics = Numerics::reference}) {}

const ToolModel& tool_model() {
  static const ToolModel m;
  return m;
}

}  // namespace cact::test
