// Text continuation: bos + prompt, prefill, sample, stream the continuation.
#include <algorithm>
#include <chrono>

#include "cact/error.h"
#include "cact/stop_strings.h"
#include "common/output.h"
#include "run.h"

namespace cact::run {

std::vector<int32_t> completion_prompt_ids(const Tokenizer& tok, std::string_view prompt) {
  std::vector<int32_t> ids{int32_t(tok.model().bos_id)};
  const std::vector<int32_t> body = tok.encode(prompt);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

uint32_t completion_context(const Options& o, size_t prompt_tokens, uint32_t max_seq_len) {
  if (o.context != 0) return o.context;
  return uint32_t(std::min<uint64_t>(max_seq_len, uint64_t(prompt_tokens) + o.max_tokens.value_or(kCompleteTokens)));
}

Completion complete(Session& session, const Tokenizer& tok, const Options& o, std::vector<int32_t> ids,
                    const OnText& emit) {
  using clock = std::chrono::steady_clock;
  using chat::StopReason;
  Completion r;
  r.prompt_ids = std::move(ids);
  const uint32_t max_tokens = o.max_tokens.value_or(kCompleteTokens);
  const int32_t eos = int32_t(tok.model().eos_id);
  const int32_t im_end = tok.find("<|im_end|>");
  const SamplerOptions so = turn_sampler(o);
  r.seed = so.seed;
  Sampler sampler(so);
  StreamDecoder decoder(tok, StreamStart::continuation);
  chat::StopStrings stop_text(o.stop);
  std::vector<int32_t> recent = r.prompt_ids;  // what the repeat penalty looks at

  // The text of a piece through the stop strings to `emit`; false: stop now.
  const auto show = [&](std::string_view piece) {
    const std::string text = stop_text.push(piece);
    r.text += text;
    const bool go_on = text.empty() || emit(text);
    if (stop_text.matched()) r.stop = StopReason::stop_string;
    if (!go_on && !stop_text.matched()) r.stop = StopReason::cancelled;
    return go_on && !stop_text.matched();
  };
  const auto t0 = clock::now();
  std::span<const float> logits = session.prefill(r.prompt_ids);
  const auto t1 = clock::now();
  r.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();
  // Ids past the tokenizer's pieces are never produced (FORMAT.md).
  const size_t limit = std::min<size_t>(tok.size(), logits.size());
  r.generated.reserve(max_tokens);
  r.stop = StopReason::max_tokens;
  while (max_tokens > 0) {
    const int32_t next = sampler.sample(logits, limit, recent, nullptr);
    if (next == eos || next == im_end) {
      r.stop = next == eos ? StopReason::eos : StopReason::im_end;
      break;
    }
    r.generated.push_back(next);
    recent.push_back(next);
    if (!show(decoder.push(next))) break;
    if (r.generated.size() >= max_tokens) break;
    if (session.remaining() == 0) {
      r.stop = StopReason::context;
      break;
    }
    logits = session.step(next);
    ++r.decode_steps;
  }
  if (r.stop != StopReason::stop_string && r.stop != StopReason::cancelled) {
    show(decoder.finish());
    const std::string tail = stop_text.finish();
    r.text += tail;
    if (!tail.empty()) emit(tail);
  }
  r.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  if (session.has_head(HeadKind::confidence)) r.confidence = session.confidence();
  return r;
}

}  // namespace cact::run
