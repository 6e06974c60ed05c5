// OpenAI chat completions requests -> the chat layer (cact/openai.h).
#include <cmath>
#include <initializer_list>
#include <optional>

#include "cact/openai.h"
#include "cact/sampler.h"

namespace cact::chat::openai {

RequestError::RequestError(std::string param, const std::string& message) : Error(message), param_(std::move(param)) {}

namespace {

// Arguments of one call in a history message are prompt text; bounded like a call block.
constexpr size_t kMaxArgumentsBytes = size_t(1) << 20;

[[noreturn]] void refuse(const std::string& param, const std::string& what) {
  throw RequestError(param, param + ": " + what);
}

std::string at_index(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }
std::string at_key(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

// One JSON object of the request: typed reads by key, null read as absent, and
// any key outside `known` refused (a misspelt option must not be ignored).
class Fields {
 public:
  Fields(const Json& value, std::string path, std::initializer_list<std::string_view> known) : path_(std::move(path)) {
    if (!value.is_object())
      refuse(path_.empty() ? "body" : path_, std::string("expected a JSON object, got ") + json_type(value));
    object_ = &value;
    for (const auto& [key, unused] : value.items()) {
      bool listed = false;
      for (std::string_view k : known) listed = listed || k == key;
      if (!listed) refuse(at_key(path_, key), "unknown or unsupported parameter");
    }
  }

  std::string path(std::string_view key) const { return at_key(path_, key); }

  const Json* find(std::string_view key) const {
    const auto it = object_->find(std::string(key));
    return it == object_->end() || it->is_null() ? nullptr : &*it;
  }

  const Json& need(std::string_view key) const {
    const Json* v = find(key);
    if (v == nullptr) refuse(path(key), "missing");
    return *v;
  }

  std::optional<std::string> string(std::string_view key) const {
    const Json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) refuse(path(key), std::string("expected a string, got ") + json_type(*v));
    return v->get<std::string>();
  }

  std::optional<bool> boolean(std::string_view key) const {
    const Json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_boolean()) refuse(path(key), std::string("expected true or false, got ") + json_type(*v));
    return v->get<bool>();
  }

  std::optional<double> number(std::string_view key) const {
    const Json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number()) refuse(path(key), std::string("expected a number, got ") + json_type(*v));
    const double d = v->get<double>();
    if (!std::isfinite(d)) refuse(path(key), "not a finite number");
    return d;
  }

  // An integer in [lo, hi].
  std::optional<int64_t> integer(std::string_view key, int64_t lo, int64_t hi) const {
    const Json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number_integer()) refuse(path(key), std::string("expected an integer, got ") + json_type(*v));
    if (v->is_number_unsigned() ? v->get<uint64_t>() > uint64_t(hi) : v->get<int64_t>() > hi) {
      refuse(path(key), "must be at most " + std::to_string(hi));
    }
    const int64_t value = v->get<int64_t>();  // within [INT64_MIN, hi] now
    if (value < lo) refuse(path(key), "must be at least " + std::to_string(lo));
    return value;
  }

 private:
  const Json* object_ = nullptr;
  std::string path_;
};

// A value OpenAI defines that cact does not implement: accepted only when it
// asks for the default behaviour.
void require_neutral(const Fields& f, std::string_view key, const Json& neutral, const std::string& why) {
  const Json* v = f.find(key);
  if (v != nullptr && *v != neutral) refuse(f.path(key), "only " + compact(neutral) + " is supported (" + why + ")");
}

// Message content: a string, or a list of {"type":"text","text":...} parts
// (joined with newlines).
std::string text_content(const Json& content, const std::string& path) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    refuse(path, std::string("expected a string or a list of text parts, got ") + json_type(content));
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string at = at_index(path, i);
    if (!content[i].is_object() || !content[i].contains("type") || content[i]["type"] != "text") {
      refuse(at + ".type", "only text parts are supported");
    }
    const Fields part(content[i], at, {"type", "text"});
    if (i > 0) text += '\n';
    text += part.string("text").value_or("");
  }
  return text;
}

// A result that is JSON goes to the model compact, as it was trained on results
// (and as tool lists are re-serialised); any other text as it is.
std::string tool_result(std::string text) {
  try {
    return compact(parse_json_limited(text, "tool result", text.size()));
  } catch (const Error&) {
    return text;
  }
}

