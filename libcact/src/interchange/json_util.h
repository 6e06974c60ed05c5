#pragma once
// JSON parsing shared by the safetensors reader and the geometry file: one
// object, no duplicate keys at any depth (nlohmann would keep the last one
// silently), parse errors as one line without nlohmann's prefix.
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cact/error.h"

namespace cact::interchange {

using Json = nlohmann::ordered_json;

// Parses `text` strictly; `who` prefixes every message ("x.json", "x.safetensors: header").
inline Json parse_json_strict(std::string_view text, const std::string& who) {
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  auto callback = [&](int, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start: keys.emplace_back(); break;
      case Json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
          duplicate = parsed.get<std::string>();
        }
        break;
      default: break;
    }
    return true;
  };
  Json j;
  try {
    j = Json::parse(text.begin(), text.end(), callback);
  } catch (const Json::exception& e) {
    std::string what = e.what();
    const size_t close = what.find("] ");
    if (what.starts_with("[json.exception") && close != std::string::npos) what = what.substr(close + 2);
    fail(who + ": invalid JSON: " + what);
  }
  if (!duplicate.empty()) fail(who + ": key \"" + duplicate + "\" appears more than once");
  return j;
}

inline const char* json_type(const Json& j) {
  if (j.is_number_unsigned()) return "an unsigned integer";
  if (j.is_number_integer()) return "a negative integer";
  if (j.is_number_float()) return "a number with a fraction or exponent";
  return j.type_name();
}

}  // namespace cact::interchange
