// ChatSession (cact/chat.h): one conversation on one engine Session, with the
// prefix cache and the context policy of docs/CHAT.md.
#include <algorithm>
#include <chrono>
#include <optional>

#include "cact/chat.h"
#include "cact/error.h"
#include "chat/answer_constraint.h"
#include "chat/answer_decode.h"
#include "chat/render.h"

namespace cact::chat {

struct ChatSession::Impl {
  Impl(const Engine& e, const Tokenizer& t, ChatOptions o) : engine(&e), tok(&t), options(o), markers(t) {}

  const Engine* engine;
  const Tokenizer* tok;
  ChatOptions options;
  ChatMarkers markers;
  std::string system;
  ToolList tools;
  std::vector<Turn> turns;
  size_t first_kept = 0;  // turns before it were dropped to make room
  bool started = false;   // the prefix is in the session
  std::vector<int32_t> prefix;
  std::optional<Session> session, snapshot;
  std::vector<int32_t> snapshot_key;  // the prefix the snapshot holds
  uint32_t sinks = 0;
  uint64_t hits = 0;
  std::optional<AnswerConstraint> constraint;
  ToolChoice constraint_choice;

  bool span_applies() const { return engine->header().kv_window != 0 || options.session.kv_window != 0; }

  uint32_t context() const {
    if (session) return session->context();
    return options.session.context != 0 ? options.session.context : engine->header().max_seq_len;
  }

  // Sessions sized for this prefix: with a kv_window span the prefix is pinned
  // as sinks, so a prefix of another length needs sessions of other options.
  void ensure_sessions() {
    const uint32_t want = span_applies() ? uint32_t(prefix.size()) : 0;
    if (session && want == sinks) return;
    SessionOptions so = options.session;
    so.sinks = want;
    session.reset();
    snapshot.reset();
    snapshot_key.clear();
    session.emplace(*engine, so);
    sinks = want;
  }

  // The prefix of the current system text and tools, checked against the context.
  void render_prefix_ids() {
    prefix = render_prefix(*tok, markers, system, tools.compact_json);
    if (prefix.size() >= context()) {
      fail("the system text and tool list (" + std::to_string(prefix.size()) + " tokens) do not fit the context of " +
           std::to_string(context()) + " positions");
    }
  }

  // Put the prefix (and nothing else) in the session: restored from the
  // snapshot when it holds this prefix, else prefilled and snapshotted.
  void start(Answer& a) {
    ensure_sessions();
    started = true;
    first_kept = 0;
    if (options.prefix_cache && snapshot && snapshot_key == prefix) {
      session->copy_state_from(*snapshot);
      ++hits;
      a.cached_tokens = uint32_t(prefix.size());
      return;
    }
    session->reset();
    session->prefill(prefix);
    a.prompt_tokens += uint32_t(prefix.size());
    if (options.prefix_cache) {
      if (!snapshot) {
        SessionOptions so = options.session;
        so.sinks = sinks;
        snapshot.emplace(*engine, so);
      }
      snapshot->copy_state_from(*session);
      snapshot_key = prefix;
    }
  }

  std::vector<int32_t> render(size_t from, size_t first) const {
    std::vector<int32_t> ids;
    PromptBuilder b(*tok, markers, ids);
    render_turns(b, markers, turns, from, first);
    b.flush();
    return ids;
  }

  // Feed turns[from...) (the new turn(s)); when they do not fit with room to
  // answer, drop the oldest exchanges (the prefix stays) and feed what is kept.
  void feed_new_turns(size_t from, uint32_t max_tokens, Answer& a) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!started) render_prefix_ids();
    const uint64_t held = started ? session->position() : prefix.size();
    const uint32_t reserve = std::min(max_tokens, context() / 2);
    std::vector<int32_t> ids = render(from, first_kept);
    size_t keep_from = first_kept;
    if (held + ids.size() + reserve > context()) {
      // Drop whole exchanges from the front until the rest fits after the prefix.
      keep_from = from;
      for (size_t k = first_kept + 1; k < from; ++k) {
        if (turns[k].role != Turn::Role::user) continue;
        std::vector<int32_t> kept = render(k, k);
        if (prefix.size() + kept.size() + reserve <= context()) {
          keep_from = k;
          ids = std::move(kept);
          break;
        }
      }
      if (keep_from == from) {
        ids = render(from, from);
        if (turns[from].role != Turn::Role::user || prefix.size() + ids.size() >= context()) {
          fail("the new turn (" + std::to_string(ids.size()) + " tokens) does not fit the context of " +
               std::to_string(context()) + " positions after the system text and tools");
        }
      }
    }
    if (!started || keep_from != first_kept) {
      a.dropped_turns = uint32_t(keep_from - first_kept);
      start(a);
      first_kept = keep_from;
    }
    session->prefill(ids);
    a.prompt_tokens += uint32_t(ids.size());
    a.prefill_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  AnswerConstraint* constraint_for(const GenerateOptions& o) {
    if (!o.constrain) return nullptr;
    if (!constraint || constraint_choice.mode != o.tool_choice.mode || constraint_choice.name != o.tool_choice.name) {
      constraint.reset();
      constraint.emplace(*tok, tools, o.tool_choice);
      constraint_choice = o.tool_choice;
    }
    return &*constraint;
  }

