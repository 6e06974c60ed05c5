// A call checked against its tool's Schema; the first violation is reported.
#include <algorithm>
#include <optional>
#include <string>

#include "cact/error.h"
#include "cact/json_input.h"
#include "cact/tools.h"
#include "chat/schema_parse.h"

namespace cact::chat {

namespace {

// Arguments normally come from parse_answer; this only bounds a hand-made call.
constexpr size_t kMaxArgumentsBytes = size_t(1) << 20;
// A value quoted in a message is cut after this many bytes.
constexpr size_t kMaxShownBytes = 60;

// `value` for a message: compact JSON, cut at a code point boundary when long.
std::string shown(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() <= kMaxShownBytes) return text;
  size_t cut = kMaxShownBytes;
  while (cut > 0 && (uint8_t(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

size_t code_points(const std::string& utf8) {
  size_t n = 0;
  for (char c : utf8) n += (uint8_t(c) & 0xC0) != 0x80;
  return n;
}

CallCheck violation(Violation v, const std::string& path, const std::string& what) { return {v, path + ": " + what}; }

// JSON Schema equality: numbers by value (1 equals 1.0), objects whatever
// their key order.
// (One JSON type in the library: ordered_json compares objects in key order,
// so objects are matched key by key here.)
bool same_json(const Json& a, const Json& b) {
  if (a.is_object() && b.is_object()) {
    if (a.size() != b.size()) return false;
    for (const auto& [key, member] : a.items()) {
      const auto other = b.find(key);
      if (other == b.end() || !same_json(member, *other)) return false;
    }
    return true;
  }
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!same_json(a[i], b[i])) return false;
    }
    return true;
  }
  return a == b;
}

bool is_literal(const Schema& s, const Json& value) {
  for (const std::string& literal : s.literals) {
    if (same_json(Json::parse(literal), value)) return true;
  }
  return false;
}

std::string literal_list(const Schema& s) {
  if (s.literals.size() == 1) return s.literals.front();
  std::string list = "one of [";
  for (size_t i = 0; i < s.literals.size(); ++i) list += (i ? "," : "") + s.literals[i];
  return list + "]";
}

// A count against its bounds (characters or items).
CallCheck check_count(size_t n, const char* unit, uint32_t min, std::optional<uint32_t> max, const char* min_key,
                      const char* max_key, const std::string& path) {
  const std::string counted = std::to_string(n) + " " + unit;
  if (n < min)
    return violation(Violation::out_of_range, path, counted + ", fewer than " + min_key + " " + std::to_string(min));
  if (max && n > *max)
    return violation(Violation::out_of_range, path, counted + ", more than " + max_key + " " + std::to_string(*max));
  return {};
}

CallCheck check_number(const Schema& s, const Json& value, const std::string& path) {
  const double d = value.get<double>();
  if (s.minimum && (s.exclusive_minimum ? d <= *s.minimum : d < *s.minimum)) {
    return violation(Violation::out_of_range, path,
                     shown(value) + (s.exclusive_minimum ? " is not above exclusiveMinimum " : " is below minimum ") +
                         bound_text(*s.minimum));
  }
  if (s.maximum && (s.exclusive_maximum ? d >= *s.maximum : d > *s.maximum)) {
    return violation(Violation::out_of_range, path,
                     shown(value) + (s.exclusive_maximum ? " is not below exclusiveMaximum " : " is above maximum ") +
                         bound_text(*s.maximum));
  }
  return {};
}

CallCheck check_value(const Schema& s, const Json& value, const std::string& path);

CallCheck check_array(const Schema& s, const Json& value, const std::string& path) {
  CallCheck c = check_count(value.size(), "items", s.min_items, s.max_items, "minItems", "maxItems", path);
  for (size_t i = 0; c.violation == Violation::ok && i < value.size(); ++i) {
    c = check_value(s.items.front(), value[i], path + "[" + std::to_string(i) + "]");
  }
  return c;
}

// The given keys in their order first, then the required keys that are absent.
CallCheck check_object(const Schema& s, const Json& value, const std::string& path) {
  for (const auto& [key, member] : value.items()) {
    const auto it = std::find(s.property_names.begin(), s.property_names.end(), key);
    if (it == s.property_names.end()) {
      if (s.additional_properties) continue;
      return violation(Violation::unknown_argument, member_path(path, key),
                       "not declared (additionalProperties is false)");
    }
    const CallCheck c =
        check_value(s.properties[size_t(it - s.property_names.begin())], member, member_path(path, key));
    if (c.violation != Violation::ok) return c;
  }
  for (size_t i = 0; i < s.property_names.size(); ++i) {
    if (s.required[i] && !value.contains(s.property_names[i])) {
      return violation(Violation::missing_argument, path, "missing required " + json_quoted(s.property_names[i]));
    }
  }
  return {};
}

CallCheck check_value(const Schema& s, const Json& value, const std::string& path) {
  if (!matches_type(value, s.type)) {
    return violation(
        Violation::wrong_type, path,
        std::string("expected ") + json_type_name(s.type) + ", got " + json_type_name(json_type_of(value)));
  }
  if (!s.literals.empty() && !is_literal(s, value)) {
    return violation(Violation::not_in_enum, path, shown(value) + " is not " + literal_list(s));
  }
  switch (s.type) {
    case JsonType::integer:
    case JsonType::number:
      return check_number(s, value, path);
    case JsonType::string: {
      const std::string& text = value.get_ref<const std::string&>();
      return check_count(code_points(text), "characters", s.min_length, s.max_length, "minLength", "maxLength", path);
    }
    case JsonType::array:
      return check_array(s, value, path);
    case JsonType::object:
      return check_object(s, value, path);
    default:
      return {};
  }
}

}  // namespace

const char* violation_name(Violation v) {
  switch (v) {
    case Violation::ok:
      return "ok";
    case Violation::unparseable_json:
      return "unparseable_json";
    case Violation::unknown_tool:
      return "unknown_tool";
    case Violation::missing_argument:
      return "missing_argument";
    case Violation::unknown_argument:
      return "unknown_argument";
    case Violation::wrong_type:
      return "wrong_type";
    case Violation::out_of_range:
      return "out_of_range";
    case Violation::not_in_enum:
      return "not_in_enum";
  }
  return "?";
}

CallCheck validate_call(const ToolList& tools, const Call& call) {
  const Tool* tool = tools.find(call.name);
  if (!tool) return {Violation::unknown_tool, "name: " + json_quoted(call.name) + " is not a listed tool"};
  Json arguments;
  try {
    arguments = parse_json_limited(call.arguments, "arguments", kMaxArgumentsBytes);
  } catch (const Error& e) {
    return {Violation::unparseable_json, e.what()};
  }
  return check_value(tool->parameters, arguments, "arguments");
}

}  // namespace cact::chat
