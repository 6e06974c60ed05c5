// Tool lists (the Schema subset, every refusal, the compact rendering the model
// was trained on), answer parsing and call validation, against hand-written
// cases and the bundled tool model's files (models/tools/).
#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "cact/error.h"
#include "cact/json_input.h"
#include "cact/tools.h"
#include "support/test_paths.h"

using namespace cact::chat;

namespace {

const char* const kOrigin = "--tools t.json";

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::filesystem::path tools_dir() { return cact::test::models_dir() / "tools"; }

// The cact::Error message `f` throws ("" and a failed check when it does not).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const cact::Error& e) {
    return e.what();
  }
  FAIL_CHECK("no cact::Error thrown");
  return "";
}

std::string list_error(std::string_view json) {
  return error_of([&] { parse_tool_list(json, kOrigin); });
}

// A one-tool list whose parameters are `parameters` (a JSON text).
std::string one_tool(const std::string& parameters) {
  return R"([{"name":"set_timer","description":"Start a countdown timer.","parameters":)" + parameters + "}]";
}
// A one-tool list with one property "minutes" of schema `property`.
std::string one_property(const std::string& property) {
  return one_tool(R"({"type":"object","properties":{"minutes":)" + property + "}}");
}

struct Conversation {
  Json tools;
  std::vector<std::string> answers;
  std::vector<bool> valid;
};

std::vector<Conversation> expected_conversations() {
  std::ifstream in(tools_dir() / "expected.jsonl");
  REQUIRE(in.good());
  std::vector<Conversation> out;
  std::string line;
  while (std::getline(in, line)) {
    const Json j = Json::parse(line);
    Conversation c{j.at("tools"), {}, {}};
    for (const Json& a : j.at("answers")) c.answers.push_back(a.get<std::string>());
    for (const Json& v : j.at("valid")) c.valid.push_back(v.get<bool>());
    REQUIRE(c.answers.size() == c.valid.size());
    out.push_back(std::move(c));
  }
  REQUIRE(out.size() == 100);
  return out;
}

std::string nested(const std::string& open, const std::string& close, size_t depth) {
  std::string s;
  for (size_t i = 0; i < depth; ++i) s += open;
  s += "1";
  for (size_t i = 0; i < depth; ++i) s += close;
  return s;
}

}  // namespace

TEST_CASE("parse_json_limited: NUL, depth, size, duplicate keys, syntax") {
  CHECK(parse_json_limited(R"({"a":[1,2]})", "x", 100).at("a").size() == 2);
  // nlohmann alone stops at NUL and returns [1]; the rest must not be ignored.
  CHECK(error_of([] { parse_json_limited(std::string("[1]\0[2]", 7), "req", 100); }) ==
        "req: NUL byte at offset 3 (not allowed in JSON text)");
  CHECK(error_of([] { parse_json_limited(std::string("[\"a\0b\"]", 7), "req", 100); }).starts_with("req: NUL byte"));

  const size_t deep = kMaxJsonDepth;
  CHECK_NOTHROW(parse_json_limited(nested("[", "]", deep), "x", 1 << 20));
  CHECK(error_of([&] { parse_json_limited(nested("[", "]", deep + 1), "x", 1 << 20); }) ==
        "x: JSON nested deeper than 64 levels");
  CHECK_NOTHROW(parse_json_limited(nested("{\"a\":", "}", deep), "x", 1 << 20));
  CHECK(error_of([&] {
          parse_json_limited(nested("{\"a\":", "}", deep + 1), "x", 1 << 20);
        }).starts_with("x: JSON nested deeper"));
  // 100 000 levels: refused while parsing, never recursed into.
  for (const auto& [open, close] : {std::pair{"[", "]"}, std::pair{"{\"k\":", "}"}}) {
    const std::string doc = nested(open, close, 100000);
    CHECK(error_of([&] { parse_json_limited(doc, "deep", 1 << 24); }) == "deep: JSON nested deeper than 64 levels");
    CHECK(error_of([&] {
            parse_json_limited(doc.substr(0, doc.size() / 2), "deep", 1 << 24);
          }).starts_with("deep: JSON nested"));
  }
  CHECK(list_error(nested("[", "]", 100000)) == "--tools t.json: JSON nested deeper than 64 levels");

  CHECK(error_of([] { parse_json_limited("[1,2]", "x", 4); }) == "x: 5 bytes of JSON, more than the limit of 4");
  CHECK_NOTHROW(parse_json_limited("[1,2]", "x", 5));
  CHECK(error_of([] { parse_json_limited(R"({"a":1,"b":{"a":2,"a":3}})", "x", 100); }) ==
        "x: key \"a\" appears more than once in one object");
  CHECK_NOTHROW(parse_json_limited(R"([{"a":1},{"a":2}])", "x", 100));
  const std::string syntax = error_of([] { parse_json_limited("[1,", "x", 100); });
  CHECK(syntax.starts_with("x: invalid JSON: parse error at line 1, column 4"));
  CHECK(syntax.find("[json.exception") == std::string::npos);
  CHECK(error_of([] { parse_json_limited("[1] [2]", "x", 100); }).starts_with("x: invalid JSON"));
  CHECK(error_of([] { parse_json_limited("\"\xff\"", "x", 100); }).starts_with("x: invalid JSON"));
  CHECK(error_of([] { parse_json_limited("[1e999]", "x", 100); }) ==
        "x: invalid JSON: number overflow parsing '1e999'");
}

