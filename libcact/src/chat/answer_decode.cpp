// decode_answer (answer_decode.h).
#include "chat/answer_decode.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "cact/error.h"
#include "cact/stop_strings.h"

namespace cact::chat {
namespace {

// The answer without the call that was cut off after its unlisted name: that
// call is the last `{"name":` of the last block (the name is its first key and
// the cut follows the name's closing piece); the calls before it are complete.
std::string without_cut_call(const std::string& raw) {
  const size_t open = raw.rfind("<tool_call>");
  if (open == std::string::npos) return raw;
  const size_t call = raw.rfind("{\"name\":");
  const size_t body = open + std::string_view("<tool_call>").size();
  if (call == std::string::npos || call < body + 1) return raw;
  if (call == body + 1) return raw.substr(0, open);  // the first call of the list: no block is left
  return raw.substr(0, call - 1) + "]</tool_call>";
}

// Past this many ids allowed, the next step computes every logit: each run
// of consecutive ids is a product call of its own.
constexpr size_t kFewIds = 64;

// The ids the filter allows, or none when there are more than kFewIds.
void allowed_if_few(const TokenFilter& filter, std::vector<uint8_t>& mask, std::vector<int32_t>& ids) {
  filter.fill_mask(mask);
  ids.clear();
  for (auto it = std::find(mask.begin(), mask.end(), uint8_t(1)); it != mask.end();
       it = std::find(it + 1, mask.end(), uint8_t(1))) {
    if (ids.size() == kFewIds) {
      ids.clear();
      return;
    }
    ids.push_back(int32_t(it - mask.begin()));
  }
}

void split_and_validate(const ToolList& tools, Answer& a) {
  const std::string text =
      a.stop == StopReason::suppressed_call && !a.suppressed_calls.empty() ? without_cut_call(a.raw) : a.raw;
  a.parsed = parse_answer(text);
  for (const Call& call : a.parsed.calls) {
    CallCheck check = validate_call(tools, call);
    if (check.violation == Violation::ok) a.function_calls.push_back(call);
    a.validation.push_back(std::move(check));
  }
}

}  // namespace

void decode_answer(Session& session, const Tokenizer& tok, const ChatMarkers& markers, const ToolList& tools,
                   const GenerateOptions& options, AnswerConstraint* constraint, const OnPiece& on_piece, Answer& a) {
  const auto t0 = std::chrono::steady_clock::now();
  Sampler sampler(options.sampler);
  a.seed = options.sampler.seed;
  StreamDecoder decoder(tok, StreamStart::continuation);
  StopStrings stops(options.stop);
  if (constraint != nullptr) constraint->reset();
  const size_t limit = std::min<size_t>(tok.size(), session.engine().output_rows());
  auto emit = [&](const std::string& piece) {
    const std::string out = stops.push(piece);
    a.raw += out;
    const bool go_on = !on_piece || on_piece(out);
    if (stops.matched()) a.stop = StopReason::stop_string;
    return go_on && !stops.matched();
  };
  a.stop = StopReason::max_tokens;
  // Ids the answer may still take, `pending` of those taken not fed yet.
  auto budget_left = [&](size_t pending) {
    return std::min<uint32_t>(options.max_tokens - uint32_t(a.ids.size()), session.remaining() - uint32_t(pending));
  };
  std::vector<int32_t> unfed;  // ids taken this round, fed together at its end
  std::vector<uint8_t> mask(limit);
  std::vector<int32_t> allowed;  // what may follow the ids taken this round, when few
  while (true) {
    if (a.ids.size() >= options.max_tokens) break;
    if (session.remaining() == 0) {
      a.stop = StopReason::context;
      break;
    }
    const uint32_t budget = budget_left(0);
    std::optional<BudgetFilter> filter;
    if (constraint != nullptr) {
      // Under auto, a call list the answer has no room to close is never
      // opened; rather than let the model write its call as plain text instead,
      // the answer ends here. (Under required/named the budget closes the call.)
      if (options.tool_choice.mode == ToolChoiceMode::auto_ && !constraint->in_call_list()) {
        const int32_t best = argmax(session.logits().first(limit));
        if (constraint->allows(best, UINT32_MAX) && !constraint->allows(best, budget)) break;
      }
      filter.emplace(*constraint, budget);
    }
    const int32_t next = sampler.sample(session.logits(), limit, a.ids, filter ? &*filter : nullptr);
    if (next == markers.im_end || next == markers.eos) {
      a.stop = next == markers.eos ? StopReason::eos : StopReason::im_end;
      break;
    }
    AnswerConstraint::Event event = constraint != nullptr ? constraint->accept(next) : AnswerConstraint::Event::none;
    a.ids.push_back(next);
    bool go_on = true;
    if (constraint == nullptr || options.every_step_logits) {
      session.step(next);
      go_on = emit(decoder.push(next));
    } else {
      // Ids the constraint forces need no logits: take them now and feed them
      // with `next` in one forward call (bit for bit what steps would give).
      unfed.assign(1, next);
      go_on = emit(decoder.push(next));
      allowed.clear();
      while (go_on && event != AnswerConstraint::Event::unlisted_name) {
        const uint32_t room = budget_left(unfed.size());
        if (room == 0) break;
        allowed_if_few(BudgetFilter(*constraint, room), mask, allowed);
        if (allowed.size() != 1 || allowed[0] == markers.im_end || allowed[0] == markers.eos) break;
        sampler.take_forced();
        event = constraint->accept(allowed[0]);
        a.ids.push_back(allowed[0]);
        unfed.push_back(allowed[0]);
        ++a.forced_tokens;
        go_on = emit(decoder.push(allowed[0]));
        allowed.clear();
      }
      // When few ids may come next, only their logits are computed: the
      // sampler masks the others anyway. (Under auto outside a call list the
      // loop looks at the model's own best id, so every logit is needed there.)
      if (!allowed.empty() && (options.tool_choice.mode != ToolChoiceMode::auto_ || constraint->in_call_list())) {
        session.prefill(unfed, allowed);
      } else {
        session.prefill(unfed);
      }
    }
    if (!go_on) {
      if (a.stop != StopReason::stop_string) a.stop = StopReason::cancelled;
      break;
    }
    if (event == AnswerConstraint::Event::unlisted_name) {
      a.suppressed_calls.push_back({constraint->unlisted_name(), "not in the tool list"});
      a.stop = StopReason::suppressed_call;
      break;
    }
  }
  if (a.stop != StopReason::stop_string) {
    // The decoder's held bytes, then the stop-string holdback.
    std::string tail = stops.push(decoder.finish());
    if (!stops.matched()) tail += stops.finish();
    a.raw += tail;
    if (!tail.empty() && on_piece) on_piece(tail);
    if (stops.matched()) a.stop = StopReason::stop_string;
  }
  split_and_validate(tools, a);
  a.decode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace cact::chat
