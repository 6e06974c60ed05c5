#pragma once
// The one JSON reader of libcact and the tools: every JSON text that comes from
// outside (safetensors headers, geometry files, tool lists, requests,
// transcripts, model answers) is parsed here, bounded in size and depth, with
// no NUL bytes and no duplicate keys, keys kept in the order written.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace cact {

using Json = nlohmann::ordered_json;

// Arrays and objects nest at most this deep in any JSON input (no format the
// tools read needs more than a handful of levels).
inline constexpr uint32_t kMaxJsonDepth = 64;

// Parses `text` as one JSON value. Throws cact::Error whose message starts with
// `origin` when the text is longer than `max_bytes`, holds a NUL byte (nlohmann
// would stop there and ignore the rest), nests arrays/objects deeper than
// kMaxJsonDepth (refused while parsing, so no depth ever recurses), repeats a
// key in one object (nlohmann would keep one silently), or is not valid JSON.
Json parse_json_limited(std::string_view text, std::string_view origin, size_t max_bytes);

// `value` as compact JSON (no whitespace outside strings, UTF-8 kept as is).
std::string compact(const Json& value);
// `text` as a JSON string literal, for messages: quoted, control characters
// escaped, so a message stays one line whatever the text holds.
std::string json_quoted(std::string_view text);

// What `value` is, for messages ("a negative integer", "string", ...).
const char* json_type(const Json& value);

// The chat layer's names for the shared reader (its API predates the move).
namespace chat {
using cact::compact;
using cact::Json;
using cact::json_quoted;
using cact::kMaxJsonDepth;
using cact::parse_json_limited;
}  // namespace chat

}  // namespace cact
