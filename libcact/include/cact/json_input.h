#pragma once
// The one way the chat layer parses JSON that comes from outside (tool lists,
// model answers, requests, transcripts): bounded in size and depth, no NUL
// bytes, no duplicate keys, keys kept in the order written.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace cact::chat {

using Json = nlohmann::ordered_json;

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

}  // namespace cact::chat
