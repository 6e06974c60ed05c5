#include "chat/answer_constraint.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

#include "cact/error.h"
#include "cact/json_input.h"
#include "chat/call_grammar.h"
#include "chat/vocab_surfaces.h"

namespace cact::chat {

namespace {

enum class Phase : uint8_t {
  start,        // nothing written yet
  think,        // inside <think>
  text,         // auto/none: free text
  after_think,  // required/named: right after </think>: "\n" or <tool_call>
  newline,      // required/named: after that "\n": <tool_call>
  call_list,    // inside <tool_call>
  after_call,   // after </tool_call>: <|im_end|> or eos
  done,         // ended, or stopped at an unlisted name
};

// How a piece's bytes went through the call grammar.
enum class Run : uint8_t { refused, open, stopped };

}  // namespace

struct AnswerConstraint::Impl {
  Impl(const Tokenizer& tok, const ToolList& tools, const ToolChoice& choice);

  bool forced() const { return mode == ToolChoiceMode::required || mode == ToolChoiceMode::named; }
  bool may_end() const {
    return phase == Phase::after_call || (!forced() && (phase == Phase::start || phase == Phase::text));
  }
  // Tokens the answer still owes from `p` (outside a call list): under
  // required/named, the call list and the markers around it.
  uint32_t owed(Phase p) const {
    if (!forced()) return 0;
    switch (p) {
      case Phase::start:
      case Phase::after_think:
      case Phase::newline:
        return list_tokens;
      case Phase::think:
        return add_cost(list_tokens, 1);
      default:
        return 0;
    }
  }
  std::optional<Phase> after_marker(Marker m) const;
  // The phase free text keeps (or starts), when text may come now.
  std::optional<Phase> text_phase() const {
    if (phase == Phase::think || phase == Phase::text) return phase;
    if (phase == Phase::start && !forced()) return Phase::text;
    return std::nullopt;
  }
  bool free_text_fits(std::string_view bytes) const { return vocab.guard().run(guard, bytes) != MarkerGuard::kSpelled; }

  // The tokens the answer still owes from where it is.
  uint32_t owed_now() const {
    if (phase != Phase::call_list) return owed(phase);
    return grammar->stopped(calls) ? 0 : add_cost(grammar->min_bytes_to_complete(calls), 1);
  }
  // What a token may leave owing with `budget` tokens left (this one
  // included): budget - 1, or when the budget is already short of what is
  // owed, anything less than now, so the answer heads for its close.
  uint32_t owe_limit(uint32_t budget) const {
    const uint32_t now = owed_now();
    return std::max(budget - 1, now == 0 ? 0 : now - 1);
  }

  // The call list: run `bytes` from byte `from` on. A piece that closes an
  // unlisted name is taken whole: the answer stops there.
  Run run_piece(CallGrammar::State& s, std::string_view bytes, size_t from) const {
    for (size_t i = from; i < bytes.size(); ++i) {
      switch (grammar->step(s, static_cast<uint8_t>(bytes[i]))) {
        case CallGrammar::Step::refused:
          return Run::refused;
        case CallGrammar::Step::unlisted:
          return Run::stopped;
        case CallGrammar::Step::ok:
          break;
      }
    }
    return Run::open;
  }
  // After a piece that left `s`: do the rest of the list and </tool_call> owe no more than `limit`?
  bool list_fits(Run run, const CallGrammar::State& s, uint32_t limit) const {
    if (run == Run::refused) return false;
    return run == Run::stopped || add_cost(grammar->min_bytes_to_complete(s), 1) <= limit;
  }
  bool call_piece_allowed(int32_t id, uint32_t limit) const {
    CallGrammar::State s = calls;
    const std::string_view bytes = vocab.bytes(id);
    return list_fits(run_piece(s, bytes, 0), s, limit);
  }
  bool text_allowed(int32_t id, uint32_t limit) const;
  void fill_text(std::span<uint8_t> mask) const;
  void fill_call_list(std::span<uint8_t> mask, uint32_t limit) const;
  void fill_from(const VocabSurfaces::TrieNode& node, const CallGrammar::State& from, std::span<uint8_t> mask,
                 uint32_t limit) const;
  void fill_child(const VocabSurfaces::TrieNode& child, CallGrammar::Step step, const CallGrammar::State& s,
                  std::span<uint8_t> mask, uint32_t limit) const;

