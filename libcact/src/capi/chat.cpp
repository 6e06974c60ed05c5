// cact_chat_*: conversations with tools on a shared engine and tokenizer.
#include <string_view>

#include "cact/error.h"
#include "capi/handles.h"
#include "capi/options.h"
#include "capi/sampler_options.h"
#include "capi/text.h"

using cact::capi::fail_with;
using cact::capi::guarded;
using cact::capi::need;
using cact::capi::need_text;

namespace {

constexpr size_t kChatOptionsV1 = sizeof(cact_chat_options);
constexpr size_t kGenerateOptionsV1 = sizeof(cact_generate_options);

cact::capi::ErrorText* error_of(const cact_chat* c) { return c != nullptr ? &c->error : nullptr; }

// The chat handle, refused when the call comes from its own piece callback.
cact_chat& idle(cact_chat* c) {
  if (need(c, "chat").generating) {
    fail_with(CACT_ERROR_STATE, "called from the chat's own piece callback (wait for the answer)");
  }
  return *c;
}

cact::chat::ToolChoice tool_choice(const char* text, const cact::chat::ToolList& tools) {
  cact::chat::ToolChoice choice;
  try {
    choice = cact::chat::parse_tool_choice(text == nullptr ? "auto" : text);
  } catch (const cact::Error& e) {
    fail_with(CACT_ERROR_BAD_TOOLS, e.what());
  }
  if (choice.mode == cact::chat::ToolChoiceMode::named && tools.find(choice.name) == nullptr) {
    fail_with(CACT_ERROR_BAD_TOOLS, "tool choice \"" + choice.name + "\" is not in the tool list");
  }
  if (choice.mode == cact::chat::ToolChoiceMode::required && tools.empty()) {
    fail_with(CACT_ERROR_BAD_TOOLS, "tool choice \"required\" with no tool list");
  }
  return choice;
}

cact::chat::GenerateOptions generate_options(const cact_generate_options* given, const cact::chat::ToolList& tools) {
  const cact_generate_options o =
      cact::capi::read_options(given, cact_generate_options_init, kGenerateOptionsV1, "cact_generate_options");
  cact::chat::GenerateOptions g;
  g.max_tokens = o.max_tokens;
  g.sampler = cact::capi::sampler_options(o.sampler);
  if (o.stop_count != 0) need(o.stop, "options.stop");
  for (size_t i = 0; i < o.stop_count; ++i) {
    const char* s = o.stop[i];
    if (s == nullptr || *s == '\0') {
      fail_with(CACT_ERROR_INVALID_ARGUMENT, "options.stop[" + std::to_string(i) + "] is NULL or empty");
    }
    g.stop.emplace_back(s);
  }
  g.tool_choice = tool_choice(o.tool_choice, tools);
  g.constrain = o.constrain != 0;
  return g;
}

// One answer: `turn` runs ask or tool_results with the callback adapted;
// the answer and its envelope become the caller's.
template <typename Turn>
void answer_turn(cact_chat& c, const cact_generate_options* options, cact_piece_callback on_piece, void* user_data,
                 cact_answer** out, Turn turn) {
  need(out, "answer");
  const cact::chat::GenerateOptions g = generate_options(options, c.chat.tools());
  std::string piece;  // NUL-terminated for C
  cact::chat::OnPiece adapter;
  if (on_piece != nullptr) {
    adapter = [&](std::string_view text) {
      piece.assign(text);
      return on_piece(user_data, piece.c_str(), piece.size()) == 0;
    };
  }
  auto a = std::make_unique<cact_answer>();
  c.generating = true;
  struct Idle {
    bool* flag;
    ~Idle() { *flag = false; }
  } idle_again{&c.generating};
  a->answer = turn(g, adapter);
  a->json = cact::chat::answer_json(a->answer);
  *out = a.release();
}

}  // namespace