TEST_CASE("parse_tool_list: every supported keyword") {
  const ToolList list = parse_tool_list(R"([{"name":"everything","description":"All keywords.","parameters":{
    "type":"object","title":"T","$comment":"c","description":"d",
    "properties":{
      "s":{"type":"string","minLength":1,"maxLength":5,"description":"x","default":"a","examples":["ab"]},
      "i":{"type":"integer","minimum":-3,"maximum":100.0},
      "n":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1.5},
      "b":{"type":"boolean"},
      "z":{"type":"null"},
      "e":{"enum":["celsius","fahrenheit"]},
      "c":{"const":3},
      "m":{"enum":[1,2.5]},
      "a":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":3},
      "o":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}
    },
    "required":["s","i"],"additionalProperties":false}}])",
                                        kOrigin);
  REQUIRE(list.tools.size() == 1);
  const Tool& tool = list.tools[0];
  CHECK(tool.name == "everything");
  CHECK(tool.description == "All keywords.");
  const Schema& p = tool.parameters;
  CHECK(p.type == JsonType::object);
  CHECK_FALSE(p.additional_properties);
  CHECK(p.property_names == std::vector<std::string>{"s", "i", "n", "b", "z", "e", "c", "m", "a", "o"});
  CHECK(p.required == std::vector<bool>{true, true, false, false, false, false, false, false, false, false});
  const Schema& s = p.properties[0];
  CHECK(s.type == JsonType::string);
  CHECK(s.min_length == 1);
  CHECK(s.max_length == 5u);
  const Schema& i = p.properties[1];
  CHECK(i.type == JsonType::integer);
  CHECK(i.minimum == -3.0);
  CHECK(i.maximum == 100.0);
  CHECK_FALSE(i.exclusive_minimum);
  CHECK_FALSE(i.exclusive_maximum);
  const Schema& n = p.properties[2];
  CHECK(n.type == JsonType::number);
  CHECK(n.minimum == 0.0);
  CHECK(n.maximum == 1.5);
  CHECK(n.exclusive_minimum);
  CHECK(n.exclusive_maximum);
  CHECK(p.properties[3].type == JsonType::boolean);
  CHECK(p.properties[4].type == JsonType::null);
  const Schema& e = p.properties[5];
  CHECK(e.type == JsonType::string);  // inferred from the enum
  CHECK(e.literals == std::vector<std::string>{"\"celsius\"", "\"fahrenheit\""});
  CHECK(p.properties[6].type == JsonType::integer);
  CHECK(p.properties[6].literals == std::vector<std::string>{"3"});
  CHECK(p.properties[7].type == JsonType::number);  // integers and other numbers together
  const Schema& a = p.properties[8];
  CHECK(a.type == JsonType::array);
  REQUIRE(a.items.size() == 1);
  CHECK(a.items[0].type == JsonType::string);
  CHECK(a.min_items == 1);
  CHECK(a.max_items == 3u);
  const Schema& o = p.properties[9];
  CHECK(o.property_names == std::vector<std::string>{"x"});
  CHECK(o.required == std::vector<bool>{true});
  CHECK_FALSE(o.additional_properties);
  CHECK(list.find("everything") == &tool);
  CHECK(list.find("nothing") == nullptr);

  // Both an inclusive and an exclusive bound: the stricter one is kept.
  const ToolList both = parse_tool_list(
      one_property(R"({"type":"number","minimum":0,"exclusiveMinimum":0,"maximum":5,"exclusiveMaximum":9})"), kOrigin);
  const Schema& m = both.tools[0].parameters.properties[0];
  CHECK(m.minimum == 0.0);
  CHECK(m.exclusive_minimum);
  CHECK(m.maximum == 5.0);
  CHECK_FALSE(m.exclusive_maximum);
  // An object property without "properties" and with defaults.
  const ToolList bare = parse_tool_list(one_property(R"({"type":"object"})"), kOrigin);
  const Schema& plain = bare.tools[0].parameters.properties[0];
  CHECK(plain.properties.empty());
  CHECK(plain.additional_properties);
}

