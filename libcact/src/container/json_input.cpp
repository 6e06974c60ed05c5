#include "cact/json_input.h"

#include <set>
#include <vector>

#include "cact/error.h"

namespace cact {

namespace {

// nlohmann's what() is "[json.exception.parse_error.101] parse error at ...";
// the bracketed id means nothing to a user.
std::string without_exception_id(const std::string& what) {
  const size_t close = what.find("] ");
  if (what.starts_with("[json.exception") && close != std::string::npos) return what.substr(close + 2);
  return what;
}

}  // namespace

Json parse_json_limited(std::string_view text, std::string_view origin, size_t max_bytes) {
  const std::string who(origin);
  if (text.size() > max_bytes) {
    fail(who + ": " + std::to_string(text.size()) + " bytes of JSON, more than the limit of " +
         std::to_string(max_bytes));
  }
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    fail(who + ": NUL byte at offset " + std::to_string(nul) + " (not allowed in JSON text)");
  }
  // One key set per open object; the callback sees every object open and close.
  std::vector<std::set<std::string>> open_objects;
  auto check = [&](int depth, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        // depth counts the containers already open around this one.
        if (depth >= int(kMaxJsonDepth)) {
          fail(who + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        }
        if (event == Json::parse_event_t::object_start) open_objects.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        open_objects.pop_back();
        break;
      case Json::parse_event_t::key: {
        std::string key = parsed.get<std::string>();
        if (!open_objects.back().insert(key).second)
          fail(who + ": key " + json_quoted(key) + " appears more than once in one object");
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), check);
  } catch (const Json::exception& e) {
    fail(who + ": invalid JSON: " + without_exception_id(e.what()));
  }
}

std::string compact(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::strict); }

// replace: a message must never throw, even for text that is not UTF-8.
std::string json_quoted(std::string_view text) {
  return Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

const char* json_type(const Json& value) {
  if (value.is_number_unsigned()) return "an unsigned integer";
  if (value.is_number_integer()) return "a negative integer";
  if (value.is_number_float()) return "a number with a fraction or exponent";
  return value.type_name();
}

}  // namespace cact