  const VocabSurfaces vocab;
  const ToolChoiceMode mode;
  std::optional<CallGrammar> grammar;
  uint32_t list_rest_tokens = kNoCompletion;  // the shortest list and </tool_call>
  uint32_t list_tokens = kNoCompletion;       // <tool_call> and the above

  Phase phase = Phase::start;
  uint8_t guard = 0;  // MarkerGuard state of the free text
  CallGrammar::State calls;
  std::string name;      // under auto: the name being written, as written
  std::string unlisted;  // the last unlisted name, decoded
};

AnswerConstraint::Impl::Impl(const Tokenizer& tok, const ToolList& tools, const ToolChoice& choice)
    : vocab(tok), mode(choice.mode) {
  if (mode == ToolChoiceMode::none) return;
  for (const Marker m : {Marker::call_open, Marker::call_close}) {
    if (vocab.marker_id(m) < 0) {
      fail("answer constraint: the tokenizer has no " + std::string(marker_surface(m)) +
           " marker, which tool calls need");
    }
  }
  grammar.emplace(tools, choice);
  list_rest_tokens = add_cost(grammar->min_bytes_to_complete(grammar->start()), 1);
  list_tokens = add_cost(list_rest_tokens, 1);
  // The budget counts a byte as a token: every byte a shortest completion may
  // need must have a piece of its own.
  std::string needed = grammar->bytes_written();
  for (int c = 0x20; c < 0x7F; ++c) needed += static_cast<char>(c);
  for (const char c : needed) {
    if (!vocab.has_byte(static_cast<uint8_t>(c))) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(static_cast<uint8_t>(c)));
      fail("answer constraint: the tokenizer has no piece for byte " + std::string(hex) +
           ", which a constrained call list may have to write on its own");
    }
  }
}

std::optional<Phase> AnswerConstraint::Impl::after_marker(Marker m) const {
  switch (m) {
    case Marker::think_open:
      if (phase == Phase::start && vocab.marker_id(Marker::think_close) >= 0) return Phase::think;
      break;
    case Marker::think_close:
      if (phase == Phase::think) return forced() ? Phase::after_think : Phase::text;
      break;
    case Marker::call_open:
      if (!grammar) break;
      if (phase == Phase::start ||
          (forced() ? phase == Phase::after_think || phase == Phase::newline : phase == Phase::text)) {
        return Phase::call_list;
      }
      break;
    case Marker::call_close:
      if (phase == Phase::call_list && grammar->closed(calls)) return Phase::after_call;
      break;
    case Marker::im_end:
      if (may_end()) return Phase::done;
      break;
    default:
      break;
  }
  return std::nullopt;
}

bool AnswerConstraint::Impl::text_allowed(int32_t id, uint32_t limit) const {
  const std::string_view bytes = vocab.bytes(id);
  if (const auto next = text_phase()) return owed(*next) <= limit && free_text_fits(bytes);
  if (phase == Phase::after_think) return bytes == "\n" && owed(Phase::newline) <= limit;
  if (phase == Phase::call_list) return call_piece_allowed(id, limit);
  return false;
}

// Free text: every piece but those that would complete a marker's surface.
void AnswerConstraint::Impl::fill_text(std::span<uint8_t> mask) const {
  const size_t n = mask.size();
  std::memcpy(mask.data(), vocab.text_without_lt().data(), n);
  const auto check = [&](std::span<const int32_t> ids) {
    for (const int32_t id : ids) {
      if (size_t(id) < n) mask[size_t(id)] = free_text_fits(vocab.bytes(id));
    }
  };
  // A piece without '<' can only finish a marker the text already began.
  for (const uint8_t b : vocab.guard().extensions(guard)) check(vocab.starting_with(b));
  check(vocab.holding_lt());
}

