#pragma once
// The bundled tool model and its expected conversations, for the chat tests.
#include <memory>
#include <string>
#include <vector>

#include "cact/chat.h"
#include "cact/engine.h"
#include "cact/model.h"
#include "cact/tokenizer.h"

namespace cact::test {

// One line of models/tools/expected.jsonl.
struct ExpectedConversation {
  std::string system;
  std::string tools_json;            // compact
  std::vector<chat::Turn> messages;  // user / tool turns, in order
  std::vector<std::string> answers;  // one per message
  std::vector<bool> valid;
};
std::vector<ExpectedConversation> expected_conversations();

// tools-tiny.cact opened once per process, with a tokenizer and an engine per numerics.
struct ToolModel {
  ToolModel();
  Model model;
  Tokenizer tok;
  Engine int8, reference;
};
const ToolModel& tool_model();

}  // namespace cact::test