TEST_CASE("parse_tool_list: the OpenAI wrapper, no parameters, an empty list, json_type_name") {
  const ToolList wrapped = parse_tool_list(
      R"([{"type":"function","function":{"name":"a","parameters":{"type":"object"}}},{"name":"b","description":"é"}])",
      kOrigin);
  REQUIRE(wrapped.tools.size() == 2);
  CHECK(wrapped.compact_json == R"([{"name":"a","parameters":{"type":"object"}},{"name":"b","description":"é"}])");
  // No "parameters": a tool that takes no arguments.
  const Tool& b = wrapped.tools[1];
  CHECK(b.parameters.type == JsonType::object);
  CHECK(b.parameters.properties.empty());
  CHECK_FALSE(b.parameters.additional_properties);
  CHECK(validate_call(wrapped, {"b", "{}"}).violation == Violation::ok);
  CHECK(validate_call(wrapped, {"b", R"({"x":1})"}).violation == Violation::unknown_argument);

  const ToolList empty = parse_tool_list(" [ ] ", kOrigin);
  CHECK(empty.empty());
  CHECK(empty.compact_json == "[]");

  const char* names[] = {"string", "integer", "number", "boolean", "null", "array", "object"};
  for (int t = 0; t < 7; ++t) CHECK(std::string(json_type_name(JsonType(t))) == names[t]);
}

