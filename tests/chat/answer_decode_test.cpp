// decode_answer against a plain step-by-step loop: ids the constraint forces
// are taken without sampling and fed in one forward call with the id before
// them, and when few ids may follow only their logits are computed; neither
// may change the answer (greedy or seeded) or the session's state. With
// every_step_logits each id gets its own full step, before its piece is seen.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cact/chat.h"
#include "cact/engine.h"
#include "cact/sampler.h"
#include "cact/tools.h"
#include "chat/answer_constraint.h"
#include "chat/answer_decode.h"
#include "chat/chat_fixture.h"
#include "chat/render.h"

using namespace cact;
using namespace cact::chat;

namespace {

struct StepByStep {
  std::vector<int32_t> ids;
  uint32_t single_choices = 0;  // ids after the first that were the only one allowed (markers aside)
};

// One sample and one decode step per id, the mask looked at before each.
StepByStep decode_step_by_step(Session& session, const ChatMarkers& markers, const GenerateOptions& o,
                               AnswerConstraint& c, size_t vocab) {
  StepByStep r;
  Sampler sampler(o.sampler);
  std::vector<uint8_t> mask(vocab);
  while (r.ids.size() < o.max_tokens) {
    const BudgetFilter filter(c, o.max_tokens - uint32_t(r.ids.size()));
    filter.fill_mask(mask);
    const bool single = std::count(mask.begin(), mask.end(), uint8_t(1)) == 1;
    const int32_t next = sampler.sample(session.logits(), vocab, r.ids, &filter);
    if (next == markers.im_end || next == markers.eos) break;
    if (single && !r.ids.empty()) ++r.single_choices;
    const AnswerConstraint::Event event = c.accept(next);
    r.ids.push_back(next);
    session.step(next);
    if (event == AnswerConstraint::Event::unlisted_name) break;
  }
  return r;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("decode_answer: forced ids fed together give the step-by-step answer and state") {
  const auto& m = test::tool_model();
  const ChatMarkers markers(m.tok);
  const size_t vocab = std::min<size_t>(m.tok.size(), m.int8.output_rows());
  const auto& convs = test::expected_conversations();
  uint32_t forced = 0, answers = 0, sparse = 0;
  for (size_t k = 0; k < 6; ++k) {
    const auto& conv = convs[k];
    const ToolList tools = parse_tool_list(conv.tools_json, "expected.jsonl");
    std::vector<int32_t> prompt = render_prefix(m.tok, markers, conv.system, tools.compact_json);
    {
      PromptBuilder b(m.tok, markers, prompt);
      render_user_turn(b, markers, conv.messages[0].content, true, false);
    }
    for (const ToolChoiceMode mode : {ToolChoiceMode::required, ToolChoiceMode::auto_}) {
      for (const float temperature : {0.0f, 1.0f}) {
        GenerateOptions o;
        o.max_tokens = 96;
        o.tool_choice.mode = mode;
        o.sampler.temperature = temperature;
        o.sampler.seed = 11 + k;
        CAPTURE(conv.messages[0].content);
        CAPTURE(int(mode));
        CAPTURE(temperature);
        Session together(m.int8), stepwise(m.int8);
        together.prefill(prompt);
        stepwise.prefill(prompt);
        AnswerConstraint c1(m.tok, tools, o.tool_choice), c2(m.tok, tools, o.tool_choice);
        Answer a;
        decode_answer(together, m.tok, markers, tools, o, &c1, {}, a);
        const StepByStep ref = decode_step_by_step(stepwise, markers, o, c2, vocab);
        CHECK(a.ids == ref.ids);
        CHECK(a.forced_tokens == ref.single_choices);
        CHECK(together.position() == stepwise.position());
        // The last feed may have computed only the ids allowed next: those
        // are the step's bits, the rest -inf. One more full step each shows
        // the states are the same.
        size_t computed = 0;
        for (size_t id = 0; id < vocab; ++id) {
          if (together.logits()[id] == -std::numeric_limits<float>::infinity()) continue;
          ++computed;
          CHECK(together.logits()[id] == stepwise.logits()[id]);
        }
        CHECK(computed > 0);
        sparse += computed < vocab;
        // every_step_logits: one full step per id, its logits readable from the callback.
        Session each(m.int8);
        each.prefill(prompt);
        o.every_step_logits = true;
        Answer e;
        size_t callbacks_with_logits = 0;
        decode_answer(
            each, m.tok, markers, tools, o, &c1,
            [&](std::string_view) {
              callbacks_with_logits +=
                  each.logits().size() == m.int8.output_rows() &&
                  std::none_of(each.logits().begin(), each.logits().end(), [](float v) { return std::isinf(v); });
              return true;
            },
            e);
        CHECK(e.ids == ref.ids);
        CHECK(e.forced_tokens == 0);
        CHECK(callbacks_with_logits == e.ids.size());
        CHECK(same_bits(each.logits(), stepwise.logits()));
        CHECK(same_bits(together.step(markers.im_end), stepwise.step(markers.im_end)));
        forced += a.forced_tokens;
        ++answers;
      }
    }
  }
  // Every call names its tool and keys, most of whose pieces the grammar forces.
  CHECK(forced >= answers);
  // A call list's end allows only <|im_end|> and eos.
  CHECK(sparse > 0);
}