  Answer turn(std::vector<Turn> pending, const GenerateOptions& o, const OnPiece& on_piece) {
    const size_t from = turns.size();
    turns.insert(turns.end(), pending.begin(), pending.end());
    Answer a;
    try {
      feed_new_turns(from, o.max_tokens, a);
    } catch (...) {
      turns.resize(from);
      throw;
    }
    decode_answer(*session, *tok, markers, tools, o, constraint_for(o), on_piece, a);
    if (session->has_head(HeadKind::confidence)) a.confidence = session->confidence();
    turns.push_back({Turn::Role::assistant, a.raw, a.ids});
    return a;
  }

  void new_conversation() {
    turns.clear();
    started = false;
    first_kept = 0;
  }

  void set_tools(ToolList t) {
    tools = std::move(t);
    constraint.reset();
    new_conversation();
  }
};

ChatSession::ChatSession(const Engine& engine, const Tokenizer& tok, ChatOptions options)
    : impl_(std::make_unique<Impl>(engine, tok, options)) {}
ChatSession::~ChatSession() = default;
ChatSession::ChatSession(ChatSession&&) noexcept = default;
ChatSession& ChatSession::operator=(ChatSession&&) noexcept = default;

void ChatSession::set_system(std::string system) {
  impl_->system = std::move(system);
  impl_->new_conversation();
}

void ChatSession::set_tools(ToolList tools) { impl_->set_tools(std::move(tools)); }
const std::string& ChatSession::system() const { return impl_->system; }
const ToolList& ChatSession::tools() const { return impl_->tools; }
void ChatSession::reset() { impl_->new_conversation(); }

Answer ChatSession::ask(std::string_view query, const GenerateOptions& options, const OnPiece& on_piece) {
  return impl_->turn({Turn{Turn::Role::user, std::string(query), {}}}, options, on_piece);
}

Answer ChatSession::tool_results(const std::vector<std::string>& results, const GenerateOptions& options,
                                 const OnPiece& on_piece) {
  if (impl_->turns.empty() || impl_->turns.back().role != Turn::Role::assistant) {
    fail("a tool result answers a call: there is no answer in this conversation yet");
  }
  if (results.empty()) fail("no tool result given");
  std::vector<Turn> pending;
  for (const std::string& r : results) pending.push_back({Turn::Role::tool, r, {}});
  return impl_->turn(std::move(pending), options, on_piece);
}

void ChatSession::load(const Transcript& t) {
  if (!t.turns.empty() && t.turns.front().role != Turn::Role::user) fail("a transcript starts with a user turn");
  if (!t.turns.empty() && t.turns.back().role != Turn::Role::assistant) fail("a transcript ends with an answer");
  impl_->system = t.system;
  impl_->set_tools(t.tools);
  if (t.turns.empty()) return;
  impl_->turns = t.turns;
  Answer scratch;
  impl_->feed_new_turns(0, 0, scratch);
}

const std::vector<Turn>& ChatSession::turns() const { return impl_->turns; }
uint32_t ChatSession::position() const { return impl_->session ? impl_->session->position() : 0; }
uint32_t ChatSession::context() const { return impl_->context(); }
uint64_t ChatSession::prefix_cache_hits() const { return impl_->hits; }

const Session& ChatSession::session() const {
  if (!impl_->session) fail("the conversation has not started");
  return *impl_->session;
}

}  // namespace cact::chat
