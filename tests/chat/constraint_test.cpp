// Schema-constrained decoding (chat/answer_constraint.h, chat/call_grammar.h):
// the bundled model's expected answers pass token by token, adversarial random
// walks always end in calls that parse and validate, masks equal per-id checks,
// and the grammar's shortest completion is exact.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "cact/error.h"
#include "cact/json_input.h"
#include "cact/model.h"
#include "cact/synth.h"
#include "cact/tokenizer.h"
#include "cact/tools.h"
#include "chat/answer_constraint.h"
#include "chat/call_grammar.h"
#include "chat/chat_fixture.h"
#include "chat/vocab_surfaces.h"

using namespace cact;
using namespace cact::chat;

namespace {

const Tokenizer& tools_tokenizer() {
  static const Tokenizer tok(Model::open(CACT_SOURCE_DIR "/models/tools/tools-tiny.cact").tokenizer_model());
  return tok;
}

const Tokenizer& synthetic_tokenizer_8192() {
  static const Tokenizer tok(synthetic_tokenizer(8192));
  return tok;
}

// Every supported keyword at least once, names that need escaping or are not
// ASCII, a tool without arguments, enum values that break a bound.
constexpr const char* kRichTools = R"JSON([
 {"name":"set_timer","description":"Start a timer.","parameters":{"type":"object",
   "properties":{"minutes":{"type":"integer","minimum":1,"maximum":120}},"required":["minutes"]}},
 {"name":"book_table","parameters":{"type":"object","properties":{
   "restaurant":{"type":"string","minLength":2,"maxLength":12},
   "party":{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":13},
   "budget":{"type":"number","minimum":-2.5,"maximum":99.75},
   "ratio":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":0.1},
   "outdoor":{"type":"boolean"},
   "note":{"type":"null"},
   "seating":{"enum":["window","bar","patio"]},
   "level":{"type":"integer","enum":[1,10,100,500],"maximum":100},
   "version":{"const":2},
   "guests":{"type":"array","items":{"type":"string","maxLength":8},"minItems":1,"maxItems":3},
   "contact":{"type":"object","properties":{"name":{"type":"string"},"phone":{"type":"string","minLength":3},
     "vip":{"type":"boolean"}},"required":["name","phone"],"additionalProperties":false}},
   "required":["restaurant","party","contact"],"additionalProperties":false}},
 {"name":"ping","description":"No arguments.","parameters":{"type":"object","properties":{}}},
 {"name":"m\u00e9t\u00e9o \"now\"","parameters":{"type":"object","properties":{
   "rows":{"type":"array","items":{"type":"array","items":{"type":"integer","minimum":-5,"maximum":5},"maxItems":2},
     "minItems":1,"maxItems":2},
   "scale":{"type":"number","minimum":0.001,"maximum":1},
   "tag":{"type":"string","enum":["a\"b","\u00fcber"]}},"required":["rows"]}}
])JSON";

const ToolList& rich_tools() {
  static const ToolList tools = parse_tool_list(kRichTools, "rich tools");
  return tools;
}

ToolChoice choice(ToolChoiceMode mode, std::string name = {}) { return ToolChoice{mode, std::move(name)}; }

// An answer text as the model would write it: markers as marker ids, the rest
// encoded as a continuation (no dummy prefix).
std::vector<int32_t> encode_answer(const Tokenizer& tok, std::string_view text) {
  std::vector<int32_t> ids;
  while (!text.empty()) {
    size_t next = std::string_view::npos;
    Marker which{};
    for (size_t m = 0; m < kMarkerCount; ++m) {
      const size_t at = text.find(marker_surface(static_cast<Marker>(m)));
      if (at < next) {
        next = at;
        which = static_cast<Marker>(m);
      }
    }
    const std::string_view plain = text.substr(0, next);
    if (!plain.empty()) {
      const auto part = tok.encode_data(plain, /*at_start=*/false);
      ids.insert(ids.end(), part.begin(), part.end());
    }
    if (next == std::string_view::npos) break;
    ids.push_back(tok.find(marker_surface(which)));
    text.remove_prefix(next + marker_surface(which).size());
  }
  return ids;
}

std::string decode_continuation(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  StreamDecoder d(tok, StreamStart::continuation);
  std::string out;
  for (const int32_t id : ids) out += d.push(id);
  return out + d.finish();
}

