// Response objects and the stream splitter (openai_response.h).
#include "openai_response.h"

#include <chrono>
#include <random>

#include "cact/openai.h"
#include "cact/tools.h"

namespace cact::serve {

namespace {

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";
constexpr std::string_view kCallOpen = "<tool_call>", kCallClose = "</tool_call>";

std::string random_token(std::string_view prefix, size_t length) {
  static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{(uint64_t(std::random_device{}()) << 32) ^ std::random_device{}()};
  std::string out(prefix);
  for (size_t i = 0; i < length; ++i) out += kAlphabet[rng() % kAlphabet.size()];
  return out;
}

// Bytes at the end of `text` that could start `marker` (held until the next piece decides).
size_t partial_marker_tail(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (marker.starts_with(text.substr(text.size() - n))) return n;
  }
  return 0;
}

Json choice_chunk(const ResponseHead& head, Json choices) {
  return {{"id", head.id},       {"object", "chat.completion.chunk"}, {"created", head.created},
          {"model", head.model}, {"system_fingerprint", nullptr},     {"choices", std::move(choices)}};
}

}  // namespace

ResponseHead new_response_head(std::string model) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return {random_token("chatcmpl-", 24), std::chrono::duration_cast<std::chrono::seconds>(now).count(),
          std::move(model)};
}

std::vector<std::string> new_call_ids(size_t count) {
  std::vector<std::string> ids;
  for (size_t i = 0; i < count; ++i) ids.push_back(random_token("call_", 24));
  return ids;
}

Json usage_json(const Usage& usage) {
  return {{"prompt_tokens", usage.prompt},
          {"completion_tokens", usage.completion},
          {"total_tokens", usage.prompt + usage.completion},
          {"prompt_tokens_details", {{"cached_tokens", usage.cached}}}};
}

Json cact_extension(const Outcome& outcome, const SlotReport& slot) {
  Json ext = Json::parse(chat::answer_json(outcome.answer));
  ext["serve"] = {{"slot", slot.slot},
                  {"slot_fit", slot_fit_name(slot.fit)},
                  {"queue_ms", slot.queue_ms},
                  {"cached_tokens", outcome.usage.cached}};
  return ext;
}

Json completion_json(const ResponseHead& head, const Outcome& outcome, const std::vector<std::string>& call_ids,
                     const SlotReport& slot) {
  const Json choice = {{"index", 0},
                       {"message", chat::openai::assistant_message(outcome.answer, call_ids)},
                       {"logprobs", nullptr},
                       {"finish_reason", chat::openai::finish_reason(outcome.answer)}};
  return {{"id", head.id},
          {"object", "chat.completion"},
          {"created", head.created},
          {"model", head.model},
          {"system_fingerprint", nullptr},
          {"choices", Json::array({choice})},
          {"usage", usage_json(outcome.usage)},
          {"cact", cact_extension(outcome, slot)}};
}

Json chunk_json(const ResponseHead& head, Json delta, Json finish_reason) {
  return choice_chunk(head, Json::array({{{"index", 0},
                                          {"delta", std::move(delta)},
                                          {"logprobs", nullptr},
                                          {"finish_reason", std::move(finish_reason)}}}));
}

Json usage_chunk_json(const ResponseHead& head, const Usage& usage) {
  Json chunk = choice_chunk(head, Json::array());
  chunk["usage"] = usage_json(usage);
  return chunk;
}

std::vector<Json> tool_call_chunks(const ResponseHead& head, const chat::Answer& answer,
                                   const std::vector<std::string>& call_ids) {
  std::vector<Json> chunks;
  for (size_t i = 0; i < answer.function_calls.size(); ++i) {
    const chat::Call& call = answer.function_calls[i];
    const Json opening = {{"index", i},
                          {"id", call_ids.at(i)},
                          {"type", "function"},
                          {"function", {{"name", call.name}, {"arguments", ""}}}};
    const Json arguments = {{"index", i}, {"function", {{"arguments", call.arguments}}}};
    chunks.push_back(chunk_json(head, {{"tool_calls", Json::array({opening})}}));
    chunks.push_back(chunk_json(head, {{"tool_calls", Json::array({arguments})}}));
  }
  return chunks;
}

std::string sse_event(const Json& data) {
  // replace: the model's bytes are valid UTF-8 by construction, but never throw mid-stream.
  return "data: " + data.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n\n";
}

void StreamSplitter::take_text(std::string_view text, Delta& out) {
  for (const char c : text) {
    if (c == '\n') {
      if (content_started_) held_newlines_ += c;  // leading newlines are trimmed
      continue;
    }
    out.content += held_newlines_;
    held_newlines_.clear();
    out.content += c;
    content_started_ = true;
  }
}

void StreamSplitter::scan(bool final, Delta& out) {
  while (!pending_.empty()) {
    const std::string_view p = pending_;
    if (where_ == Where::text) {
      const size_t think = p.find(kThinkOpen), call = p.find(kCallOpen);
      const size_t next = std::min(think, call);
      if (next == std::string_view::npos) {
        const size_t keep = final ? 0 : std::max(partial_marker_tail(p, kThinkOpen), partial_marker_tail(p, kCallOpen));
        take_text(p.substr(0, p.size() - keep), out);
        pending_.erase(0, p.size() - keep);
        return;
      }
      take_text(p.substr(0, next), out);
      where_ = next == think ? Where::think : Where::call;
      pending_.erase(0, next + (next == think ? kThinkOpen : kCallOpen).size());
    } else if (where_ == Where::think) {
      const size_t close = p.find(kThinkClose);
      if (close == std::string_view::npos) {
        const size_t keep = final ? 0 : partial_marker_tail(p, kThinkClose);
        out.reasoning += p.substr(0, p.size() - keep);
        pending_.erase(0, p.size() - keep);
        return;
      }
      out.reasoning += p.substr(0, close);
      where_ = Where::text;
      pending_.erase(0, close + kThinkClose.size());
    } else {
      const size_t close = cact::chat::find_call_close(p);
      if (close == std::string_view::npos) {
        if (final) pending_.clear();  // an open block is never content
        return;
      }
      where_ = Where::text;
      pending_.erase(0, close + kCallClose.size());
    }
  }
}

StreamSplitter::Delta StreamSplitter::push(std::string_view piece) {
  Delta out;
  pending_ += piece;
  scan(false, out);
  return out;
}

StreamSplitter::Delta StreamSplitter::finish() {
  Delta out;
  scan(true, out);
  held_newlines_.clear();  // trailing newlines are trimmed
  return out;
}

}  // namespace cact::serve
