// Tool lists: parsing and checking, the compact rendering, lookup, tool choice.
#include <algorithm>
#include <string>

#include "cact/error.h"
#include "cact/json_input.h"
#include "cact/tools.h"
#include "chat/schema_parse.h"

namespace cact::chat {

namespace {

// A tool list is prompt text: one far beyond any model's context is a mistake.
constexpr size_t kMaxToolListBytes = size_t(1) << 20;

// The tool object itself: OpenAI's {"type":"function","function":{...}}
// wrapper removed, anything else returned as it is.
const Json& unwrap(const Json& element, const std::string& at) {
  if (!element.is_object()) fail(at + ": a tool must be a JSON object, got " + element.type_name());
  if (!element.contains("function")) return element;
  for (const auto& [key, value] : element.items()) {
    if (key != "type" && key != "function") {
      fail(at + ": unknown key " + json_quoted(key) +
           " beside \"function\" (the wrapper is {\"type\":\"function\",\"function\":{...}})");
    }
  }
  const auto type = element.find("type");
  if (type == element.end() || *type != "function") fail(at + ": a \"function\" wrapper needs \"type\": \"function\"");
  const Json& tool = element["function"];
  if (!tool.is_object()) fail(at + ": \"function\" must be a JSON object, got " + tool.type_name());
  return tool;
}

// `at` names the tool by position until its name is known, then `who` and the name do.
Tool parse_tool(const Json& object, const std::string& who, const std::string& at) {
  for (const auto& [key, value] : object.items()) {
    if (key != "name" && key != "description" && key != "parameters") {
      fail(at + ": unknown key " + json_quoted(key) + " (a tool has \"name\", \"description\" and \"parameters\")");
    }
  }
  const auto name = object.find("name");
  if (name == object.end()) fail(at + ": missing \"name\"");
  if (!name->is_string() || name->get_ref<const std::string&>().empty())
    fail(at + ": \"name\" must be a non-empty string");
  Tool tool;
  tool.name = name->get<std::string>();
  const std::string context = who + ": tool " + json_quoted(tool.name);
  if (const auto description = object.find("description"); description != object.end()) {
    if (!description->is_string()) fail(context + ": \"description\" must be a string");
    tool.description = description->get<std::string>();
  }
  const auto parameters = object.find("parameters");
  if (parameters == object.end()) {
    tool.parameters.additional_properties =
        false;  // no "parameters": a tool that takes no arguments (as OpenAI reads it)
    return tool;
  }
  tool.parameters = parse_schema(*parameters, context, "parameters");
  if (tool.parameters.type != JsonType::object) {
    fail(context + ": parameters: must be of type object, not " + json_type_name(tool.parameters.type));
  }
  return tool;
}

}  // namespace

const char* json_type_name(JsonType t) {
  switch (t) {
    case JsonType::string:
      return "string";
    case JsonType::integer:
      return "integer";
    case JsonType::number:
      return "number";
    case JsonType::boolean:
      return "boolean";
    case JsonType::null:
      return "null";
    case JsonType::array:
      return "array";
    case JsonType::object:
      return "object";
  }
  return "?";
}

ToolList parse_tool_list(std::string_view json_text, std::string_view origin) {
  const std::string who(origin);
  const Json list = parse_json_limited(json_text, origin, kMaxToolListBytes);
  if (!list.is_array()) fail(who + ": a tool list must be a JSON list of tools, got " + list.type_name());
  ToolList result;
  Json rendered = Json::array();
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = who + ": tool " + std::to_string(i + 1);
    const Json& object = unwrap(list[i], at);
    Tool tool = parse_tool(object, who, at);
    if (result.find(tool.name)) fail(who + ": tool name " + json_quoted(tool.name) + " appears more than once");
    result.tools.push_back(std::move(tool));
    rendered.push_back(object);
  }
  result.compact_json = compact(rendered);
  return result;
}

const Tool* ToolList::find(std::string_view name) const {
  const auto it = std::find_if(tools.begin(), tools.end(), [&](const Tool& t) { return t.name == name; });
  return it == tools.end() ? nullptr : &*it;
}

ToolChoice parse_tool_choice(std::string_view text) {
  if (text.empty()) fail("tool choice is empty (give auto, none, required or a tool name)");
  if (text == "auto") return {ToolChoiceMode::auto_, ""};
  if (text == "none") return {ToolChoiceMode::none, ""};
  if (text == "required") return {ToolChoiceMode::required, ""};
  return {ToolChoiceMode::named, std::string(text)};
}

}  // namespace cact::chat