// Every id: fill_mask agrees with allows().
void check_mask_matches(const AnswerConstraint& c, size_t vocab, uint32_t budget) {
  std::vector<uint8_t> mask(vocab, 7);
  c.fill_mask(mask, budget);
  size_t differences = 0;
  for (size_t id = 0; id < vocab; ++id) {
    if ((mask[id] != 0) != c.allows(static_cast<int32_t>(id), budget)) {
      if (++differences <= 3) {
        CHECK_MESSAGE(false, "fill_mask and allows differ at id " << id << " (mask " << int(mask[id]) << ", budget "
                                                                  << budget << ")");
      }
    }
  }
  CHECK(differences == 0);
}

// From `s`, follow the bytes that lower the shortest completion most: one must
// lower it by one at least at every step (exactly one when `exact`), and the
// list must be closed (or stopped) when it reaches zero. This is what makes the
// budget rule free of dead ends. (Under auto a name's cost counts the listed
// calls until the name is open; then closing it unlisted is the shortest.)
void check_shortest_completion(const CallGrammar& g, CallGrammar::State s, bool exact) {
  uint32_t cost = g.min_bytes_to_complete(s);
  REQUIRE(cost != kNoCompletion);
  while (cost > 0) {
    uint32_t best = kNoCompletion;
    CallGrammar::State best_state;
    for (unsigned b = 0; b < 256; ++b) {
      CallGrammar::State next = s;
      if (g.step(next, static_cast<uint8_t>(b)) == CallGrammar::Step::refused) continue;
      if (const uint32_t c = g.min_bytes_to_complete(next); c < best) {
        best = c;
        best_state = next;
      }
    }
    REQUIRE_MESSAGE(best < cost, "no byte shortens a completion of length " << cost);
    if (exact) REQUIRE(best == cost - 1);
    s = best_state;
    cost = best;
  }
  CHECK((g.closed(s) || g.stopped(s)));
}

// Feeds `text` byte by byte; returns the step of the last byte, or refused at
// the first refused one.
CallGrammar::Step feed(const CallGrammar& g, CallGrammar::State& s, std::string_view text) {
  CallGrammar::Step r = CallGrammar::Step::ok;
  for (const char c : text) {
    r = g.step(s, static_cast<uint8_t>(c));
    if (r != CallGrammar::Step::ok) return r;
  }
  return r;
}

bool accepts_list(const CallGrammar& g, std::string_view text) {
  CallGrammar::State s = g.start();
  return feed(g, s, text) == CallGrammar::Step::ok && g.closed(s);
}

// A prefix of some valid list that can still be completed.
bool viable_prefix(const CallGrammar& g, std::string_view text) {
  CallGrammar::State s = g.start();
  return feed(g, s, text) == CallGrammar::Step::ok && g.min_bytes_to_complete(s) != kNoCompletion;
}

}  // namespace

TEST_CASE("constraint vocabulary: surfaces, markers and the piece trie") {
  for (const Tokenizer* tok : {&tools_tokenizer(), &synthetic_tokenizer_8192()}) {
    const VocabSurfaces vocab(*tok);
    REQUIRE(vocab.size() == tok->size());
    for (size_t m = 0; m < kMarkerCount; ++m)
      CHECK(vocab.marker_id(static_cast<Marker>(m)) == static_cast<int32_t>(4 + m));
    CHECK(vocab.kind(0) == PieceKind::none);
    CHECK(vocab.kind(vocab.eos_id()) == PieceKind::eos);
    // A piece prints its bytes (whole UTF-8 ones as they are, ▁ as a space).
    size_t text = 0;
    for (size_t i = 0; i < vocab.size(); ++i) {
      const auto id = static_cast<int32_t>(i);
      if (vocab.kind(id) != PieceKind::text) continue;
      ++text;
      const std::string printed = decode_continuation(*tok, {id});
      if (printed.find("\xEF\xBF\xBD") == std::string::npos) CHECK(printed == vocab.bytes(id));
    }
    // The trie holds every text piece once, on the path of its bytes.
    size_t reached = 0;
    std::vector<std::pair<const VocabSurfaces::TrieNode*, std::string>> todo{{&vocab.trie_root(), ""}};
    while (!todo.empty()) {
      const auto [node, path] = todo.back();
      todo.pop_back();
      for (const int32_t id : vocab.ending_at(*node)) {
        CHECK(vocab.bytes(id) == path);
        ++reached;
      }
      for (const auto& child : vocab.children(*node)) todo.emplace_back(&child, path + static_cast<char>(child.byte));
    }
    CHECK(reached == text);
  }
}