TEST_CASE("parse_tool_list: every refusal names the origin, the tool and the field") {
  CHECK(list_error(R"({"name":"a"})") == "--tools t.json: a tool list must be a JSON list of tools, got object");
  CHECK(list_error("[1]") == "--tools t.json: tool 1: a tool must be a JSON object, got number");
  CHECK(list_error(R"([{"name":"a"},{"name":"b"},{"name":"a"}])") ==
        "--tools t.json: tool name \"a\" appears more than once");
  CHECK(list_error(one_tool(R"({"type":"object","properties":{"town":{"type":"string"}},"required":["city"]})")) ==
        "--tools t.json: tool \"set_timer\": parameters: \"required\" names \"city\", which is not a property");
  CHECK(list_error(one_property(R"({"type":"string","pattern":"^[0-9]+$"})")) ==
        "--tools t.json: tool \"set_timer\": parameters.properties.minutes: unsupported keyword \"pattern\" (the "
        "constrained decoder cannot enforce it)");
  for (const char* keyword : {"format", "anyOf", "oneOf", "allOf", "not", "$ref", "$defs", "patternProperties",
                              "multipleOf", "uniqueItems", "if", "propertyNames", "contains", "prefixItems"}) {
    CAPTURE(keyword);
    const std::string message = list_error(one_property(R"({"type":"string",")" + std::string(keyword) + R"(":1})"));
    CHECK(message ==
          std::string("--tools t.json: tool \"set_timer\": parameters.properties.minutes: unsupported keyword \"") +
              keyword + "\" (the constrained decoder cannot enforce it)");
  }
  CHECK(list_error(one_property(R"({"type":["string","null"]})")) ==
        "--tools t.json: tool \"set_timer\": parameters.properties.minutes: \"type\" must be one type name (a list of "
        "types is "
        "not supported)");
  CHECK(list_error(std::string("[{\"name\":\"a\"}]\0[]", 17)) ==
        "--tools t.json: NUL byte at offset 14 (not allowed in JSON text)");
  CHECK(list_error(std::string("[{\"name\":\"a\0\"}]", 15)).starts_with("--tools t.json: NUL byte"));

  // Each of these: {schema of "minutes" or of parameters, the end of the message}.
  const std::vector<std::pair<std::string, std::string>> property_cases = {
      {R"({"type":"string","minLength":-1})", "\"minLength\" must be a non-negative integer below 2^32, got -1"},
      {R"({"type":"string","minLength":1.5})", "\"minLength\" must be a non-negative integer below 2^32, got 1.5"},
      {R"({"type":"string","maxLength":"3"})", "\"maxLength\" must be a non-negative integer below 2^32, got \"3\""},
      {R"({"type":"array","items":{"type":"string"},"maxItems":4294967296})",
       "\"maxItems\" must be a non-negative integer below 2^32, got 4294967296"},
      {R"({"type":"string","minLength":5,"maxLength":3})", "\"minLength\" 5 is above \"maxLength\" 3"},
      {R"({"type":"array","items":{"type":"string"},"minItems":2,"maxItems":1})",
       "\"minItems\" 2 is above \"maxItems\" 1"},
      {R"({"type":"integer","minimum":10,"maximum":1})",
       "no integer lies between the lower bound 10 and the upper bound 1"},
      {R"({"type":"integer","minimum":1.2,"maximum":1.8})",
       "no integer lies between the lower bound 1.2 and the upper bound 1.8"},
      {R"({"type":"number","exclusiveMinimum":1,"maximum":1})",
       "no number lies between the lower bound 1 and the upper bound 1"},
      {R"({"type":"number","minimum":"0"})", "\"minimum\" must be a number, got string"},
      {R"({"type":"number","exclusiveMinimum":true})",
       "\"exclusiveMinimum\" must be a number (the boolean form of draft 4 is not supported)"},
      {R"({"type":"array"})", "an array schema needs \"items\""},
      {R"({"type":"array","items":[{"type":"string"}]})",
       "\"items\" must be one schema (a list of item schemas is not supported)"},
      {R"({"type":"object","additionalProperties":{"type":"string"}})",
       "\"additionalProperties\" must be true or false (a schema is not supported)"},
      {R"({"type":"object","properties":[]})", "\"properties\" must be an object"},
      {R"({"type":"object","properties":{"a":{"type":"string"}},"required":"a"})",
       "\"required\" must be a list of property names"},
      {R"({"type":"object","properties":{"a":{"type":"string"}},"required":[1]})",
       "\"required\" holds 1, not a property name"},
      {R"({"type":"object","properties":{"a":{"type":"string"}},"required":["a","a"]})",
       "\"required\" names \"a\" twice"},
      {R"({"type":"string","enum":[]})", "\"enum\" must be a non-empty list of values"},
      {R"({"type":"string","enum":"a"})", "\"enum\" must be a non-empty list of values"},
      {R"({"type":"string","enum":["a",1]})", "enum value 1 is not of type string"},
      {R"({"type":"integer","const":1.5})", "const value 1.5 is not of type integer"},
      {R"({"enum":["a"],"const":"a"})", "give either \"enum\" or \"const\", not both"},
      {R"({"description":"no type"})", "missing \"type\" (it may be omitted only with \"enum\" or \"const\")"},
      {R"({"enum":["a",1]})", "\"type\" is omitted but the enum values \"a\" and 1 are of different types"},
      {R"({"type":"float"})", "unknown type \"float\""},
      {R"({"type":1})", "\"type\" must be a string, got number"},
      {R"({"type":"integer","minLength":1})", "keyword \"minLength\" does not apply to type integer"},
      {R"({"type":"string","minimum":1})", "keyword \"minimum\" does not apply to type string"},
      {R"({"type":"string","items":{"type":"string"}})", "keyword \"items\" does not apply to type string"},
      {R"({"type":"array","items":{"type":"string"},"required":[]})",
       "keyword \"required\" does not apply to type array"},
      {"true", "a schema must be a JSON object, got boolean"},
  };
  for (const auto& [schema, message] : property_cases) {
    CAPTURE(schema);
    CHECK(list_error(one_property(schema)) ==
          "--tools t.json: tool \"set_timer\": parameters.properties.minutes: " + message);
  }
  CHECK(list_error(one_property(R"({"type":"array","items":{"type":"string","format":"date"}})")) ==
        "--tools t.json: tool \"set_timer\": parameters.properties.minutes.items: unsupported keyword \"format\" (the "
        "constrained "
        "decoder cannot enforce it)");
  CHECK(list_error(one_tool(R"({"type":"object","properties":{"a b":{"type":"str"}}})")) ==
        "--tools t.json: tool \"set_timer\": parameters.properties[\"a b\"]: unknown type \"str\"");

  const std::vector<std::pair<std::string, std::string>> tool_cases = {
      {R"([{"description":"x"}])", "tool 1: missing \"name\""},
      {R"([{"name":""}])", "tool 1: \"name\" must be a non-empty string"},
      {R"([{"name":7}])", "tool 1: \"name\" must be a non-empty string"},
      {R"([{"name":"a","description":7}])", "tool \"a\": \"description\" must be a string"},
      {R"([{"name":"a","strict":true}])",
       "tool 1: unknown key \"strict\" (a tool has \"name\", \"description\" and \"parameters\")"},
      {R"([{"name":"a","parameters":{"type":"string"}}])",
       "tool \"a\": parameters: must be of type object, not string"},
      {R"([{"name":"a","parameters":[]}])", "tool \"a\": parameters: a schema must be a JSON object, got array"},
      {R"([{"type":"tool","function":{"name":"a"}}])", "tool 1: a \"function\" wrapper needs \"type\": \"function\""},
      {R"([{"function":{"name":"a"}}])", "tool 1: a \"function\" wrapper needs \"type\": \"function\""},
      {R"([{"type":"function","function":"a"}])", "tool 1: \"function\" must be a JSON object, got string"},
      {R"([{"type":"function","function":{"name":"a"},"name":"a"}])",
       "tool 1: unknown key \"name\" beside \"function\" (the wrapper is {\"type\":\"function\",\"function\":{...}})"},
      {R"([{"name":"a"},{"type":"function","function":{"name":"a"}}])", "tool name \"a\" appears more than once"},
      {R"([{"name":"a","name":"b"}])", "key \"name\" appears more than once in one object"},
      {"[{\"name\":\"a\"}",
       "invalid JSON: parse error at line 1, column 14: syntax error while parsing array - unexpected "
       "end of input; expected ']'"},
  };
  for (const auto& [json, message] : tool_cases) {
    CAPTURE(json);
    CHECK(list_error(json) == "--tools t.json: " + message);
  }
}

