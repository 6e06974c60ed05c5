#include "chat/schema_parse.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>

#include "cact/error.h"

namespace cact::chat {

namespace {

constexpr std::array<JsonType, 7> kAllTypes = {JsonType::string, JsonType::integer, JsonType::number, JsonType::boolean,
                                               JsonType::null,   JsonType::array,   JsonType::object};

// A supported keyword and the types it applies to (a keyword given for another
// type would be silently meaningless, so it is refused).
struct Keyword {
  std::string_view name;
  bool (*applies)(JsonType);
};
bool any_type(JsonType) { return true; }
bool numeric(JsonType t) { return t == JsonType::integer || t == JsonType::number; }
bool string_only(JsonType t) { return t == JsonType::string; }
bool array_only(JsonType t) { return t == JsonType::array; }
bool object_only(JsonType t) { return t == JsonType::object; }

constexpr Keyword kKeywords[] = {
    {"type", any_type},
    {"enum", any_type},
    {"const", any_type},
    {"minimum", numeric},
    {"maximum", numeric},
    {"exclusiveMinimum", numeric},
    {"exclusiveMaximum", numeric},
    {"minLength", string_only},
    {"maxLength", string_only},
    {"items", array_only},
    {"minItems", array_only},
    {"maxItems", array_only},
    {"properties", object_only},
    {"required", object_only},
    {"additionalProperties", object_only},
};
// Accepted and ignored: they describe, they do not constrain.
constexpr std::string_view kAnnotations[] = {"description", "title", "default", "examples", "$comment"};

const Keyword* find_keyword(std::string_view name) {
  for (const Keyword& k : kKeywords) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

bool is_annotation(std::string_view name) {
  return std::find(std::begin(kAnnotations), std::end(kAnnotations), name) != std::end(kAnnotations);
}

// Parses one node; its messages name `context` and `path`.
class NodeParser {
 public:
  NodeParser(const Json& node, const std::string& context, const std::string& path)
      : node_(node), context_(context), path_(path) {}

  Schema parse() {
    if (!node_.is_object()) fail_here("a schema must be a JSON object, got " + std::string(node_.type_name()));
    for (const auto& [key, value] : node_.items()) {
      if (!find_keyword(key) && !is_annotation(key)) {
        fail_here("unsupported keyword " + json_quoted(key) + " (the constrained decoder cannot enforce it)");
      }
    }
    Schema s;
    s.literals = collect_literals();
    s.type = declared_type(s.literals);
    for (const auto& [key, value] : node_.items()) {
      const Keyword* k = find_keyword(key);
      if (k && !k->applies(s.type))
        fail_here("keyword " + json_quoted(key) + " does not apply to type " + json_type_name(s.type));
    }
    for (const Json& literal : literals_json_) {
      if (!matches_type(literal, s.type)) {
        fail_here(literal_keyword() + " value " + compact(literal) + " is not of type " + json_type_name(s.type));
      }
    }
    switch (s.type) {
      case JsonType::integer:
      case JsonType::number:
        parse_number_bounds(s);
        break;
      case JsonType::string:
        parse_length_bounds(s);
        break;
      case JsonType::array:
        parse_array(s);
        break;
      case JsonType::object:
        parse_object(s);
        break;
      default:
        break;
    }
    return s;
  }

 private:
  [[noreturn]] void fail_here(const std::string& what) const { fail(context_ + ": " + path_ + ": " + what); }

  const Json* get(std::string_view key) const {
    const auto it = node_.find(std::string(key));
    return it == node_.end() ? nullptr : &*it;
  }

  std::string literal_keyword() const { return get("enum") ? "enum" : "const"; }

  std::vector<std::string> collect_literals() {
    const Json* enum_values = get("enum");
    const Json* const_value = get("const");
    if (enum_values && const_value) fail_here("give either \"enum\" or \"const\", not both");
    if (enum_values) {
      if (!enum_values->is_array() || enum_values->empty()) fail_here("\"enum\" must be a non-empty list of values");
      for (const Json& v : *enum_values) literals_json_.push_back(v);
    } else if (const_value) {
      literals_json_.push_back(*const_value);
    }
    std::vector<std::string> texts;
    for (const Json& v : literals_json_) texts.push_back(compact(v));
    return texts;
  }

  JsonType declared_type(const std::vector<std::string>& literal_texts) const {
    const Json* type = get("type");
    if (!type) return type_of_literals(literal_texts);
    if (type->is_array()) fail_here("\"type\" must be one type name (a list of types is not supported)");
    if (!type->is_string()) fail_here("\"type\" must be a string, got " + std::string(type->type_name()));
    const std::string& name = type->get_ref<const std::string&>();
    for (JsonType t : kAllTypes) {
      if (name == json_type_name(t)) return t;
    }
    fail_here("unknown type " + json_quoted(name));
  }

  // "type" omitted: the one type all enum/const values share (integers and
  // other numbers together are numbers).
  JsonType type_of_literals(const std::vector<std::string>& literal_texts) const {
    if (literals_json_.empty()) fail_here("missing \"type\" (it may be omitted only with \"enum\" or \"const\")");
    JsonType common = json_type_of(literals_json_.front());
    for (size_t i = 1; i < literals_json_.size(); ++i) {
      const JsonType t = json_type_of(literals_json_[i]);
      if (t == common) continue;
      if (numeric(t) && numeric(common)) {
        common = JsonType::number;
        continue;
      }
      fail_here("\"type\" is omitted but the " + literal_keyword() + " values " + literal_texts.front() + " and " +
                literal_texts[i] + " are of different types");
    }
    return common;
  }

  double number(std::string_view key, const Json& v) const {
    if (v.is_boolean() && key.starts_with("exclusive")) {
      fail_here(json_quoted(key) + " must be a number (the boolean form of draft 4 is not supported)");
    }
    if (!v.is_number()) fail_here(json_quoted(key) + " must be a number, got " + std::string(v.type_name()));
    return v.get<double>();  // finite: the parser refuses numbers beyond a double's range
  }

  // One side of the range: the inclusive and exclusive keywords together keep
  // the stricter bound. `lower`: minimum side.
  void parse_bound(std::string_view inclusive_key, std::string_view exclusive_key, bool lower,
                   std::optional<double>& bound, bool& exclusive) const {
    if (const Json* v = get(inclusive_key)) bound = number(inclusive_key, *v);
    if (const Json* v = get(exclusive_key)) {
      const double e = number(exclusive_key, *v);
      if (!bound || (lower ? e >= *bound : e <= *bound)) {
        bound = e;
        exclusive = true;
      }
    }
  }

  void parse_number_bounds(Schema& s) const {
    parse_bound("minimum", "exclusiveMinimum", true, s.minimum, s.exclusive_minimum);
    parse_bound("maximum", "exclusiveMaximum", false, s.maximum, s.exclusive_maximum);
    if (!s.minimum || !s.maximum) return;
    double lo = *s.minimum, hi = *s.maximum;
    bool empty = lo > hi || (lo == hi && (s.exclusive_minimum || s.exclusive_maximum));
    if (s.type == JsonType::integer) {
      lo = s.exclusive_minimum ? std::floor(lo) + 1 : std::ceil(lo);
      hi = s.exclusive_maximum ? std::ceil(hi) - 1 : std::floor(hi);
      empty = lo > hi;
    }
    if (empty) {
      fail_here(std::string("no ") + json_type_name(s.type) + " lies between the lower bound " +
                bound_text(*s.minimum) + " and the upper bound " + bound_text(*s.maximum));
    }
  }

  uint32_t count(std::string_view key, const Json& v) const {
    const bool integral = v.is_number() && json_type_of(v) == JsonType::integer;
    if (!integral || v.get<double>() < 0 || v.get<double>() > double(std::numeric_limits<uint32_t>::max())) {
      fail_here(json_quoted(key) + " must be a non-negative integer below 2^32, got " + compact(v));
    }
    return v.get<uint32_t>();
  }

  // A minimum and an optional maximum count (minLength/maxLength, minItems/maxItems).
  void parse_counts(std::string_view min_key, std::string_view max_key, uint32_t& min,
                    std::optional<uint32_t>& max) const {
    if (const Json* v = get(min_key)) min = count(min_key, *v);
    if (const Json* v = get(max_key)) max = count(max_key, *v);
    if (max && min > *max) {
      fail_here(json_quoted(min_key) + " " + std::to_string(min) + " is above " + json_quoted(max_key) + " " +
                std::to_string(*max));
    }
  }

  void parse_length_bounds(Schema& s) const { parse_counts("minLength", "maxLength", s.min_length, s.max_length); }

  void parse_array(Schema& s) const {
    parse_counts("minItems", "maxItems", s.min_items, s.max_items);
    const Json* items = get("items");
    if (!items) fail_here("an array schema needs \"items\"");
    if (items->is_array()) fail_here("\"items\" must be one schema (a list of item schemas is not supported)");
    s.items.push_back(parse_schema(*items, context_, path_ + ".items"));
  }

  void parse_object(Schema& s) const {
    if (const Json* properties = get("properties")) {
      if (!properties->is_object()) fail_here("\"properties\" must be an object");
      for (const auto& [name, schema] : properties->items()) {
        s.property_names.push_back(name);
        s.properties.push_back(parse_schema(schema, context_, member_path(path_ + ".properties", name)));
      }
    }
    s.required.assign(s.properties.size(), false);
    if (const Json* required = get("required")) {
      if (!required->is_array()) fail_here("\"required\" must be a list of property names");
      for (const Json& name : *required) {
        if (!name.is_string()) fail_here("\"required\" holds " + compact(name) + ", not a property name");
        const auto it = std::find(s.property_names.begin(), s.property_names.end(), name.get_ref<const std::string&>());
        if (it == s.property_names.end())
          fail_here("\"required\" names " + compact(name) + ", which is not a property");
        const size_t index = size_t(it - s.property_names.begin());
        if (s.required[index]) fail_here("\"required\" names " + compact(name) + " twice");
        s.required[index] = true;
      }
    }
    if (const Json* additional = get("additionalProperties")) {
      if (!additional->is_boolean())
        fail_here("\"additionalProperties\" must be true or false (a schema is not supported)");
      s.additional_properties = additional->get<bool>();
    }
  }

  const Json& node_;
  const std::string& context_;
  const std::string& path_;
  std::vector<Json> literals_json_;
};

}  // namespace

Schema parse_schema(const Json& node, const std::string& context, const std::string& path) {
  return NodeParser(node, context, path).parse();
}

JsonType json_type_of(const Json& value) {
  switch (value.type()) {
    case Json::value_t::string:
      return JsonType::string;
    case Json::value_t::boolean:
      return JsonType::boolean;
    case Json::value_t::null:
      return JsonType::null;
    case Json::value_t::array:
      return JsonType::array;
    case Json::value_t::object:
      return JsonType::object;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return JsonType::integer;
    case Json::value_t::number_float: {
      const double d = value.get<double>();
      return std::isfinite(d) && std::floor(d) == d ? JsonType::integer : JsonType::number;
    }
    default:
      fail("a JSON value of no JSON Schema type");  // binary / discarded: never parsed from text
  }
}

bool matches_type(const Json& value, JsonType type) {
  const JsonType actual = json_type_of(value);
  return actual == type || (type == JsonType::number && actual == JsonType::integer);
}

std::string bound_text(double bound) {
  if (std::floor(bound) == bound && std::fabs(bound) < 1e15) return std::to_string(int64_t(bound));
  char buf[32];
  const auto result = std::to_chars(buf, buf + sizeof buf, bound);
  return std::string(buf, result.ptr);
}

std::string member_path(const std::string& path, std::string_view key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '$';
  });
  return plain ? path + "." + std::string(key) : path + "[" + json_quoted(key) + "]";
}

}  // namespace cact::chat