extern "C" {

void cact_chat_options_init(cact_chat_options* options) noexcept {
  if (options == nullptr) return;
  const cact::chat::ChatOptions defaults;
  options->struct_size = sizeof *options;
  options->context = defaults.session.context;
  options->kv_window = defaults.session.kv_window;
  options->max_chunk = defaults.session.max_chunk;
  options->threads = defaults.session.threads;
  options->prefix_cache = defaults.prefix_cache ? 1 : 0;
}

void cact_generate_options_init(cact_generate_options* options) noexcept {
  if (options == nullptr) return;
  const cact::chat::GenerateOptions defaults;
  options->struct_size = sizeof *options;
  options->max_tokens = defaults.max_tokens;
  options->sampler = nullptr;
  options->stop = nullptr;
  options->stop_count = 0;
  options->tool_choice = nullptr;
  options->constrain = defaults.constrain ? 1 : 0;
}

cact_status cact_chat_new(const cact_engine* engine, const cact_tokenizer* tokenizer, const cact_chat_options* options,
                          cact_chat** out) noexcept {
  if (out != nullptr) *out = nullptr;
  // A tokenizer without the chat markers is what ChatSession refuses.
  return guarded(__func__, nullptr, CACT_ERROR_UNSUPPORTED, [&] {
    need(out, "out");
    const auto& e = need(engine, "engine").data;
    const auto& t = need(tokenizer, "tokenizer").tok;
    const cact_chat_options o =
        cact::capi::read_options(options, cact_chat_options_init, kChatOptionsV1, "cact_chat_options");
    cact::chat::ChatOptions co;
    co.session.context = o.context;
    co.session.kv_window = o.kv_window;
    co.session.max_chunk = o.max_chunk;
    co.session.threads = o.threads;
    co.prefix_cache = o.prefix_cache != 0;
    *out = new cact_chat(e, t, co);
  });
}

void cact_chat_free(cact_chat* chat) noexcept { delete chat; }

const char* cact_chat_last_error(const cact_chat* chat) noexcept {
  return chat != nullptr ? chat->error.c_str() : "chat is NULL";
}

cact_status cact_chat_set_system(cact_chat* chat, const char* system) noexcept {
  return guarded(__func__, error_of(chat), CACT_ERROR_INVALID_ARGUMENT,
                 [&] { idle(chat).chat.set_system(system == nullptr ? "" : system); });
}

cact_status cact_chat_set_tools(cact_chat* chat, const char* tools_json) noexcept {
  return guarded(__func__, error_of(chat), CACT_ERROR_BAD_TOOLS, [&] {
    cact_chat& c = idle(chat);
    const bool none = tools_json == nullptr || *tools_json == '\0';
    c.chat.set_tools(none ? cact::chat::ToolList{} : cact::chat::parse_tool_list(tools_json, "tool list"));
  });
}

cact_status cact_chat_reset(cact_chat* chat) noexcept {
  return guarded(__func__, error_of(chat), CACT_ERROR_INTERNAL, [&] { idle(chat).chat.reset(); });
}

cact_status cact_chat_ask(cact_chat* chat, const char* query, const cact_generate_options* options,
                          cact_piece_callback on_piece, void* user_data, cact_answer** answer) noexcept {
  if (answer != nullptr) *answer = nullptr;
  return guarded(__func__, error_of(chat), CACT_ERROR_INVALID_ARGUMENT, [&] {
    cact_chat& c = idle(chat);
    const std::string_view q = need_text(query, "query");
    answer_turn(
        c, options, on_piece, user_data, answer,
        [&](const cact::chat::GenerateOptions& g, const cact::chat::OnPiece& p) { return c.chat.ask(q, g, p); });
  });
}

cact_status cact_chat_tool_results(cact_chat* chat, const char* const* results, size_t count,
                                   const cact_generate_options* options, cact_piece_callback on_piece, void* user_data,
                                   cact_answer** answer) noexcept {
  if (answer != nullptr) *answer = nullptr;
  return guarded(__func__, error_of(chat), CACT_ERROR_INVALID_ARGUMENT, [&] {
    cact_chat& c = idle(chat);
    const auto& turns = c.chat.turns();
    if (turns.empty() || turns.back().role != cact::chat::Turn::Role::assistant) {
      fail_with(CACT_ERROR_STATE, "tool results answer calls: there is no answer in this conversation yet");
    }
    if (count == 0) fail_with(CACT_ERROR_INVALID_ARGUMENT, "no tool result given");
    need(results, "results");
    std::vector<std::string> texts;
    for (size_t i = 0; i < count; ++i) texts.emplace_back(need_text(results[i], "results[i]"));
    answer_turn(c, options, on_piece, user_data, answer,
                [&](const cact::chat::GenerateOptions& g, const cact::chat::OnPiece& p) {
                  return c.chat.tool_results(texts, g, p);
                });
  });
}

cact_status cact_chat_transcript(const cact_chat* chat, char** json) noexcept {
  if (json != nullptr) *json = nullptr;
  return guarded(__func__, error_of(chat), CACT_ERROR_INTERNAL, [&] {
    need(json, "json");
    *json = cact::capi::caller_string(need(chat, "chat").chat.transcript_json());
  });
}

cact_status cact_chat_load(cact_chat* chat, const char* transcript_json) noexcept {
  return guarded(__func__, error_of(chat), CACT_ERROR_INVALID_ARGUMENT, [&] {
    cact_chat& c = idle(chat);
    c.chat.load(cact::chat::parse_transcript(need_text(transcript_json, "transcript_json"), "transcript"));
  });
}

cact_status cact_chat_position(const cact_chat* chat, uint32_t* position) noexcept {
  return guarded(__func__, error_of(chat), CACT_ERROR_INTERNAL,
                 [&] { need(position, "position") = need(chat, "chat").chat.position(); });
}

cact_status cact_chat_context(const cact_chat* chat, uint32_t* context) noexcept {
  return guarded(__func__, error_of(chat), CACT_ERROR_INTERNAL,
                 [&] { need(context, "context") = need(chat, "chat").chat.context(); });
}

}  // extern "C"
