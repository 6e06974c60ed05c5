// bench_constraint: the cost of the tool-call constraint per decode step
// (chat/answer_constraint.h). Seeded random walks under the constraint, as in
// tests/chat/constraint_test.cpp, with a tool list that uses every supported
// keyword; per step the time of fill_mask (the sampler's slow path) and of one
// allows() (its fast path), split by where the answer is (free text or inside
// the call list); each the best of three runs at the same state. Vocabularies: the bundled tool model's 2048 pieces and
// the synthetic 8192-piece one.
//
//   bench_constraint [WALKS]     (default 200 walks of up to 200 tokens per mode)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cact/model.h"
#include "cact/synth.h"
#include "cact/tokenizer.h"
#include "cact/tools.h"
#include "chat/answer_constraint.h"
#include "chat/vocab_surfaces.h"

namespace {

using cact::chat::AnswerConstraint;
using Clock = std::chrono::steady_clock;
constexpr int kRepeats = 3;

constexpr const char* kTools = R"JSON([
 {"name":"set_timer","parameters":{"type":"object","properties":{"minutes":{"type":"integer","minimum":1,"maximum":120}},"required":["minutes"]}},
 {"name":"book_table","parameters":{"type":"object","properties":{
   "restaurant":{"type":"string","minLength":2,"maxLength":40},
   "party":{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":13},
   "budget":{"type":"number","minimum":-2.5,"maximum":99.75},
   "outdoor":{"type":"boolean"},"note":{"type":"null"},"seating":{"enum":["window","bar","patio"]},
   "guests":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":3},
   "contact":{"type":"object","properties":{"name":{"type":"string"},"phone":{"type":"string","minLength":3}},
     "required":["name","phone"],"additionalProperties":false}},
   "required":["restaurant","party","contact"]}},
 {"name":"send_message","parameters":{"type":"object","properties":{"to":{"type":"string"},"text":{"type":"string"}},"required":["to","text"]}},
 {"name":"ping","parameters":{"type":"object","properties":{}}}
])JSON";

struct Times {
  std::vector<double> fill_us, allows_ns;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * double(v.size())))];
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (const double x : v) s += x;
  return v.empty() ? 0.0 : s / double(v.size());
}

void report(const char* vocab, const char* mode, const char* where, const Times& t) {
  std::printf(
      "%-10s %-9s %-10s steps %6zu  fill_mask us: mean %6.2f  p50 %6.2f  p99 %6.2f  max %7.2f   allows ns: mean %6.1f  "
      "p99 %6.1f\n",
      vocab, mode, where, t.fill_us.size(), mean(t.fill_us), percentile(t.fill_us, 0.5), percentile(t.fill_us, 0.99),
      percentile(t.fill_us, 1.0), mean(t.allows_ns), percentile(t.allows_ns, 0.99));
}

void bench(const char* vocab_name, const cact::Tokenizer& tok, const cact::chat::ToolList& tools,
           cact::chat::ToolChoiceMode mode, const char* mode_name, int walks) {
  AnswerConstraint c(tok, tools, {mode, ""});
  const cact::chat::VocabSurfaces vocab(tok);
  const size_t n = tok.size();
  std::mt19937_64 rng(42);
  std::vector<uint8_t> mask(n);
  std::vector<int32_t> allowed, markers, probes(32);
  Times text, calls;
  for (int w = 0; w < walks; ++w) {
    c.reset();
    for (uint32_t left = 200; left > 0; --left) {
      Times& t = c.in_call_list() ? calls : text;
      // Each figure is the best of a few repetitions at the same state, so a
      // preempted run (the machine may be shared) does not count.
      double fill = 1e30, check = 1e30;
      bool probe_allowed = false;
      int32_t probe = 0;
      for (int rep = 0; rep < kRepeats; ++rep) {
        const auto t0 = Clock::now();
        c.fill_mask(mask, left);
        const auto t1 = Clock::now();
        fill = std::min(fill, std::chrono::duration<double, std::micro>(t1 - t0).count());
        // allows() of random ids (the sampler's check of its argmax), per call.
        for (int32_t& p : probes) p = static_cast<int32_t>(rng() % n);
        size_t yes = 0;
        const auto t2 = Clock::now();
        for (const int32_t p : probes) yes += c.allows(p, left);
        const auto t3 = Clock::now();
        check = std::min(check, std::chrono::duration<double, std::nano>(t3 - t2).count() / double(probes.size()));
        probe = probes.front();
        probe_allowed = c.allows(probe, left);
        if (yes > probes.size()) std::abort();
      }
      t.fill_us.push_back(fill);
      t.allows_ns.push_back(check);
      allowed.clear();
      markers.clear();
      for (size_t i = 0; i < n; ++i) {
        if (!mask[i]) continue;
        allowed.push_back(static_cast<int32_t>(i));
        if (vocab.kind(static_cast<int32_t>(i)) == cact::chat::PieceKind::marker)
          markers.push_back(static_cast<int32_t>(i));
      }
      if (allowed.empty() || (probe_allowed && !mask[size_t(probe)])) {
        std::fprintf(stderr, "bench_constraint: the mask disagrees with allows() or is empty\n");
        std::exit(1);
      }
      // Mostly uniform, now and then a marker, so walks enter call lists.
      const int32_t id =
          !markers.empty() && rng() % 8 == 0 ? markers[rng() % markers.size()] : allowed[rng() % allowed.size()];
      if (id == vocab.eos_id() || id == vocab.marker_id(cact::chat::Marker::im_end)) break;
      if (c.accept(id) == AnswerConstraint::Event::unlisted_name) break;
    }
  }
  report(vocab_name, mode_name, "text", text);
  report(vocab_name, mode_name, "call_list", calls);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const int walks = argc > 1 ? std::atoi(argv[1]) : 200;
    const cact::chat::ToolList tools = cact::chat::parse_tool_list(kTools, "bench tools");
    const cact::Tokenizer tools_tok(
        cact::Model::open(CACT_SOURCE_DIR "/models/tools/tools-tiny.cact").tokenizer_model());
    const cact::Tokenizer synthetic(cact::synthetic_tokenizer(8192));
    for (const auto& [name, tok] :
         {std::pair<const char*, const cact::Tokenizer*>{"tools-2048", &tools_tok}, {"synth-8192", &synthetic}}) {
      bench(name, *tok, tools, cact::chat::ToolChoiceMode::required, "required", walks);
      bench(name, *tok, tools, cact::chat::ToolChoiceMode::auto_, "auto", walks);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_constraint: %s\n", e.what());
    return 1;
  }
  return 0;
}