void refuse_markers(const std::string& text, const std::string& path, const std::vector<std::string>& markers) {
  for (const std::string& m : markers) {
    if (text.find(m) != std::string::npos) {
      refuse(path, "spells the chat marker " + m + " (assistant text is replayed as the model's own markup)");
    }
  }
}

// The tool list: OpenAI's function wrappers, checked by the chat layer. `strict`
// is dropped: calls are always decoded under their schema.
ToolList parse_tools(const Json& tools) {
  if (!tools.is_array()) refuse("tools", std::string("expected a list of tools, got ") + json_type(tools));
  Json list = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    Json tool = tools[i];
    if (tool.is_object() && tool.contains("function") && tool["function"].is_object()) {
      Json& function = tool["function"];
      if (const auto strict = function.find("strict"); strict != function.end()) {
        if (!strict->is_boolean() && !strict->is_null()) {
          refuse(at_index("tools", i) + ".function.strict",
                 std::string("expected true or false, got ") + json_type(*strict));
        }
        function.erase(strict);
      }
    }
    list.push_back(std::move(tool));
  }
  try {
    return parse_tool_list(compact(list), "tools");
  } catch (const RequestError&) {
    throw;
  } catch (const Error& e) {
    throw RequestError("tools", e.what());
  }
}

ToolChoice parse_choice(const Json& choice, const ToolList& tools) {
  ToolChoice result;
  if (choice.is_string()) {
    const std::string mode = choice.get<std::string>();
    if (mode != "auto" && mode != "none" && mode != "required") {
      refuse("tool_choice",
             "expected \"auto\", \"none\", \"required\" or {\"type\":\"function\",\"function\":{\"name\":...}}, got " +
                 json_quoted(mode));
    }
    result = parse_tool_choice(mode);
  } else {
    const Fields f(choice, "tool_choice", {"type", "function"});
    if (f.string("type") != "function") refuse(f.path("type"), "must be \"function\"");
    const Fields function(f.need("function"), f.path("function"), {"name"});
    const std::optional<std::string> name = function.string("name");
    if (!name || name->empty()) refuse(function.path("name"), "missing");
    result = {ToolChoiceMode::named, *name};
  }
  if (result.mode == ToolChoiceMode::named && tools.find(result.name) == nullptr) {
    refuse("tool_choice", json_quoted(result.name) + " is not in the tool list");
  }
  if (result.mode == ToolChoiceMode::required && tools.empty()) refuse("tool_choice", "\"required\" needs tools");
  return result;
}

void parse_stop(const Json& stop, const RequestLimits& limits, std::vector<std::string>& out) {
  auto take = [&](const Json& s, const std::string& path) {
    if (!s.is_string()) refuse(path, std::string("expected a string, got ") + json_type(s));
    const std::string text = s.get<std::string>();
    if (text.empty()) refuse(path, "empty stop string");
    if (text.size() > limits.max_stop_bytes)
      refuse(path, "longer than " + std::to_string(limits.max_stop_bytes) + " bytes");
    out.push_back(text);
  };
  if (!stop.is_array()) return take(stop, "stop");
  if (stop.size() > limits.max_stop_strings)
    refuse("stop", "at most " + std::to_string(limits.max_stop_strings) + " stop strings");
  for (size_t i = 0; i < stop.size(); ++i) take(stop[i], at_index("stop", i));
}

// The calls of the assistant message in the history that tool messages answer.
struct OpenCalls {
  std::string path;  // messages[i].tool_calls
  std::vector<std::string> ids;
  std::vector<std::optional<std::string>> results;
  size_t answered = 0;
};

std::vector<Call> parse_tool_calls(const Json& calls, const std::string& path, const ToolList& tools, OpenCalls& open) {
  if (!calls.is_array()) refuse(path, std::string("expected a list of calls, got ") + json_type(calls));
  std::vector<Call> out;
  for (size_t i = 0; i < calls.size(); ++i) {
    const Fields call(calls[i], at_index(path, i), {"id", "type", "function"});
    const std::optional<std::string> id = call.string("id");
    if (!id || id->empty()) refuse(call.path("id"), "missing");
    for (const std::string& seen : open.ids) {
      if (seen == *id) refuse(call.path("id"), json_quoted(*id) + " appears twice");
    }
    if (call.string("type").value_or("function") != "function") refuse(call.path("type"), "must be \"function\"");
    const Fields function(call.need("function"), call.path("function"), {"name", "arguments"});
    const std::optional<std::string> name = function.string("name");
    if (!name) refuse(function.path("name"), "missing");
    if (tools.find(*name) == nullptr) refuse(function.path("name"), json_quoted(*name) + " is not in the tool list");
    const std::string args_path = function.path("arguments");
    const std::string args_text = function.string("arguments").value_or("{}");
    Json arguments;
    try {
      arguments = parse_json_limited(args_text, args_path, kMaxArgumentsBytes);
    } catch (const Error& e) {
      throw RequestError(args_path, e.what());
    }
    if (!arguments.is_object())
      refuse(args_path, std::string("must be a JSON object (as a string), got ") + json_type(arguments));
    out.push_back({*name, compact(arguments)});
    open.ids.push_back(*id);
  }
  open.results.assign(open.ids.size(), std::nullopt);
  return out;
}

