// The case file: what a golden check runs (docs/GUIDE.md "The case file").
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "cact/error.h"
#include "cact/json_input.h"
#include "common/input.h"
#include "common/suggest.h"
#include "golden.h"

namespace cact::golden {

namespace {

constexpr size_t kMaxCaseFileBytes = size_t(16) << 20;

// Keys a case may give, and the top level as defaults for every case.
const std::vector<std::string> kCaseKeys = {"name",        "prompt",    "chat",       "system",      "tools",
                                            "tool_choice", "constrain", "max_tokens", "temperature", "top_k",
                                            "top_p",       "min_p",     "seed",       "tolerance"};
const std::vector<std::string> kDefaultKeys = {"system",     "tools",       "tool_choice", "constrain",
                                               "max_tokens", "temperature", "top_k",       "top_p",
                                               "min_p",      "seed",        "tolerance"};
const std::vector<std::string> kFileKeys = {"archive", "numerics", "kernels", "cases"};
// Keys only a chat case can use.
const std::vector<std::string> kChatOnlyKeys = {"system", "tools", "tool_choice", "constrain"};

bool contains(const std::vector<std::string>& keys, const std::string& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

void check_keys(const Json& object, const std::vector<std::string>& allowed, const std::string& where) {
  for (const auto& [key, value] : object.items()) {
    if (contains(allowed, key)) continue;
    const std::string near = app::nearest(key, allowed);
    fail(where + ": unknown key \"" + key + "\"" + (near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
  }
}

std::string get_string(const Json& v, const std::string& where) {
  if (!v.is_string()) fail(where + ": expected a string");
  return v.get<std::string>();
}

double get_number(const Json& v, const std::string& where) {
  if (!v.is_number()) fail(where + ": expected a number");
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(where + ": expected a finite number");
  return d;
}

uint64_t get_count(const Json& v, const std::string& where, uint64_t max) {
  if (!v.is_number_integer() || (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0)) {
    fail(where + ": expected a non-negative integer");
  }
  const uint64_t n = v.get<uint64_t>();
  if (n > max) fail(where + ": at most " + std::to_string(max));
  return n;
}

bool get_bool(const Json& v, const std::string& where) {
  if (!v.is_boolean()) fail(where + ": expected true or false");
  return v.get<bool>();
}

double get_tolerance(const Json& v, const std::string& where) {
  const double t = get_number(v, where);
  if (t < 0) fail(where + ": must be >= 0");
  return t;
}

// "tools": a file (relative to the case file) or an inline list.
chat::ToolList read_tools(const Json& v, const std::filesystem::path& base, const std::string& where) {
  if (v.is_string()) {
    const std::filesystem::path file = base / v.get<std::string>();
    const std::string origin = where + " " + v.get<std::string>();
    return chat::parse_tool_list(app::read_input(file.string(), origin), origin);
  }
  if (v.is_array()) return chat::parse_tool_list(chat::compact(v), where);
  fail(where + ": expected a file name or a list of tools");
}

Case parse_case(const Json& merged, const Json& own, const std::filesystem::path& base, const std::string& where) {
  Case c;
  c.name = get_string(merged.at("name"), where + ": name");
  if (c.name.empty()) fail(where + ": name is empty");
  const std::string at = where + " (\"" + c.name + "\")";
  const bool prompt = merged.contains("prompt"), chat = merged.contains("chat");
  if (prompt == chat) fail(at + ": give exactly one of \"prompt\" and \"chat\"");
  c.chat = chat;
  std::string choice = "auto";
  if (prompt) {
    c.turns.push_back(get_string(merged.at("prompt"), at + ": prompt"));
    for (const std::string& key : kChatOnlyKeys) {
      if (own.contains(key)) fail(at + ": \"" + key + "\" needs a chat case");
    }
  } else {
    const Json& turns = merged.at("chat");
    if (turns.is_string()) {
      c.turns.push_back(turns.get<std::string>());
    } else if (turns.is_array() && !turns.empty()) {
      for (size_t i = 0; i < turns.size(); ++i)
        c.turns.push_back(get_string(turns[i], at + ": chat[" + std::to_string(i) + "]"));
    } else {
      fail(at + ": chat: expected a user turn or a non-empty list of them");
    }
    if (merged.contains("system")) c.system = get_string(merged.at("system"), at + ": system");
    if (merged.contains("tools")) c.tools = read_tools(merged.at("tools"), base, at + ": tools");
    if (merged.contains("tool_choice")) choice = get_string(merged.at("tool_choice"), at + ": tool_choice");
    try {
      c.tool_choice = chat::parse_tool_choice(choice);
    } catch (const Error& e) {
      fail(at + ": tool_choice: " + e.what());
    }
    if (merged.contains("constrain")) c.constrain = get_bool(merged.at("constrain"), at + ": constrain");
  }
  if (merged.contains("max_tokens"))
    c.max_tokens = uint32_t(get_count(merged.at("max_tokens"), at + ": max_tokens", 1u << 20));
  if (merged.contains("temperature"))
    c.sampler.temperature = float(get_number(merged.at("temperature"), at + ": temperature"));
  if (merged.contains("top_k")) c.sampler.top_k = uint32_t(get_count(merged.at("top_k"), at + ": top_k", UINT32_MAX));
  if (merged.contains("top_p")) c.sampler.top_p = float(get_number(merged.at("top_p"), at + ": top_p"));
  if (merged.contains("min_p")) c.sampler.min_p = float(get_number(merged.at("min_p"), at + ": min_p"));
  if (merged.contains("seed")) c.sampler.seed = get_count(merged.at("seed"), at + ": seed", UINT64_MAX);
  try {
    check_sampler_options(c.sampler);
  } catch (const Error& e) {
    fail(at + ": " + e.what());
  }
  if (merged.contains("tolerance")) c.tolerance = get_tolerance(merged.at("tolerance"), at + ": tolerance");

  // What the golden file records as this case's inputs: the resolved values
  // (the tool list's content, not its file name), so any change shows.
  Json& in = c.input;
  if (c.chat) {
    in["chat"] = c.turns;
    in["system"] = c.system;
    in["tools"] = c.tools.empty() ? Json::array() : Json::parse(c.tools.compact_json);
    in["tool_choice"] = choice;
    in["constrain"] = c.constrain;
  } else {
    in["prompt"] = c.turns.front();
  }
  in["max_tokens"] = c.max_tokens;
  if (c.sampler.temperature > 0) {
    in["sampler"] = {{"temperature", c.sampler.temperature},
                     {"top_k", c.sampler.top_k},
                     {"top_p", c.sampler.top_p},
                     {"min_p", c.sampler.min_p},
                     {"seed", c.sampler.seed}};
  } else {
    in["sampler"] = "greedy";
  }
  return c;
}

}  // namespace

double default_tolerance(Numerics n) { return n == Numerics::reference ? kFloatTolerance : kInt8Tolerance; }

CaseFile parse_case_file(const std::string& path, const std::string& text, const std::string& archive_override) {
  CaseFile f;
  f.path = path;
  const std::string origin = path == "-" ? "standard input" : path;
  const Json j = chat::parse_json_limited(text, origin, kMaxCaseFileBytes);
  if (!j.is_object()) fail(origin + ": expected a JSON object with \"archive\" and \"cases\"");
  std::vector<std::string> top_keys = kFileKeys;
  top_keys.insert(top_keys.end(), kDefaultKeys.begin(), kDefaultKeys.end());
  check_keys(j, top_keys, origin);
  // Paths in the file are relative to its directory (stdin: the current one).
  const std::filesystem::path base =
      path == "-" ? std::filesystem::path(".") : std::filesystem::path(path).parent_path();
  if (!archive_override.empty()) {
    f.archive = archive_override;
  } else if (j.contains("archive")) {
    const std::filesystem::path a = get_string(j.at("archive"), origin + ": archive");
    f.archive = a.is_absolute() ? a : base / a;
  } else {
    fail(origin + ": no \"archive\" (or give --archive)");
  }
  if (j.contains("numerics")) {
    const std::string n = get_string(j.at("numerics"), origin + ": numerics");
    if (n != "int8" && n != "float") fail(origin + ": numerics: \"" + n + "\" is not \"int8\" or \"float\"");
    f.numerics = n == "float" ? Numerics::reference : Numerics::int8;
  }
  if (j.contains("kernels")) {
    const std::string k = get_string(j.at("kernels"), origin + ": kernels");
    if (k != "best" && k != "scalar") fail(origin + ": kernels: \"" + k + "\" is not \"best\" or \"scalar\"");
    f.scalar_kernels = k == "scalar";
  }
  Json defaults = Json::object();
  for (const std::string& key : kDefaultKeys) {
    if (j.contains(key)) defaults[key] = j.at(key);
  }
  if (!j.contains("cases") || !j.at("cases").is_array() || j.at("cases").empty()) {
    fail(origin + ": \"cases\": expected a non-empty list");
  }
  const Json& cases = j.at("cases");
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string where = origin + ": case " + std::to_string(i + 1);
    if (!cases[i].is_object()) fail(where + ": expected an object");
    check_keys(cases[i], kCaseKeys, where);
    if (!cases[i].contains("name")) fail(where + ": no \"name\"");
    Json merged = defaults;
    for (const auto& [key, value] : cases[i].items()) merged[key] = value;
    Case c = parse_case(merged, cases[i], base, where);
    for (const Case& earlier : f.cases) {
      if (earlier.name == c.name) fail(where + ": the name \"" + c.name + "\" is used twice");
    }
    f.cases.push_back(std::move(c));
  }
  return f;
}

}  // namespace cact::golden
