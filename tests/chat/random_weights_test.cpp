// Random weights are the strongest adversary a grammar can have: on the
// synthetic micro geometries and needle3 (whose tokenizers have the chat
// markers, byte pieces and letter pieces), 1000 constrained requests against a tool list that
// uses every supported keyword. With tool choice required (or a named tool)
// every answer ends in calls that parse and validate; with auto every call is
// valid or suppressed; the answer never runs out of budget mid-call.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cact/chat.h"
#include "cact/synth.h"
#include "support/test_paths.h"

namespace {

std::string varied_tools() {
  std::ifstream in(cact::test::source_dir() / "tests" / "chat" / "varied_tools.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Sanitizer builds look for memory errors, not for rarer grammar paths: a
// quarter of the requests keeps their CI stage within minutes.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kSanitizerShare = 4;
#else
constexpr int kSanitizerShare = 1;
#endif

const char* const kQueries[] = {"set a timer", "warm it up", "queue songs", "plan a route", "ping", "hello"};

struct Tally {
  int requests = 0, calls = 0, suppressed = 0;
};

void random_requests(const std::filesystem::path& archive, int count, Tally& t) {
  const cact::chat::ToolList tools = cact::chat::parse_tool_list(varied_tools(), "varied_tools.json");
  const cact::Model model = cact::Model::open(archive);
  const cact::Tokenizer tok(model.tokenizer_model());
  const cact::Engine engine(model);
  cact::chat::ChatOptions options;
  options.session.context = 2048;
  options.session.threads = 1;
  cact::chat::ChatSession chat(engine, tok, options);
  chat.set_tools(tools);
  for (int i = 0; i < count; ++i) {
    cact::chat::GenerateOptions o;
    // Tight budgets too: the longest of the shortest calls (set_thermostat)
    // is ~70 tokens in the micro vocabulary, where JSON punctuation is byte pieces.
    o.max_tokens = uint32_t(96 + (i % 7) * 24);
    o.sampler = {.temperature = i % 5 == 0 ? 0.0f : 1.5f, .seed = uint64_t(i)};
    const int mode = i % 4;
    o.tool_choice.mode = mode == 0   ? cact::chat::ToolChoiceMode::auto_
                         : mode == 1 ? cact::chat::ToolChoiceMode::required
                                     : cact::chat::ToolChoiceMode::named;
    if (mode >= 2) o.tool_choice.name = tools.tools[size_t(i / 4) % tools.tools.size()].name;
    chat.reset();
    const cact::chat::Answer a = chat.ask(kQueries[i % 6], o);
    ++t.requests;
    INFO(archive.filename().string(), ": ", a.raw, " (stop ", cact::chat::stop_reason_name(a.stop), " after ",
         a.ids.size(), " of ", o.max_tokens, " tokens)");
    CHECK(a.parsed.call_json.empty());  // every call block parses
    for (const auto& v : a.validation) CHECK(v.violation == cact::chat::Violation::ok);
    CHECK(a.function_calls.size() == a.parsed.calls.size());
    t.calls += int(a.function_calls.size());
    t.suppressed += int(a.suppressed_calls.size());
    if (o.tool_choice.mode == cact::chat::ToolChoiceMode::auto_) {
      CHECK((a.stop == cact::chat::StopReason::suppressed_call) == !a.suppressed_calls.empty());
    } else {
      CHECK(!a.function_calls.empty());
      CHECK(a.suppressed_calls.empty());
      if (o.tool_choice.mode == cact::chat::ToolChoiceMode::named) {
        for (const auto& c : a.function_calls) CHECK(c.name == o.tool_choice.name);
      }
    }
  }
}

}  // namespace

TEST_CASE("chat: 1000 constrained requests on random weights never produce an invalid call") {
  Tally t;
  int planned = 0;
  const auto dir = cact::test::scratch_dir("random-weights");
  for (const char* name : {"micro", "micro-notaps", "micro-mixed", "micro-heads", "needle3"}) {
    CAPTURE(name);
    // The golden micro archives hold 256 positions; the tool list alone is
    // ~1000 byte-fallback tokens in their 320-piece vocabulary.
    cact::SynthSpec spec = cact::synth_preset(name);
    spec.geometry.max_seq_len = std::max<uint32_t>(spec.geometry.max_seq_len, 2048);
    const auto path = dir / (std::string(name) + ".cact");
    cact::write_synth_archive(path, spec);
    const int count = (std::string(name) == "needle3" ? 12 : 247) / kSanitizerShare;
    random_requests(path, count, t);
    planned += count;
    std::filesystem::remove(path);
  }
  CHECK(t.requests == planned);
  if (kSanitizerShare == 1) CHECK(planned == 1000);
  MESSAGE("valid calls: " << t.calls << ", suppressed: " << t.suppressed);
}