std::vector<Turn> parse_messages(const Json& messages, const RequestLimits& limits, const ToolList& tools,
                                 const std::vector<std::string>& markers, std::string& system) {
  if (!messages.is_array()) refuse("messages", std::string("expected a list of messages, got ") + json_type(messages));
  if (messages.empty()) refuse("messages", "empty: give at least one user message");
  if (messages.size() > limits.max_messages) {
    refuse("messages", std::to_string(messages.size()) + " messages, more than the limit of " +
                           std::to_string(limits.max_messages));
  }
  std::vector<Turn> turns;
  std::optional<OpenCalls> open;
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string path = at_index("messages", i);
    const Json& message = messages[i];
    if (!message.is_object() || !message.contains("role") || !message["role"].is_string()) {
      refuse(path, "expected an object with a string \"role\"");
    }
    const std::string role = message["role"].get<std::string>();
    const auto expect_answered = [&] {
      if (open) refuse(open->path, "the calls are not all answered by tool messages before " + path);
    };
    if (role == "system" || role == "developer") {
      const Fields f(message, path, {"role", "content", "name"});
      (void)f.string("name");
      if (!turns.empty())
        refuse(path, "a system message must come before the conversation (the format has one system turn)");
      if (!system.empty()) system += '\n';
      system += text_content(f.need("content"), f.path("content"));
    } else if (role == "user") {
      const Fields f(message, path, {"role", "content", "name"});
      (void)f.string("name");  // accepted, not shown to the model; but a string
      // The Needle format lets a request follow calls that got no results (the
      // model then answers the request); calls answered in part are a mistake.
      if (open && open->answered == 0) open.reset();
      expect_answered();
      const std::string content = text_content(f.need("content"), f.path("content"));
      if (!turns.empty() && turns.back().role == Turn::Role::tool) {
        refuse(path, "a user message after tool results needs the assistant's answer to them first");
      }
      if (!turns.empty() && turns.back().role == Turn::Role::user) {
        turns.back().content += "\n" + content;  // consecutive user messages are one turn
      } else {
        turns.push_back({Turn::Role::user, content, {}});
      }
    } else if (role == "assistant") {
      const Fields f(message, path, {"role", "content", "name", "tool_calls", "reasoning_content", "refusal"});
      (void)f.string("name");
      (void)f.string("refusal");
      expect_answered();
      if (turns.empty()) refuse(path, "the conversation must start with a user message");
      if (turns.back().role == Turn::Role::assistant) refuse(path, "two assistant messages in a row");
      const Json* content = f.find("content");
      const std::string text = content == nullptr ? "" : text_content(*content, f.path("content"));
      const std::string reasoning = f.string("reasoning_content").value_or("");
      refuse_markers(text, f.path("content"), markers);
      refuse_markers(reasoning, f.path("reasoning_content"), markers);
      OpenCalls calls_open{f.path("tool_calls"), {}, {}, 0};
      std::vector<Call> calls;
      if (const Json* tool_calls = f.find("tool_calls"))
        calls = parse_tool_calls(*tool_calls, calls_open.path, tools, calls_open);
      turns.push_back({Turn::Role::assistant, assistant_text(reasoning, text, calls), {}});
      if (!calls.empty()) open = std::move(calls_open);
    } else if (role == "tool") {
      const Fields f(message, path, {"role", "content", "tool_call_id"});
      if (!open) refuse(path, "a tool message must answer a call of the assistant message before it");
      const std::optional<std::string> id = f.string("tool_call_id");
      if (!id) refuse(f.path("tool_call_id"), "missing");
      size_t k = 0;
      while (k < open->ids.size() && open->ids[k] != *id) ++k;
      if (k == open->ids.size()) refuse(f.path("tool_call_id"), json_quoted(*id) + " is not a call of " + open->path);
      if (open->results[k]) refuse(f.path("tool_call_id"), json_quoted(*id) + " is answered twice");
      open->results[k] = tool_result(text_content(f.need("content"), f.path("content")));
      if (++open->answered == open->ids.size()) {
        for (std::optional<std::string>& r : open->results) turns.push_back({Turn::Role::tool, std::move(*r), {}});
        open.reset();
      }
    } else {
      refuse(path + ".role", json_quoted(role) + " is not one of system, developer, user, assistant, tool");
    }
  }
  if (open) refuse(open->path, "the calls are not all answered by tool messages");
  if (turns.empty()) refuse("messages", "no user message");
  if (turns.back().role == Turn::Role::assistant) {
    refuse("messages", "the last message is the assistant's: end with a user or tool message to get an answer");
  }
  return turns;
}

}  // namespace

