// An answer split at its marker surfaces into reasoning, calls and text.
#include <algorithm>
#include <string>

#include "cact/error.h"
#include "cact/json_input.h"
#include "cact/tools.h"

namespace cact::chat {

namespace {

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";
constexpr std::string_view kCallOpen = "<tool_call>", kCallClose = "</tool_call>";
// An answer is bounded by its token budget; this only bounds a hand-made one.
constexpr size_t kMaxCallBlockBytes = size_t(1) << 20;

// The block's close, or, when the body's strings never close, the first
// marker at all. npos when there is none.
size_t block_close(std::string_view answer, size_t from) {
  const size_t close = find_call_close(answer, from);
  return close != std::string_view::npos ? close : answer.find(kCallClose, from);
}

// One {"name": string, "arguments": object} element of a call list.
Call parse_call(const Json& element, const std::string& at) {
  if (!element.is_object()) fail(at + ": a call must be a JSON object, got " + element.type_name());
  for (const auto& [key, value] : element.items()) {
    if (key != "name" && key != "arguments")
      fail(at + ": unknown key " + json_quoted(key) + " (a call has \"name\" and \"arguments\")");
  }
  const auto name = element.find("name");
  if (name == element.end() || !name->is_string()) fail(at + ": \"name\" must be a string");
  const auto arguments = element.find("arguments");
  if (arguments == element.end() || !arguments->is_object()) fail(at + ": \"arguments\" must be a JSON object");
  return {name->get<std::string>(), compact(*arguments)};
}

// The calls of one closed block, all or none: a block with one malformed call
// is reported whole as unparseable.
void take_call_block(std::string_view body, const std::string& at, ParsedAnswer& out) {
  std::vector<Call> calls;
  try {
    const Json list = parse_json_limited(body, at, kMaxCallBlockBytes);
    if (!list.is_array()) fail(at + ": expected a JSON list of calls, got " + list.type_name());
    if (list.empty()) fail(at + ": the list of calls is empty");
    for (size_t i = 0; i < list.size(); ++i)
      calls.push_back(parse_call(list[i], at + ": call " + std::to_string(i + 1)));
  } catch (const Error& e) {
    out.call_json.push_back({Violation::unparseable_json, e.what()});
    return;
  }
  out.calls.insert(out.calls.end(), calls.begin(), calls.end());
}

std::string_view trim_newlines(std::string_view text) {
  while (!text.empty() && text.front() == '\n') text.remove_prefix(1);
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  return text;
}

}  // namespace

size_t find_call_close(std::string_view text, size_t from) {
  bool in_string = false, escaped = false;
  for (size_t i = from; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (text.substr(i).starts_with(kCallClose)) {
      return i;
    }
  }
  return std::string_view::npos;
}

ParsedAnswer parse_answer(std::string_view answer) {
  ParsedAnswer out;
  std::string text;
  size_t pos = 0, blocks = 0;
  while (pos < answer.size()) {
    const size_t think = answer.find(kThinkOpen, pos);
    const size_t call = answer.find(kCallOpen, pos);
    const size_t next = std::min(think, call);
    text += answer.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos);
    if (next == std::string_view::npos) break;
    if (next == think) {
      // An unclosed <think> (a cut-off answer) holds the rest.
      const size_t body = think + kThinkOpen.size();
      const size_t close = answer.find(kThinkClose, body);
      out.reasoning += answer.substr(body, close == std::string_view::npos ? close : close - body);
      pos = close == std::string_view::npos ? answer.size() : close + kThinkClose.size();
      continue;
    }
    out.has_call_block = true;
    const std::string at = std::string(kCallOpen) + " block " + std::to_string(++blocks);
    const size_t body = call + kCallOpen.size();
    const size_t close = block_close(answer, body);
    if (close == std::string_view::npos) {
      out.raw_calls += answer.substr(body);
      out.call_json.push_back({Violation::unparseable_json, at + ": not closed by " + std::string(kCallClose)});
      break;
    }
    out.raw_calls += answer.substr(body, close - body);
    take_call_block(answer.substr(body, close - body), at, out);
    pos = close + kCallClose.size();
  }
  out.text = std::string(trim_newlines(text));
  return out;
}

}  // namespace cact::chat