TEST_CASE("compact_json: tools.json and every list of expected.jsonl, byte for byte") {
  std::string file = read_text(tools_dir() / "tools.json");
  REQUIRE(file.ends_with("\n"));
  file.pop_back();
  const ToolList demo = parse_tool_list(file, "tools.json");
  CHECK(demo.tools.size() == 5);
  CHECK(demo.compact_json == file);
  // A pretty-printed copy is a different prompt: it renders to the same bytes.
  CHECK(parse_tool_list(Json::parse(file).dump(2), "pretty").compact_json == file);
  // The catalog is pretty-printed; its compact form is what the model saw.
  const std::string catalog_text = read_text(tools_dir() / "catalog.json");
  const ToolList catalog = parse_tool_list(catalog_text, "catalog.json");
  CHECK(catalog.tools.size() == 10);
  CHECK(catalog.compact_json == Json::parse(catalog_text).dump());
  CHECK(catalog.compact_json.find('\n') == std::string::npos);

  size_t lists = 0;
  for (const Conversation& c : expected_conversations()) {
    const std::string python_compact = c.tools.dump();  // json.dumps(separators=(',',':')) for ASCII text
    CHECK(parse_tool_list(python_compact, "expected.jsonl").compact_json == python_compact);
    CHECK(parse_tool_list(c.tools.dump(4), "expected.jsonl").compact_json == python_compact);
    ++lists;
  }
  CHECK(lists == 100);
}

TEST_CASE("parse_answer and validate_call on every answer of expected.jsonl") {
  size_t answers = 0, with_calls = 0, unknown = 0;
  for (const Conversation& c : expected_conversations()) {
    const ToolList list = parse_tool_list(c.tools.dump(), "expected.jsonl");
    for (size_t i = 0; i < c.answers.size(); ++i) {
      const std::string& answer = c.answers[i];
      CAPTURE(answer);
      ++answers;
      const ParsedAnswer parsed = parse_answer(answer);
      CHECK(parsed.call_json.empty());
      const size_t open = answer.find("<tool_call>");
      if (open == std::string::npos) {
        CHECK_FALSE(parsed.has_call_block);
        CHECK(parsed.calls.empty());
        CHECK(parsed.raw_calls.empty());
        CHECK_FALSE(parsed.text.empty());
        const size_t think_end = answer.find("</think>");
        if (think_end == std::string::npos) {
          CHECK(parsed.reasoning.empty());
          CHECK(parsed.text == answer);
        } else {
          CHECK(parsed.reasoning == answer.substr(7, think_end - 7));
          CHECK(parsed.text == answer.substr(think_end + 9));  // past "</think>\n"
        }
        CHECK(c.valid[i]);
        continue;
      }
      ++with_calls;
      CHECK(parsed.has_call_block);
      CHECK(parsed.text.empty());
      CHECK(parsed.reasoning.starts_with("Use "));
      const size_t body = open + 11, close = answer.find("</tool_call>");
      CHECK(parsed.raw_calls == answer.substr(body, close - body));
      REQUIRE(parsed.calls.size() == 1);
      const Call& call = parsed.calls[0];
      // The arguments as the model wrote them (compact, key order kept).
      CHECK(answer.find("\"arguments\":" + call.arguments + "}") != std::string::npos);
      const CallCheck check = validate_call(list, call);
      if (c.valid[i]) {
        CHECK(check.violation == Violation::ok);
        CHECK(check.message.empty());
      } else {
        ++unknown;
        CHECK(check.violation == Violation::unknown_tool);
        CHECK(check.message == "name: \"" + call.name + "\" is not a listed tool");
      }
    }
  }
  CHECK(answers == 152);
  CHECK(with_calls == 96);
  CHECK(unknown == 5);
}

TEST_CASE("parse_answer: truncated answers at every byte never throw") {
  const std::string answer =
      "<think>Use set_timer.</think>\n<tool_call>[{\"name\":\"set_timer\",\"arguments\":{\"minutes\":10}}]</tool_call>";
  const size_t open = answer.find("<tool_call>"), close = answer.find("</tool_call>");
  for (size_t cut = 0; cut <= answer.size(); ++cut) {
    CAPTURE(cut);
    const ParsedAnswer p = parse_answer(std::string_view(answer).substr(0, cut));
    if (cut < open + 11) {
      CHECK_FALSE(p.has_call_block);
      CHECK(p.calls.empty());
    } else if (cut < close + 12) {
      CHECK(p.has_call_block);
      CHECK(p.calls.empty());
      REQUIRE(p.call_json.size() == 1);
      CHECK(p.call_json[0].violation == Violation::unparseable_json);
      CHECK(p.call_json[0].message == "<tool_call> block 1: not closed by </tool_call>");
      CHECK(p.raw_calls == answer.substr(open + 11, cut - open - 11));
    } else {
      CHECK(p.calls.size() == 1);
      CHECK(p.call_json.empty());
    }
  }
  // Cut inside <think>: the reasoning so far, no text.
  const ParsedAnswer thinking = parse_answer("<think>Use set_");
  CHECK(thinking.reasoning == "Use set_");
  CHECK(thinking.text.empty());
  CHECK_FALSE(thinking.has_call_block);
}