ChatRequest parse_chat_request(const Json& body, const RequestLimits& limits, const std::vector<std::string>& markers) {
  const Fields f(body, "",
                 {"model",
                  "messages",
                  "tools",
                  "tool_choice",
                  "temperature",
                  "top_p",
                  "seed",
                  "max_tokens",
                  "max_completion_tokens",
                  "stop",
                  "stream",
                  "stream_options",
                  "n",
                  "presence_penalty",
                  "frequency_penalty",
                  "logprobs",
                  "logit_bias",
                  "parallel_tool_calls",
                  "response_format",
                  "user"});
  ChatRequest r;
  r.model = f.string("model").value_or("");
  (void)f.string("user");
  require_neutral(f, "n", 1, "one choice per request");
  require_neutral(f, "presence_penalty", 0, "no presence penalty");
  require_neutral(f, "frequency_penalty", 0, "no frequency penalty");
  require_neutral(f, "logprobs", false, "no log-probabilities");
  require_neutral(f, "logit_bias", Json::object(), "no logit bias");
  require_neutral(f, "parallel_tool_calls", true, "the model may write several calls in one answer");
  require_neutral(f, "response_format", Json{{"type", "text"}}, "answers are text and tool calls");

  if (const Json* tools = f.find("tools")) r.tools = parse_tools(*tools);
  if (const Json* choice = f.find("tool_choice")) r.options.tool_choice = parse_choice(*choice, r.tools);
  r.options.constrain = true;

  std::vector<Turn> turns = parse_messages(f.need("messages"), limits, r.tools, markers, r.system);
  size_t split = turns.size() - 1;
  while (split > 0 && turns.back().role == Turn::Role::tool && turns[split - 1].role == Turn::Role::tool) --split;
  r.next.assign(std::make_move_iterator(turns.begin() + ptrdiff_t(split)), std::make_move_iterator(turns.end()));
  turns.resize(split);
  r.history = std::move(turns);

  const std::optional<int64_t> max_tokens = f.integer("max_tokens", 1, limits.max_tokens);
  const std::optional<int64_t> max_completion = f.integer("max_completion_tokens", 1, limits.max_tokens);
  if (max_tokens && max_completion && *max_tokens != *max_completion) {
    refuse("max_completion_tokens", "differs from max_tokens (give one)");
  }
  r.options.max_tokens = uint32_t(max_completion.value_or(max_tokens.value_or(limits.default_max_tokens)));

  SamplerOptions& s = r.options.sampler;
  if (const auto t = f.number("temperature")) {
    if (*t < 0.0 || *t > 2.0) refuse("temperature", "must be in [0, 2]");
    s.temperature = float(*t);
  }
  if (const auto p = f.number("top_p")) {
    if (*p <= 0.0 || *p > 1.0) refuse("top_p", "must be in (0, 1]");
    s.top_p = float(*p);
  }
  if (const Json* seed = f.find("seed")) {
    if (!seed->is_number_integer()) refuse("seed", std::string("expected an integer, got ") + json_type(*seed));
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : uint64_t(seed->get<int64_t>());
    r.seed_given = true;
  }
  if (const Json* stop = f.find("stop")) parse_stop(*stop, limits, r.options.stop);

  r.stream = f.boolean("stream").value_or(false);
  if (const Json* options = f.find("stream_options")) {
    if (!r.stream) refuse("stream_options", "only with \"stream\": true");
    const Fields so(*options, "stream_options", {"include_usage"});
    r.include_usage = so.boolean("include_usage").value_or(false);
  }
  return r;
}

}  // namespace cact::chat::openai