TEST_CASE("constraint grammar: call lists and argument values") {
  const ToolList& tools = rich_tools();
  const CallGrammar req(tools, choice(ToolChoiceMode::required));
  const std::string head =
      R"([{"name":"book_table","arguments":{"restaurant":"Ab","party":4,"contact":{"name":"","phone":"123"})";
  CHECK(accepts_list(req, head + "}}]"));
  CHECK(accepts_list(req, R"([{"name":"ping","arguments":{}},{"name":"set_timer","arguments":{"minutes":120}}])"));
  CHECK(
      accepts_list(
          req, R"([{"name":"m\u00e9t\u00e9o \"now\"","arguments":{"rows":[[],[-5,5]],"scale":0.001,"tag":"a\"b"}}])") ==
      false);
  CHECK(accepts_list(req,
                     "[{\"name\":\"m\xC3\xA9t\xC3\xA9o "
                     "\\\"now\\\"\",\"arguments\":{\"rows\":[[],[-5,5]],\"scale\":0.001,\"tag\":\"a\\\"b\"}}]"));
  // Shape: compact, name first, at least one call, nothing after ']'.
  CHECK_FALSE(viable_prefix(req, "[]"));
  CHECK_FALSE(viable_prefix(req, "[ "));
  CHECK_FALSE(viable_prefix(req, R"([{"arguments")"));
  CHECK_FALSE(viable_prefix(req, R"([{"name":"pong")"));
  CHECK_FALSE(viable_prefix(req, R"([{"name":"ping","arguments":{}}]])"));
  // Keys: declared, each once, required ones before '}'.
  CHECK_FALSE(viable_prefix(req, head + R"(,"party")"));
  CHECK_FALSE(viable_prefix(req, head + R"(,"extra")"));
  CHECK_FALSE(viable_prefix(req, R"([{"name":"book_table","arguments":{"restaurant":"Ab"})"));
  CHECK(viable_prefix(req, head + R"(,"outdoor":false,"note":null,"seating":"patio","version":2)"));
  CHECK_FALSE(viable_prefix(req, head + R"(,"version":3)"));
  CHECK_FALSE(viable_prefix(req, head + R"(,"seating":"booth")"));
  // An enum value that breaks the schema's maximum is never written.
  CHECK(viable_prefix(req, head + R"(,"level":100)"));
  CHECK_FALSE(viable_prefix(req, head + R"(,"level":500)"));
  CHECK(viable_prefix(req, head + R"(,"level":10,)"));
  // Strings: lengths in code points, an escape or a surrogate pair is one.
  const std::string book = R"([{"name":"book_table","arguments":{"restaurant":)";
  CHECK_FALSE(viable_prefix(req, book + R"("A",)"));
  CHECK(viable_prefix(req, book + R"("\u00e9\n",)"));
  CHECK(viable_prefix(req, book + R"("\ud83d\ude00x",)"));
  CHECK(viable_prefix(req, book + R"("abcdefghijkl")"));
  CHECK_FALSE(viable_prefix(req, book + R"("abcdefghijklm)"));
  CHECK_FALSE(viable_prefix(req, book + R"("\ude00)"));   // a lone low surrogate
  CHECK_FALSE(viable_prefix(req, book + R"("\ud83dx)"));  // a high one without its low half
  CHECK_FALSE(viable_prefix(req, book + R"("\ud83d\u0041)"));
  CHECK_FALSE(viable_prefix(req, book + R"("\x)"));
  CHECK_FALSE(viable_prefix(req, book + "\"a\tb"));           // raw control byte
  CHECK_FALSE(viable_prefix(req, book + "\"a\xC0\x80"));      // overlong
  CHECK_FALSE(viable_prefix(req, book + "\"a\xED\xA0\x80"));  // an encoded surrogate
  CHECK(viable_prefix(req, book + "\"a\xF0\x9F\x98\x80\""));
  // Integers: digits refused as soon as no completion is in range.
  const std::string timer = R"([{"name":"set_timer","arguments":{"minutes":)";
  CHECK(viable_prefix(req, timer + "12"));
  CHECK(viable_prefix(req, timer + "120}"));
  CHECK_FALSE(viable_prefix(req, timer + "121"));
  CHECK_FALSE(viable_prefix(req, timer + "0"));
  CHECK_FALSE(viable_prefix(req, timer + "-"));
  CHECK_FALSE(viable_prefix(req, timer + "01"));
  CHECK_FALSE(viable_prefix(req, timer + "1.0"));
  CHECK_FALSE(viable_prefix(req, timer + "1e2"));
  const std::string party = book + R"("Ab","party":)";
  CHECK_FALSE(viable_prefix(req, party + "0"));
  CHECK(viable_prefix(req, party + "12,"));
  CHECK_FALSE(viable_prefix(req, party + "13"));
  // Numbers: bounds on every prefix, and on the double the text is read as.
  const std::string num = party + R"(1,"contact":{"name":"","phone":"123"},)";
  CHECK(viable_prefix(req, num + R"("budget":-2.5,)"));
  CHECK_FALSE(viable_prefix(req, num + R"("budget":-2.51)"));
  CHECK(viable_prefix(req, num + R"("budget":99.75})"));
  CHECK_FALSE(viable_prefix(req, num + R"("budget":99.76)"));
  CHECK_FALSE(viable_prefix(req, num + R"("budget":100)"));
  CHECK(viable_prefix(req, num + R"("ratio":0.09)"));
  CHECK(viable_prefix(req, num + R"("ratio":0.099999999999999})"));
  CHECK_FALSE(viable_prefix(req, num + R"("ratio":0.1)"));  // 0.1 reads as the bound itself
  CHECK_FALSE(viable_prefix(req, num + R"("ratio":0})"));
  CHECK_FALSE(viable_prefix(req, num + R"("ratio":0.000000000000000)"));
  CHECK(viable_prefix(req, num + R"("ratio":0.000000000000001})"));
  // Arrays: item counts.
  CHECK_FALSE(viable_prefix(req, num + R"("guests":[])"));
  CHECK(viable_prefix(req, num + R"("guests":["a","b","c"])"));
  CHECK_FALSE(viable_prefix(req, num + R"("guests":["a","b","c",)"));
  // Nested objects: additionalProperties false, required keys.
  CHECK_FALSE(viable_prefix(req, party + R"(1,"contact":{"name":"x"})"));
  CHECK(viable_prefix(req, party + R"(1,"contact":{"vip":true,"phone":"123","name":"x"})"));
}

TEST_CASE("constraint grammar: names by tool choice") {
  const ToolList& tools = rich_tools();
  const CallGrammar automatic(tools, choice(ToolChoiceMode::auto_));
  const CallGrammar named(tools, choice(ToolChoiceMode::named, "set_timer"));
  CHECK(accepts_list(named, R"([{"name":"set_timer","arguments":{"minutes":5}}])"));
  CHECK_FALSE(viable_prefix(named, R"([{"name":"p)"));
  // Under auto a name is any string: a listed one (in any spelling) goes on, an
  // unlisted one stops the list when it closes.
  CHECK(accepts_list(automatic, R"([{"name":"set_\u0074imer","arguments":{"minutes":5}}])"));
  CallGrammar::State s = automatic.start();
  CHECK(feed(automatic, s, R"([{"name":"set_alarm")") == CallGrammar::Step::unlisted);
  CHECK(automatic.stopped(s));
  CHECK(automatic.min_bytes_to_complete(s) == 0);
  CHECK(automatic.step(s, ',') == CallGrammar::Step::refused);
  // The shortest completions: exact lengths.
  const CallGrammar ping(tools, choice(ToolChoiceMode::named, "ping"));
  CHECK(ping.min_bytes_to_complete(ping.start()) == std::string(R"([{"name":"ping","arguments":{}}])").size());
  const CallGrammar req(tools, choice(ToolChoiceMode::required));
  CHECK(req.min_bytes_to_complete(req.start()) == std::string(R"([{"name":"ping","arguments":{}}])").size());
  CallGrammar::State t = named.start();
  feed(named, t, R"([{"name":"set_timer","arguments":{)");
  CHECK(named.min_bytes_to_complete(t) == std::string(R"("minutes":1}}])").size());
  // Choices that cannot be met are errors.
  CHECK_THROWS_AS(CallGrammar(tools, choice(ToolChoiceMode::named, "nope")), Error);
  const ToolList impossible = parse_tool_list(
      R"([{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"integer","enum":[5],"maximum":1}},"required":["x"]}}])",
      "impossible");
  CHECK_THROWS_AS(CallGrammar(impossible, choice(ToolChoiceMode::required)), Error);
  CHECK_NOTHROW(CallGrammar(impossible, choice(ToolChoiceMode::auto_)));
}

TEST_CASE("constraint grammar: the shortest completion is exact along random prefixes") {
  const ToolList& tools = rich_tools();
  std::mt19937_64 rng(7);
  for (const ToolChoiceMode mode : {ToolChoiceMode::auto_, ToolChoiceMode::required}) {
    const CallGrammar g(tools, choice(mode));
    for (int walk = 0; walk < 150; ++walk) {
      CallGrammar::State s = g.start();
      std::string written;
      // Random bytes among those that keep a completion, biased to printable ASCII.
      for (int step = 0; step < 120 && !g.closed(s) && !g.stopped(s); ++step) {
        std::vector<uint8_t> ok;
        for (unsigned b = 0; b < 256; ++b) {
          CallGrammar::State next = s;
          if (g.step(next, static_cast<uint8_t>(b)) != CallGrammar::Step::refused &&
              g.min_bytes_to_complete(next) != kNoCompletion) {
            ok.push_back(static_cast<uint8_t>(b));
          }
        }
        REQUIRE_FALSE(ok.empty());
        const uint8_t b = ok[rng() % ok.size()];
        g.step(s, b);
        written += static_cast<char>(b);
        INFO("after " << written);
        if (step % 5 == 0) check_shortest_completion(g, s, mode != ToolChoiceMode::auto_);
      }
    }
  }
}

TEST_CASE("constraint: the bundled model's valid answers pass token by token") {
  const Tokenizer& tok = tools_tokenizer();
  const int32_t im_end = tok.find("<|im_end|>");
  size_t passed = 0, unlisted = 0;
  for (const auto& conv : cact::test::expected_conversations()) {
    const ToolList tools = parse_tool_list(conv.tools_json, "expected.jsonl");
    for (size_t a = 0; a < conv.answers.size(); ++a) {
      const std::string& answer = conv.answers[a];
      const auto ids = encode_answer(tok, answer);
      REQUIRE(decode_continuation(tok, ids) == answer);
      const bool calls = answer.find("<tool_call>") != std::string::npos;
      for (const ToolChoiceMode mode : {ToolChoiceMode::auto_, ToolChoiceMode::required}) {
        if (mode == ToolChoiceMode::required && (!calls || !conv.valid[a])) continue;
        AnswerConstraint c(tok, tools, choice(mode));
        uint32_t budget = 256;
        AnswerConstraint::Event last = AnswerConstraint::Event::none;
        bool stopped = false;
        for (size_t i = 0; i < ids.size(); ++i, --budget) {
          INFO("answer: " << answer << " token " << i);
          const int32_t id = ids[i];
          REQUIRE(c.allows(id, budget));
          if (i % 4 == 0) check_mask_matches(c, tok.size(), budget);
          last = c.accept(id);
          if (last == AnswerConstraint::Event::unlisted_name) {
            stopped = true;
            break;
          }
        }
        if (conv.valid[a]) {
          CHECK_FALSE(stopped);
          CHECK(c.allows(im_end, budget));
          if (calls) CHECK(last == AnswerConstraint::Event::call_list_closed);
          ++passed;
        } else {
          // The model's own mistake: a name that is not listed, cut when it closes.
          REQUIRE(stopped);
          CHECK(tools.find(c.unlisted_name()) == nullptr);
          CHECK(answer.find("\"name\":\"" + c.unlisted_name() + "\"") != std::string::npos);
          ++unlisted;
        }
      }
    }
  }
  CHECK(passed > 200);
  CHECK(unlisted == 5);
}

namespace {

struct Walk {
  std::vector<int32_t> ids;
  bool closed_list = false;
  bool unlisted = false;
  bool ended = false;
};

// The piece that writes exactly `byte`.
int32_t byte_piece(const VocabSurfaces& vocab, uint8_t byte) {
  for (const int32_t id : vocab.starting_with(byte)) {
    if (vocab.bytes(id).size() == 1) return id;
  }
  return -1;
}

// Under auto, random names are never listed: a walk given `calls` (the
// openings {"name":"..." of the listed tools) mostly writes one out once it
// began one (or may begin one). -1: none to continue.
int32_t steer_name(const AnswerConstraint& c, const VocabSurfaces& vocab, const std::string& call_text,
                   const std::vector<std::string>& calls, uint32_t budget) {
  for (const std::string& call : calls) {
    for (size_t k = std::min(call.size() - 1, call_text.size()); k != size_t(-1); --k) {
      const bool may_begin = k > 0 || call_text.ends_with('[') || call_text.ends_with(',');
      if (!may_begin || !call_text.ends_with(std::string_view(call).substr(0, k))) continue;
      const int32_t id = byte_piece(vocab, static_cast<uint8_t>(call[k]));
      if (id >= 0 && c.allows(id, budget)) return id;
    }
  }
  return -1;
}

// One answer drawn under the constraint: per step, with a budget of what is
// left, either the best allowed id under the walk's fixed random logits (it
// loops on a favourite piece, pressing on the budget) or a uniform allowed id,
// now and then a marker when one is allowed, and under auto mostly a listed
// name once a name begins (`calls`, see steer_name).
Walk random_walk(AnswerConstraint& c, const Tokenizer& tok, const VocabSurfaces& vocab, std::mt19937_64& rng,
                 uint32_t budget, bool check_masks, std::vector<std::string> calls) {
  std::shuffle(calls.begin(), calls.end(), rng);
  std::string call_text;
  const size_t n = tok.size();
  std::vector<float> logits(n);
  for (float& l : logits) l = static_cast<float>(rng() % 100000);
  const int32_t favourite = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  std::vector<uint8_t> mask(n);
  std::vector<int32_t> allowed, specials;
  Walk w;
  c.reset();
  for (uint32_t left = budget; left > 0; --left) {
    const unsigned style = static_cast<unsigned>(rng() % 10);
    int32_t id = c.in_call_list() && rng() % 64 != 0 ? steer_name(c, vocab, call_text, calls, left) : -1;
    if (id >= 0) {
      // a listed name goes on
    } else if (style < 5 && c.allows(favourite, left)) {
      id = favourite;  // the sampler's greedy fast path
    } else {
      c.fill_mask(mask, left);
      if (check_masks) check_mask_matches(c, n, left);
      allowed.clear();
      specials.clear();
      for (size_t i = 0; i < n; ++i) {
        if (!mask[i]) continue;
        allowed.push_back(static_cast<int32_t>(i));
        if (vocab.kind(static_cast<int32_t>(i)) != PieceKind::text) specials.push_back(static_cast<int32_t>(i));
      }
      REQUIRE_MESSAGE(!allowed.empty(), "no token allowed after " << decode_continuation(tok, w.ids));
      if (style == 9 && !specials.empty()) {
        id = specials[rng() % specials.size()];
      } else if (style < 5) {
        id = *std::max_element(allowed.begin(), allowed.end(),
                               [&](int32_t a, int32_t b) { return logits[size_t(a)] < logits[size_t(b)]; });
      } else {
        id = allowed[rng() % allowed.size()];
      }
    }
    if (id == vocab.eos_id() || id == vocab.marker_id(Marker::im_end)) {
      w.ended = true;
      break;
    }
    const auto event = c.accept(id);
    w.ids.push_back(id);
    if (c.in_call_list()) call_text += vocab.bytes(id);
    if (event == AnswerConstraint::Event::call_list_closed) w.closed_list = true;
    if (event == AnswerConstraint::Event::unlisted_name) {
      w.unlisted = true;
      break;
    }
  }
  return w;
}

// The walks of one tokenizer and mode, and what their answers must be.
void run_walks(const Tokenizer& tok, ToolChoiceMode mode, const std::string& named, int walks, int mask_walks,
               uint64_t seed) {
  const ToolList& tools = rich_tools();
  const VocabSurfaces vocab(tok);
  AnswerConstraint c(tok, tools, choice(mode, named));
  std::vector<std::string> calls;  // under auto: the listed names to steer to
  if (mode == ToolChoiceMode::auto_) {
    for (const Tool& t : tools.tools) calls.push_back("{\"name\":" + Json(t.name).dump());
  }
  std::mt19937_64 rng(seed);
  int closed = 0, stopped = 0;
  for (int k = 0; k < walks; ++k) {
    const uint32_t budget = k % 2 == 0 ? 200 : 130 + static_cast<uint32_t>(rng() % 71);
    const Walk w = random_walk(c, tok, vocab, rng, budget, /*check_masks=*/k < mask_walks, calls);
    const std::string text = decode_continuation(tok, w.ids);
    INFO("walk " << k << ": " << text);
    const ParsedAnswer parsed = parse_answer(text);
    if (mode == ToolChoiceMode::none) {
      CHECK_FALSE(parsed.has_call_block);
      continue;
    }
    if (w.unlisted) {
      CHECK(mode == ToolChoiceMode::auto_);
      CHECK(tools.find(c.unlisted_name()) == nullptr);
      ++stopped;
      continue;
    }
    if (mode != ToolChoiceMode::auto_) REQUIRE(w.closed_list);
    CHECK(parsed.call_json.empty());
    CHECK(parsed.has_call_block == w.closed_list);
    if (w.closed_list) {
      ++closed;
      CHECK_FALSE(parsed.calls.empty());
    }
    for (const Call& call : parsed.calls) {
      const CallCheck check = validate_call(tools, call);
      CHECK_MESSAGE(check.violation == Violation::ok, check.message << " in " << call.name << " " << call.arguments);
      if (mode == ToolChoiceMode::named) CHECK(call.name == named);
    }
  }
  if (mode != ToolChoiceMode::none) CHECK(closed > walks / 10);
  if (mode == ToolChoiceMode::auto_) CHECK(stopped > walks / 20);
}

}  // namespace

TEST_CASE("constraint: random walks end in valid calls (tools tokenizer)") {
  const Tokenizer& tok = tools_tokenizer();
  SUBCASE("auto") { run_walks(tok, ToolChoiceMode::auto_, "", 1000, 10, 1); }
  SUBCASE("required") { run_walks(tok, ToolChoiceMode::required, "", 1000, 10, 2); }
  SUBCASE("named") {
    run_walks(tok, ToolChoiceMode::named, "book_table", 700, 10, 3);
    run_walks(tok, ToolChoiceMode::named, "m\xC3\xA9t\xC3\xA9o \"now\"", 300, 0, 4);
  }
  SUBCASE("none") { run_walks(tok, ToolChoiceMode::none, "", 300, 3, 5); }
}

TEST_CASE("constraint: random walks end in valid calls (synthetic 8192 tokenizer)") {
  const Tokenizer& tok = synthetic_tokenizer_8192();
  SUBCASE("auto") { run_walks(tok, ToolChoiceMode::auto_, "", 150, 2, 11); }
  SUBCASE("required") { run_walks(tok, ToolChoiceMode::required, "", 150, 2, 12); }
  SUBCASE("named") { run_walks(tok, ToolChoiceMode::named, "book_table", 150, 2, 13); }
}

TEST_CASE("constraint: outer shape by tool choice") {
  const Tokenizer& tok = synthetic_tokenizer_8192();
  const VocabSurfaces vocab(tok);
  const auto id = [&](Marker m) { return vocab.marker_id(m); };
  const ToolList& tools = rich_tools();
  const auto text = [&](std::string_view s) { return tok.encode_data(s, false); };
  SUBCASE("none never opens a call list, and free text never spells a marker") {
    AnswerConstraint c(tok, tools, choice(ToolChoiceMode::none));
    CHECK_FALSE(c.allows(id(Marker::call_open), 100));
    CHECK(c.allows(id(Marker::think_open), 100));
    for (const int32_t t : text("see <tool_call")) c.accept(t);
    CHECK_FALSE(c.allows(tok.find("<0x3E>"), 100));  // '>' would spell <tool_call>
    CHECK(c.allows(tok.find("<0x21>"), 100));
    CHECK(c.allows(id(Marker::im_end), 100));
    CHECK_FALSE(c.allows(id(Marker::call_open), 100));
  }
  SUBCASE("required: think, newline, call list, then only the end") {
    AnswerConstraint c(tok, tools, choice(ToolChoiceMode::required));
    CHECK_FALSE(c.allows(text("a").front(), 100));
    CHECK_FALSE(c.allows(id(Marker::im_end), 100));
    CHECK(c.allows(id(Marker::call_open), 100));
    c.accept(id(Marker::think_open));
    for (const int32_t t : text("use ping")) c.accept(t);
    CHECK_FALSE(c.allows(id(Marker::call_open), 100));
    c.accept(id(Marker::think_close));
    const int32_t newline = tok.find("<0x0A>");
    CHECK(c.allows(newline, 100));
    CHECK_FALSE(c.allows(text("x").front(), 100));
    c.accept(newline);
    CHECK_FALSE(c.allows(newline, 100));
    CHECK_FALSE(c.in_call_list());
    c.accept(id(Marker::call_open));
    CHECK(c.in_call_list());
    for (const int32_t t : text(R"([{"name":"ping","arguments":{}}])")) c.accept(t);
    CHECK(c.accept(id(Marker::call_close)) == AnswerConstraint::Event::call_list_closed);
    CHECK(c.allows(id(Marker::im_end), 1));
    CHECK(c.allows(vocab.eos_id(), 1));
    CHECK_FALSE(c.allows(text("a").front(), 100));
    CHECK_THROWS_AS(c.accept(text("a").front()), Error);
    c.reset();
    CHECK(c.allows(id(Marker::call_open), 100));
  }
  SUBCASE("the budget: an opened think or list always closes") {
    AnswerConstraint c(tok, tools, choice(ToolChoiceMode::named, "ping"));
    // <tool_call> [{"name":"ping","arguments":{}}] </tool_call>
    const auto list = static_cast<uint32_t>(std::string_view(R"([{"name":"ping","arguments":{}}])").size() + 2);
    CHECK(c.allows(id(Marker::call_open), list));
    CHECK(c.allows(id(Marker::think_open), list + 2));
    CHECK_FALSE(c.allows(id(Marker::think_open), list + 1));
    c.accept(id(Marker::think_open));
    const int32_t a = text("a").front();
    CHECK(c.allows(a, list + 2));
    CHECK_FALSE(c.allows(a, list + 1));
    CHECK(c.allows(id(Marker::think_close), list + 1));
    // Short of the shortest call already: only what shortens it.
    CHECK_FALSE(c.allows(a, list));
    CHECK(c.allows(id(Marker::think_close), 3));
  }
  SUBCASE("auto: an unlisted name stops the answer at the piece that closes it") {
    AnswerConstraint c(tok, tools, choice(ToolChoiceMode::auto_));
    c.accept(id(Marker::call_open));
    for (const int32_t t : text(R"([{"name":"set_\u0041larm)")) c.accept(t);
    CHECK(c.accept(tok.find("<0x22>")) == AnswerConstraint::Event::unlisted_name);
    CHECK(c.unlisted_name() == "set_Alarm");
    CHECK_FALSE(c.in_call_list());
    for (size_t i = 0; i < vocab.size(); ++i) CHECK_FALSE(c.allows(static_cast<int32_t>(i), 100));
  }
  SUBCASE("a budget already short of the shortest call: only tokens that shorten it") {
    AnswerConstraint c(tok, tools, choice(ToolChoiceMode::named, "book_table"));
    std::vector<uint8_t> mask(vocab.size());
    std::mt19937_64 rng(3);
    for (uint32_t left = 20; left > 0; --left) {
      c.fill_mask(mask, left);
      std::vector<int32_t> allowed;
      for (size_t i = 0; i < mask.size(); ++i) {
        if (mask[i]) allowed.push_back(static_cast<int32_t>(i));
      }
      REQUIRE_FALSE(allowed.empty());
      if (left == 20) CHECK(allowed == std::vector<int32_t>{id(Marker::call_open)});
      c.accept(allowed[rng() % allowed.size()]);
    }
    CHECK(c.in_call_list());
  }
  SUBCASE("errors") {
    TokenizerModel no_markers = synthetic_tokenizer(400);
    for (Piece& p : no_markers.pieces) {
      if (p.surface == "<tool_call>") p.surface = "<call>";
    }
    const Tokenizer bare(no_markers);
    CHECK_THROWS_AS(AnswerConstraint(bare, tools, choice(ToolChoiceMode::auto_)), Error);
    CHECK_NOTHROW(AnswerConstraint(bare, tools, choice(ToolChoiceMode::none)));
    CHECK_THROWS_AS(AnswerConstraint(tok, tools, choice(ToolChoiceMode::named, "nope")), Error);
  }
}
