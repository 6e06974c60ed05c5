#pragma once
// The JSON Schema subset of tool parameters (docs/TOOLS.md) -> cact::chat::Schema,
// and the JSON-type rules shared by the parser and the call validator.
#include <string>
#include <string_view>

#include "cact/json_input.h"
#include "cact/tools.h"

namespace cact::chat {

// Parses one schema node and everything under it. Any keyword outside the
// subset is refused, never ignored. Messages read "<context>: <path>: what",
// e.g. `--tools t.json: tool "set_timer": parameters.properties.minutes: ...`.
Schema parse_schema(const Json& node, const std::string& context, const std::string& path);

// The JSON Schema type of a value: a number with no fraction is an integer
// (2.0 included), any other number is a number.
JsonType json_type_of(const Json& value);
// Whether `value` is of `type` (a number schema also accepts integers).
bool matches_type(const Json& value, JsonType type);

// A schema bound for messages: integral values without a fraction ("100"),
// others in their shortest round-trip form ("0.5").
std::string bound_text(double bound);

// The path of member `key` under `path` for messages: "arguments.city", or
// `arguments["two words"]` for a key that is not a plain name.
std::string member_path(const std::string& path, std::string_view key);

}  // namespace cact::chat
