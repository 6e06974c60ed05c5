#pragma once
// Tool lists and tool calls of the Needle chat format (TOKENIZER.md "The Needle
// chat format", docs/TOOLS.md): a checked tool list with its JSON Schema subset,
// the compact rendering the model was trained on, the split of an answer into
// reasoning / calls / text, and the validation of a call against the list.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cact/json_input.h"

namespace cact::chat {

enum class JsonType : uint8_t { string, integer, number, boolean, null, array, object };
const char* json_type_name(JsonType t);  // "string", "integer", ...

// One node of the supported JSON Schema subset (docs/TOOLS.md lists the
// keywords; any other keyword is refused when the list is parsed, never ignored).
struct Schema {
  JsonType type = JsonType::object;
  // enum / const: the allowed values as compact JSON texts (const is one value);
  // empty = no such restriction. Every literal is of `type`.
  std::vector<std::string> literals;
  // integer / number: inclusive bounds (exclusiveMinimum/Maximum set the flags).
  std::optional<double> minimum, maximum;
  bool exclusive_minimum = false, exclusive_maximum = false;
  // string: length in code points.
  uint32_t min_length = 0;
  std::optional<uint32_t> max_length;
  // array: items (exactly one element when type is array), item count bounds.
  std::vector<Schema> items;
  uint32_t min_items = 0;
  std::optional<uint32_t> max_items;
  // object: properties in declared order, with their names and required flags.
  std::vector<std::string> property_names;
  std::vector<Schema> properties;
  std::vector<bool> required;
  bool additional_properties = true;  // false: an undeclared key is a violation
};

struct Tool {
  std::string name;
  std::string description;
  Schema parameters;  // type object
};

struct ToolList {
  std::vector<Tool> tools;
  // The list as the prompt carries it: compact (no whitespace outside strings),
  // keys in the order given, each tool as the user wrote it (OpenAI's
  // {"type":"function","function":{...}} wrapper removed).
  std::string compact_json;
  const Tool* find(std::string_view name) const;  // nullptr when not listed
  bool empty() const { return tools.empty(); }
};

// Parse and check a tool list (a JSON array of {"name", "description"?,
// "parameters"}; each element may also be OpenAI's {"type":"function",
// "function":{...}}). Throws cact::Error whose message starts with `origin`
// (e.g. "--tools tools.json") and names the tool and the field at fault:
// not a list, duplicate names, a `required` key that is not a property, an
// unsupported keyword, a NUL byte, nesting deeper than kMaxJsonDepth.
ToolList parse_tool_list(std::string_view json_text, std::string_view origin);

// What is wrong with one call, or ok.
enum class Violation : uint8_t {
  ok,
  unparseable_json,  // the <tool_call> body is not JSON, or not a list of {"name","arguments"}
  unknown_tool,      // the name is not in the list
  missing_argument,  // a required key is absent
  unknown_argument,  // a key not declared, with additionalProperties false
  wrong_type,        // a value of another JSON type than declared
  out_of_range,      // minimum/maximum, min/maxLength, min/maxItems
  not_in_enum,       // enum / const
};
const char* violation_name(Violation v);  // "ok", "unparseable_json", ...

struct CallCheck {
  Violation violation = Violation::ok;
  std::string message;  // empty when ok; else names the argument path, e.g. "arguments.minutes: expected integer"
};

struct Call {
  std::string name;
  std::string arguments;  // compact JSON text of the arguments object, keys as produced
};

// An answer split at its markers (surfaces as the decoder prints them).
struct ParsedAnswer {
  std::string reasoning;  // text inside <think>...</think> (empty when none)
  std::string text;       // everything outside <think> and <tool_call> blocks, trimmed of surrounding newlines
  bool has_call_block = false;
  std::vector<Call> calls;           // parsed calls, in order
  std::vector<CallCheck> call_json;  // empty, or one unparseable_json entry per block that did not parse
  std::string raw_calls;             // the <tool_call> bodies as written, concatenated
};
ParsedAnswer parse_answer(std::string_view answer);

// Where the </tool_call> that closes a call body starting at `from` is: the
// first one outside a JSON string (an argument may quote the marker's text).
// npos while the body is still open (a streamed answer not yet complete).
size_t find_call_close(std::string_view text, size_t from = 0);

// Validate one call against the list (the name, then every argument).
CallCheck validate_call(const ToolList& tools, const Call& call);

// Which calls an answer may make (OpenAI's tool_choice; docs/TOOLS.md).
enum class ToolChoiceMode : uint8_t { auto_, none, required, named };
struct ToolChoice {
  ToolChoiceMode mode = ToolChoiceMode::auto_;
  std::string name;  // named: the tool every call must name
};
// "auto", "none", "required" or a tool name; throws cact::Error on an empty name.
ToolChoice parse_tool_choice(std::string_view text);

}  // namespace cact::chat
