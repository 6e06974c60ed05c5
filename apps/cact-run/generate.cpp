// The generation loop of cact-run: prompt ids, prefill, sample, stream.
#include <algorithm>
#include <chrono>

#include "cact/error.h"
#include "run.h"

namespace cact::run {

const char* stop_name(Stop s) {
  switch (s) {
    case Stop::eos: return "eos";
    case Stop::im_end: return "im_end";
    case Stop::max_tokens: return "max_tokens";
    case Stop::context: return "context";
  }
  return "unknown";
}

std::vector<int32_t> prompt_ids(const Options& o, const Tokenizer& tok) {
  std::vector<int32_t> ids{int32_t(tok.model().bos_id)};
  const std::vector<int32_t> body = tok.encode(o.prompt);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

uint32_t session_context(const Options& o, size_t prompt_tokens, uint32_t max_seq_len) {
  if (o.context != 0) return o.context;
  return uint32_t(std::min<uint64_t>(max_seq_len, uint64_t(prompt_tokens) + o.max_tokens));
}

Result generate(Session& session, const Tokenizer& tok, const Options& o, std::vector<int32_t> ids,
                const std::function<void(const std::string&)>& emit) {
  using clock = std::chrono::steady_clock;
  Result r;
  r.prompt_ids = std::move(ids);
  const int32_t eos = int32_t(tok.model().eos_id);
  const int32_t im_end = tok.find("<|im_end|>");
  Sampler sampler(o.sampler);
  StreamDecoder decoder(tok);

  const auto t0 = clock::now();
  std::span<const float> logits = session.prefill(r.prompt_ids);
  const auto t1 = clock::now();
  r.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();
  // Ids past the tokenizer's pieces are never produced (FORMAT.md).
  const size_t limit = std::min<size_t>(tok.size(), logits.size());
  r.generated.reserve(o.max_tokens);
  while (true) {
    if (r.generated.size() >= o.max_tokens) {
      r.stop = Stop::max_tokens;
      break;
    }
    const int32_t next = sampler.sample(logits, limit);
    if (next == eos) {
      r.stop = Stop::eos;
      break;
    }
    if (next == im_end) {
      r.stop = Stop::im_end;
      break;
    }
    r.generated.push_back(next);
    const std::string piece = decoder.push(next);
    r.text += piece;
    if (!piece.empty()) emit(piece);
    if (r.generated.size() >= o.max_tokens) {
      r.stop = Stop::max_tokens;
      break;
    }
    if (session.remaining() == 0) {
      r.stop = Stop::context;
      break;
    }
    logits = session.step(next);
    ++r.decode_steps;
  }
  const std::string tail = decoder.finish();
  r.text += tail;
  if (!tail.empty()) emit(tail);
  r.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  if (session.has_head(HeadKind::confidence)) r.confidence = session.confidence();
  return r;
}

}  // namespace cact::run