void AnswerConstraint::Impl::fill_call_list(std::span<uint8_t> mask, uint32_t limit) const {
  const size_t n = mask.size();
  // Inside a string's text most pieces are plain text: the grammar says how
  // many code points fit, and only the other pieces are run. (The bytes left
  // for the list are what the limit leaves after </tool_call>.)
  const auto room = limit >= 1 ? grammar->string_text_room(calls, limit - 1) : std::nullopt;
  if (room) {
    for (const int32_t id : vocab.plain_string(room->min_cp, room->max_cp)) {
      if (size_t(id) < n) mask[size_t(id)] = 1;
    }
    for (const int32_t id : vocab.not_plain_string()) {
      if (size_t(id) < n) mask[size_t(id)] = call_piece_allowed(id, limit);
    }
    return;
  }
  // Elsewhere few bytes may come next: walk the pieces' byte trie. Where the
  // first byte leads into a string's text (an opening quote, the end of an
  // escape), the rest of most pieces is plain text again.
  for (const VocabSurfaces::TrieNode& child : vocab.children(vocab.trie_root())) {
    CallGrammar::State s = calls;
    const CallGrammar::Step step = grammar->step(s, child.byte);
    if (step == CallGrammar::Step::refused) continue;
    const auto tail_room =
        step == CallGrammar::Step::ok && limit >= 1 ? grammar->string_text_room(s, limit - 1) : std::nullopt;
    if (!tail_room) {
      fill_child(child, step, s, mask, limit);
      continue;
    }
    for (const int32_t id : vocab.through(child)) {
      if (size_t(id) >= n) continue;
      const std::string_view bytes = vocab.bytes(id);
      const uint32_t cps = vocab.plain_tail_code_points(id);
      if (bytes.size() == 1) {
        mask[size_t(id)] = list_fits(Run::open, s, limit);
      } else if (cps > 0) {
        mask[size_t(id)] = cps >= tail_room->min_cp && cps <= tail_room->max_cp;
      } else {
        CallGrammar::State rest = s;
        mask[size_t(id)] = list_fits(run_piece(rest, bytes, 1), rest, limit);
      }
    }
  }
}

// The pieces through `child`, whose byte took the grammar from its parent's
// state to `s` with `step`.
void AnswerConstraint::Impl::fill_child(const VocabSurfaces::TrieNode& child, CallGrammar::Step step,
                                        const CallGrammar::State& s, std::span<uint8_t> mask, uint32_t limit) const {
  const auto set = [&](std::span<const int32_t> ids) {
    for (const int32_t id : ids) {
      if (size_t(id) < mask.size()) mask[size_t(id)] = 1;
    }
  };
  if (step == CallGrammar::Step::unlisted) {
    set(vocab.through(child));  // the answer stops at this byte, whatever follows in the piece
    return;
  }
  if (list_fits(Run::open, s, limit)) set(vocab.ending_at(child));
  fill_from(child, s, mask, limit);
}

void AnswerConstraint::Impl::fill_from(const VocabSurfaces::TrieNode& node, const CallGrammar::State& from,
                                       std::span<uint8_t> mask, uint32_t limit) const {
  for (const VocabSurfaces::TrieNode& child : vocab.children(node)) {
    CallGrammar::State s = from;
    const CallGrammar::Step step = grammar->step(s, child.byte);
    if (step != CallGrammar::Step::refused) fill_child(child, step, s, mask, limit);
  }
}

AnswerConstraint::AnswerConstraint(const Tokenizer& tok, const ToolList& tools, ToolChoice choice)
    : impl_(std::make_unique<Impl>(tok, tools, choice)) {}
AnswerConstraint::~AnswerConstraint() = default;
AnswerConstraint::AnswerConstraint(AnswerConstraint&&) noexcept = default;
AnswerConstraint& AnswerConstraint::operator=(AnswerConstraint&&) noexcept = default;

void AnswerConstraint::reset() {
  impl_->phase = Phase::start;
  impl_->guard = 0;
  impl_->name.clear();
  impl_->unlisted.clear();
}

bool AnswerConstraint::allows(int32_t id, uint32_t budget) const {
  const Impl& m = *impl_;
  if (budget == 0 || id < 0 || size_t(id) >= m.vocab.size()) return false;
  switch (m.vocab.kind(id)) {
    case PieceKind::none:
      return false;
    case PieceKind::eos:
      return m.may_end();
    case PieceKind::marker: {
      const auto next = m.after_marker(m.vocab.marker_of(id));
      if (!next) return false;
      const uint32_t leaves = *next == Phase::call_list ? m.list_rest_tokens : m.owed(*next);
      return leaves <= m.owe_limit(budget);
    }
    case PieceKind::text:
      return m.text_allowed(id, m.owe_limit(budget));
  }
  return false;
}

