#pragma once
// Tool results as the user gives them (JSONL "tool_result", the REPL's
// /result): one value answers a single call (or an answer without a call);
// several calls need a list with one value per call. A JSON string stands for its contents, any other value
// for its compact JSON text.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cact/chat.h"

namespace cact::run {

// The calls the conversation's last answer made (0 when it did not end with one).
size_t pending_calls(const chat::ChatSession& chat);

// Throws cact::Error "<origin>: ..." when the values do not match the calls.
std::vector<std::string> tool_result_texts(const nlohmann::ordered_json& value, size_t calls,
                                           const std::string& origin);

}  // namespace cact::run