TEST_CASE("parse_answer: garbled call blocks, several blocks, text around them") {
  const auto block_error = [](const std::string& body) {
    const ParsedAnswer p = parse_answer("<tool_call>" + body + "</tool_call>");
    CHECK(p.has_call_block);
    CHECK(p.calls.empty());
    CHECK(p.raw_calls == body);
    REQUIRE(p.call_json.size() == 1);
    CHECK(p.call_json[0].violation == Violation::unparseable_json);
    return p.call_json[0].message;
  };
  CHECK(block_error(R"({"name":"a","arguments":{}})") ==
        "<tool_call> block 1: expected a JSON list of calls, got object");
  CHECK(block_error("[]") == "<tool_call> block 1: the list of calls is empty");
  CHECK(block_error(R"([{"name":"a"}])") == "<tool_call> block 1: call 1: \"arguments\" must be a JSON object");
  CHECK(block_error(R"([{"name":"a","arguments":[]}])") ==
        "<tool_call> block 1: call 1: \"arguments\" must be a JSON object");
  CHECK(block_error(R"([{"name":1,"arguments":{}}])") == "<tool_call> block 1: call 1: \"name\" must be a string");
  CHECK(block_error(R"([{"name":"a","arguments":{}},7])") ==
        "<tool_call> block 1: call 2: a call must be a JSON object, got number");
  CHECK(block_error(R"([{"name":"a","arguments":{},"id":"c1"}])") ==
        "<tool_call> block 1: call 1: unknown key \"id\" (a call has \"name\" and \"arguments\")");
  CHECK(block_error("set_timer(10)").starts_with("<tool_call> block 1: invalid JSON: parse error"));
  CHECK(block_error(R"([{"name":"a","arguments":{"x":1,"x":2}}])") ==
        "<tool_call> block 1: key \"x\" appears more than once in one object");
  CHECK(block_error(std::string("[{\"name\":\"a\0\",\"arguments\":{}}]", 30))
            .starts_with("<tool_call> block 1: NUL byte"));
  CHECK(block_error(nested("[", "]", 1000)) == "<tool_call> block 1: JSON nested deeper than 64 levels");

  // Two blocks, the second garbled; text between and after; a stray </think>.
  const ParsedAnswer two = parse_answer(
      "<think>a</"
      "think>\nFirst.\n<tool_call>[{\"name\":\"x\",\"arguments\":{\"b\":1,\"a\":[2]}},{\"arguments\":{},\"name\":\"y\"}"
      "]"
      "</tool_call>\nThen.</think>\n<tool_call>[{]</tool_call>\n\n");
  CHECK(two.reasoning == "a");
  CHECK(two.text == "First.\n\nThen.</think>");
  CHECK(two.has_call_block);
  REQUIRE(two.calls.size() == 2);
  CHECK(two.calls[0].name == "x");
  CHECK(two.calls[0].arguments == R"({"b":1,"a":[2]})");
  CHECK(two.calls[1].name == "y");
  CHECK(two.calls[1].arguments == "{}");
  REQUIRE(two.call_json.size() == 1);
  CHECK(two.call_json[0].message.starts_with("<tool_call> block 2: invalid JSON"));
  CHECK(two.raw_calls == "[{\"name\":\"x\",\"arguments\":{\"b\":1,\"a\":[2]}},{\"arguments\":{},\"name\":\"y\"}][{]");

  // An argument quoting the closing marker does not end the block.
  const ParsedAnswer quoting =
      parse_answer(R"(<tool_call>[{"name":"say","arguments":{"text":"a </tool_call> \" b"}}]</tool_call>)");
  REQUIRE(quoting.calls.size() == 1);
  CHECK(quoting.calls[0].arguments == R"({"text":"a </tool_call> \" b"})");
  CHECK(quoting.call_json.empty());
  // A string that never closes: the first marker ends the block.
  const ParsedAnswer unbalanced = parse_answer(R"(<tool_call>[{"name":"x</tool_call>after)");
  CHECK(unbalanced.raw_calls == R"([{"name":"x)");
  CHECK(unbalanced.text == "after");
  CHECK(unbalanced.call_json.size() == 1);

  // Plain text; several think blocks; an empty answer.
  const ParsedAnswer plain = parse_answer("\n\nJust text.\n");
  CHECK(plain.text == "Just text.");
  CHECK_FALSE(plain.has_call_block);
  CHECK(parse_answer("<think>a</think><think>b</think>c").reasoning == "ab");
  const ParsedAnswer nothing = parse_answer("");
  CHECK(nothing.text.empty());
  CHECK(nothing.reasoning.empty());
  CHECK_FALSE(nothing.has_call_block);
  // <tool_call> inside reasoning is reasoning.
  const ParsedAnswer in_think = parse_answer("<think>maybe <tool_call>[]</tool_call></think>ok");
  CHECK_FALSE(in_think.has_call_block);
  CHECK(in_think.reasoning == "maybe <tool_call>[]</tool_call>");
  CHECK(in_think.text == "ok");
}