void AnswerConstraint::fill_mask(std::span<uint8_t> mask, uint32_t budget) const {
  const Impl& m = *impl_;
  std::fill(mask.begin(), mask.end(), uint8_t{0});
  if (budget == 0) return;
  const uint32_t limit = m.owe_limit(budget);
  const std::span<uint8_t> vocab_mask = mask.first(std::min(mask.size(), m.vocab.size()));
  if (const auto next = m.text_phase()) {
    if (m.owed(*next) <= limit) m.fill_text(vocab_mask);
  } else if (m.phase == Phase::after_think) {
    for (const int32_t id : m.vocab.newlines()) {
      if (size_t(id) < vocab_mask.size()) vocab_mask[size_t(id)] = m.owed(Phase::newline) <= limit;
    }
  } else if (m.phase == Phase::call_list) {
    m.fill_call_list(vocab_mask, limit);
  }
  for (size_t k = 0; k < kMarkerCount; ++k) {
    const int32_t id = m.vocab.marker_id(static_cast<Marker>(k));
    if (id >= 0 && size_t(id) < vocab_mask.size()) vocab_mask[size_t(id)] = allows(id, budget);
  }
  const int32_t eos = m.vocab.eos_id();
  if (eos >= 0 && size_t(eos) < vocab_mask.size()) vocab_mask[size_t(eos)] = allows(eos, budget);
}

AnswerConstraint::Event AnswerConstraint::accept(int32_t id) {
  Impl& m = *impl_;
  const auto refuse = [&]() -> Event { fail("answer constraint: token " + std::to_string(id) + " may not come here"); };
  if (id < 0 || size_t(id) >= m.vocab.size()) return refuse();
  switch (m.vocab.kind(id)) {
    case PieceKind::none:
      return refuse();
    case PieceKind::eos:
      if (!m.may_end()) return refuse();
      m.phase = Phase::done;
      return Event::none;
    case PieceKind::marker: {
      const Marker marker = m.vocab.marker_of(id);
      const auto next = m.after_marker(marker);
      if (!next) return refuse();
      if (*next == Phase::call_list) m.calls = m.grammar->start();
      m.phase = *next;
      m.guard = 0;
      return marker == Marker::call_close ? Event::call_list_closed : Event::none;
    }
    case PieceKind::text:
      break;
  }
  const std::string_view bytes = m.vocab.bytes(id);
  if (const auto next = m.text_phase()) {
    const uint8_t g = m.vocab.guard().run(m.guard, bytes);
    if (g == MarkerGuard::kSpelled) return refuse();
    m.guard = g;
    m.phase = *next;
    return Event::none;
  }
  if (m.phase == Phase::after_think) {
    if (bytes != "\n") return refuse();
    m.phase = Phase::newline;
    return Event::none;
  }
  if (m.phase != Phase::call_list) return refuse();
  // On copies: a refused token leaves the constraint as it was.
  CallGrammar::State calls = m.calls;
  std::string name = m.name;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const bool was_in_name = m.grammar->in_free_name(calls);
    switch (m.grammar->step(calls, static_cast<uint8_t>(bytes[i]))) {
      case CallGrammar::Step::refused:
        return refuse();
      case CallGrammar::Step::unlisted:
        m.unlisted = parse_json_limited("\"" + name + "\"", "tool call name", name.size() + 2).get<std::string>();
        m.phase = Phase::done;
        return Event::unlisted_name;
      case CallGrammar::Step::ok:
        break;
    }
    if (m.grammar->in_free_name(calls)) {
      if (was_in_name) {
        name += bytes[i];
      } else {
        name.clear();  // its opening quote
      }
    }
  }
  m.calls = calls;
  m.name = std::move(name);
  return Event::none;
}

const std::string& AnswerConstraint::unlisted_name() const { return impl_->unlisted; }

bool AnswerConstraint::in_call_list() const { return impl_->phase == Phase::call_list; }

}  // namespace cact::chat