TEST_CASE("validate_call: every violation, with its path") {
  const ToolList list = parse_tool_list(R"([
    {"name":"set_timer","parameters":{"type":"object","properties":{"minutes":{"type":"integer","minimum":1}},"required":["minutes"]}},
    {"name":"set_volume","parameters":{"type":"object","properties":{"volume":{"type":"integer","minimum":0,"maximum":100}},
      "required":["volume"],"additionalProperties":false}},
    {"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string","minLength":1},
      "unit":{"enum":["celsius","fahrenheit"]}},"required":["city"],"additionalProperties":false}},
    {"name":"tag","parameters":{"type":"object","properties":{
      "tags":{"type":"array","items":{"type":"string","maxLength":3},"minItems":1,"maxItems":2},
      "name":{"type":"string","minLength":1,"maxLength":4},
      "ratio":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1},
      "level":{"enum":[1,2]},
      "mode":{"const":"fast"},
      "point":{"const":{"x":1,"y":[1,{"z":2}]}},
      "nothing":{"type":"null"},
      "opts":{"type":"object","properties":{"deep":{"type":"boolean"}},"additionalProperties":false}}}}])",
                                        kOrigin);
  struct Case {
    const char* name;
    const char* arguments;
    Violation violation;
    const char* message;
  };
  const Case cases[] = {
      {"set_timer", R"({"minutes":10})", Violation::ok, ""},
      {"set_timer", R"({"minutes":2.0})", Violation::ok, ""},  // an integer per JSON Schema
      {"set_timer", R"({"minutes":1,"extra":true})", Violation::ok, ""},
      {"nope", "{}", Violation::unknown_tool, "name: \"nope\" is not a listed tool"},
      {"set_timer", "{\"minutes\":", Violation::unparseable_json, nullptr},
      {"set_timer", "[1]", Violation::wrong_type, "arguments: expected object, got array"},
      {"set_timer", R"({"minutes":"10"})", Violation::wrong_type, "arguments.minutes: expected integer, got string"},
      {"set_timer", R"({"minutes":2.5})", Violation::wrong_type, "arguments.minutes: expected integer, got number"},
      {"set_timer", R"({"minutes":null})", Violation::wrong_type, "arguments.minutes: expected integer, got null"},
      {"set_timer", R"({"minutes":0})", Violation::out_of_range, "arguments.minutes: 0 is below minimum 1"},
      {"set_timer", "{}", Violation::missing_argument, "arguments: missing required \"minutes\""},
      {"set_volume", R"({"volume":150})", Violation::out_of_range, "arguments.volume: 150 is above maximum 100"},
      {"set_volume", R"({"volume":-1})", Violation::out_of_range, "arguments.volume: -1 is below minimum 0"},
      {"set_volume", R"({"volume":100})", Violation::ok, ""},
      {"set_volume", R"({"volume":5,"x":1})", Violation::unknown_argument,
       "arguments.x: not declared (additionalProperties is false)"},
      {"set_volume", R"({"volume":"x","y":1})", Violation::wrong_type,
       "arguments.volume: expected integer, got string"},
      {"set_volume", R"({"y":1})", Violation::unknown_argument,
       "arguments.y: not declared (additionalProperties is false)"},
      {"set_volume", R"({"a b":1})", Violation::unknown_argument,
       "arguments[\"a b\"]: not declared (additionalProperties is false)"},
      {"get_weather", "{}", Violation::missing_argument, "arguments: missing required \"city\""},
      {"get_weather", R"({"unit":"celsius"})", Violation::missing_argument, "arguments: missing required \"city\""},
      {"get_weather", R"({"city":"Rome","unit":"kelvin"})", Violation::not_in_enum,
       "arguments.unit: \"kelvin\" is not one of [\"celsius\",\"fahrenheit\"]"},
      {"get_weather", R"({"city":"Rome","unit":"celsius"})", Violation::ok, ""},
      {"get_weather", R"({"city":""})", Violation::out_of_range,
       "arguments.city: 0 characters, fewer than minLength 1"},
      {"tag", R"({"name":""})", Violation::out_of_range, "arguments.name: 0 characters, fewer than minLength 1"},
      {"tag", R"({"name":"héll"})", Violation::ok, ""},  // 4 code points in 5 bytes
      {"tag", R"({"name":"héllo"})", Violation::out_of_range, "arguments.name: 5 characters, more than maxLength 4"},
      {"tag", R"({"tags":[]})", Violation::out_of_range, "arguments.tags: 0 items, fewer than minItems 1"},
      {"tag", R"({"tags":["a","b","c"]})", Violation::out_of_range, "arguments.tags: 3 items, more than maxItems 2"},
      {"tag", R"({"tags":["abc","abcd"]})", Violation::out_of_range,
       "arguments.tags[1]: 4 characters, more than maxLength 3"},
      {"tag", R"({"tags":["a",1]})", Violation::wrong_type, "arguments.tags[1]: expected string, got integer"},
      {"tag", R"({"tags":"a"})", Violation::wrong_type, "arguments.tags: expected array, got string"},
      {"tag", R"({"ratio":0.5})", Violation::ok, ""},
      {"tag", R"({"ratio":0})", Violation::out_of_range, "arguments.ratio: 0 is not above exclusiveMinimum 0"},
      {"tag", R"({"ratio":1.0})", Violation::out_of_range, "arguments.ratio: 1.0 is not below exclusiveMaximum 1"},
      {"tag", R"({"ratio":true})", Violation::wrong_type, "arguments.ratio: expected number, got boolean"},
      {"tag", R"({"level":2.0})", Violation::ok, ""},  // enum equality is by value
      {"tag", R"({"level":3})", Violation::not_in_enum, "arguments.level: 3 is not one of [1,2]"},
      {"tag", R"({"mode":"fast"})", Violation::ok, ""},
      {"tag", R"({"mode":"slow"})", Violation::not_in_enum, "arguments.mode: \"slow\" is not \"fast\""},
      {"tag", R"({"point":{"y":[1.0,{"z":2}],"x":1}})", Violation::ok, ""},  // objects equal whatever their key order
      {"tag", R"({"point":{"x":1,"y":[{"z":2},1]}})", Violation::not_in_enum, nullptr},  // arrays in order
      {"tag", R"({"point":{"x":1}})", Violation::not_in_enum, nullptr},
      {"tag", R"({"nothing":null})", Violation::ok, ""},
      {"tag", R"({"nothing":0})", Violation::wrong_type, "arguments.nothing: expected null, got integer"},
      {"tag", R"({"opts":{"deep":true}})", Violation::ok, ""},
      {"tag", R"({"opts":{"deep":1}})", Violation::wrong_type, "arguments.opts.deep: expected boolean, got integer"},
      {"tag", R"({"opts":{"deeper":1}})", Violation::unknown_argument,
       "arguments.opts.deeper: not declared (additionalProperties is false)"},
  };
  bool seen[8] = {};
  for (const Case& c : cases) {
    CAPTURE(c.name);
    CAPTURE(c.arguments);
    const CallCheck check = validate_call(list, {c.name, c.arguments});
    CHECK(violation_name(check.violation) == std::string(violation_name(c.violation)));
    if (c.message) CHECK(check.message == c.message);
    seen[size_t(check.violation)] = true;
  }
  for (int v = 0; v < 8; ++v) CHECK_MESSAGE(seen[v], violation_name(Violation(v)));
  CHECK(validate_call(list, {"set_timer", "{\"minutes\":"}).message.starts_with("arguments: invalid JSON"));

  // A long value is cut in the message, at a code point boundary.
  const std::string long_unit = "{\"city\":\"x\",\"unit\":\"" + std::string(58, 'a') + "é\"}";
  const std::string message = validate_call(list, {"get_weather", long_unit}).message;
  CHECK(message == "arguments.unit: \"" + std::string(58, 'a') + "... is not one of [\"celsius\",\"fahrenheit\"]");

  const char* names[] = {"ok",         "unparseable_json", "unknown_tool", "missing_argument", "unknown_argument",
                         "wrong_type", "out_of_range",     "not_in_enum"};
  for (int v = 0; v < 8; ++v) CHECK(std::string(violation_name(Violation(v))) == names[v]);
}

TEST_CASE("parse_tool_choice") {
  CHECK(parse_tool_choice("auto").mode == ToolChoiceMode::auto_);
  CHECK(parse_tool_choice("none").mode == ToolChoiceMode::none);
  CHECK(parse_tool_choice("required").mode == ToolChoiceMode::required);
  const ToolChoice named = parse_tool_choice("set_timer");
  CHECK(named.mode == ToolChoiceMode::named);
  CHECK(named.name == "set_timer");
  CHECK(parse_tool_choice("auto").name.empty());
  CHECK(error_of([] { parse_tool_choice(""); }) == "tool choice is empty (give auto, none, required or a tool name)");
}
