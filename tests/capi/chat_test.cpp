// The C API's chat layer: the tool model's answers, the envelope, the
// streaming callback and its stop, tool results, transcripts, rendering and
// the generation options, against the C++ ChatSession they wrap.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cact/chat.h"
#include "cact/engine.h"
#include "cact/model.h"
#include "cact/sampler.h"
#include "cact/tokenizer.h"
#include "capi/capi_fixture.h"
#include "chat/render.h"

using namespace cact::test::capi;
using json = nlohmann::ordered_json;

namespace {

struct Opened {
  Model model = open_model(tool_model_path());
  Engine engine = new_engine(model.get());
  Tokenizer tok = new_tokenizer(model.get());
};

struct Pieces {
  std::string text;
  int calls = 0;
  int stop_after = -1;  // stop when this many pieces came
};

int collect(void* user, const char* piece, size_t length) {
  auto* p = static_cast<Pieces*>(user);
  CHECK(piece[length] == '\0');
  p->text.append(piece, length);
  return ++p->calls == p->stop_after ? 1 : 0;
}

std::string stop_of(const cact_answer* a) {
  const char* reason = nullptr;
  CACT_REQUIRE_OK(cact_answer_stop(a, &reason));
  return reason;
}

}  // namespace

TEST_CASE("capi: the timer request gives one set_timer call, as the C++ chat layer does") {
  Opened o;
  Chat chat = tool_chat(o.engine.get(), o.tok.get());
  Answer a = ask(chat.get(), kTimerRequest);
  size_t calls = 0;
  CACT_REQUIRE_OK(cact_answer_call_count(a.get(), &calls));
  REQUIRE(calls == 1);
  const char* name = nullptr;
  const char* arguments = nullptr;
  CACT_REQUIRE_OK(cact_answer_call(a.get(), 0, &name, &arguments));
  CHECK(std::string(name) == "set_timer");
  CHECK(std::string(arguments) == "{\"minutes\":10}");
  CHECK(stop_of(a.get()) == "im_end");

  const cact::Model model = cact::Model::open(tool_model_path());
  const cact::Engine engine(model);
  const cact::Tokenizer tok(model.tokenizer_model());
  cact::chat::ChatOptions co;
  co.session.threads = 1;
  cact::chat::ChatSession cpp(engine, tok, co);
  cpp.set_tools(cact::chat::parse_tool_list(tools_json(), "tools.json"));
  const cact::chat::Answer want = cpp.ask(kTimerRequest, cact::chat::GenerateOptions{});
  json got_envelope = json::parse(envelope(a.get())), want_envelope = json::parse(cact::chat::answer_json(want));
  got_envelope.erase("timings");
  want_envelope.erase("timings");
  CHECK(got_envelope == want_envelope);
  const char* text = nullptr;
  CACT_REQUIRE_OK(cact_answer_text(a.get(), &text));
  CHECK(std::string(text) == want.parsed.text);
}

TEST_CASE("capi: the piece callback streams the raw answer, and a stop from it ends the answer") {
  Opened o;
  Chat chat = tool_chat(o.engine.get(), o.tok.get());
  Pieces all;
  cact_answer* raw = nullptr;
  CACT_REQUIRE_OK(cact_chat_ask(chat.get(), kTimerRequest, nullptr, collect, &all, &raw));
  Answer full(raw);
  const json envelope_full = json::parse(envelope(full.get()));
  CHECK(all.text == envelope_full.at("raw").get<std::string>());
  CHECK(all.calls == envelope_full.at("tokens").at("generated").get<int>());

  CACT_REQUIRE_OK(cact_chat_reset(chat.get()));
  Pieces some;
  some.stop_after = 3;
  CACT_REQUIRE_OK(cact_chat_ask(chat.get(), kTimerRequest, nullptr, collect, &some, &raw));
  Answer stopped(raw);
  CHECK(some.calls == 3);
  CHECK(stop_of(stopped.get()) == "cancelled");
  const json envelope_stopped = json::parse(envelope(stopped.get()));
  CHECK(envelope_stopped.at("raw").get<std::string>() == some.text);
  CHECK(all.text.rfind(some.text, 0) == 0);
  CHECK(envelope_stopped.at("function_calls").empty());
}

TEST_CASE("capi: tool results continue the conversation; a transcript resumes it in another chat") {
  Opened o;
  Chat chat = tool_chat(o.engine.get(), o.tok.get());
  CACT_REQUIRE_OK(cact_chat_set_system(chat.get(), "You are a kitchen assistant."));
  CACT_REQUIRE_OK(cact_chat_set_tools(chat.get(), tools_json().c_str()));
  Answer first = ask(chat.get(), kTimerRequest);
  const char* results[] = {"{\"ok\":true,\"timer_id\":3}"};
  cact_generate_options g;
  cact_generate_options_init(&g);
  g.tool_choice = "none";  // the answer to a result is text
  cact_answer* raw = nullptr;
  CACT_REQUIRE_OK(cact_chat_tool_results(chat.get(), results, 1, &g, nullptr, nullptr, &raw));
  Answer second(raw);
  CHECK(json::parse(envelope(second.get())).at("function_calls").empty());
  uint32_t position = 0;
  CACT_REQUIRE_OK(cact_chat_position(chat.get(), &position));
  CHECK(position > 0);

  char* transcript = nullptr;
  CACT_REQUIRE_OK(cact_chat_transcript(chat.get(), &transcript));
  const std::string saved = transcript;
  cact_string_free(transcript);
  CHECK(json::parse(saved).at("turns").size() == 4);
  Chat resumed = new_chat(o.engine.get(), o.tok.get());
  CACT_REQUIRE_OK(cact_chat_load(resumed.get(), saved.c_str()));
  uint32_t resumed_position = 0;
  CACT_REQUIRE_OK(cact_chat_position(resumed.get(), &resumed_position));
  CHECK(resumed_position > 0);
  // Both continue alike.
  Answer next_a = ask(chat.get(), "and what is the weather in Paris", &g);
  Answer next_b = ask(resumed.get(), "and what is the weather in Paris", &g);
  CHECK(answer_core(next_a.get()) == answer_core(next_b.get()));
}

TEST_CASE("capi: cact_chat_render gives the ids cact_chat_ask prefills") {
  Opened o;
  const std::string system = "Be brief.";
  size_t n = 0;
  CHECK(cact_chat_render(o.tok.get(), system.c_str(), tools_json().c_str(), kTimerRequest, nullptr, 0, &n) ==
        CACT_ERROR_BUFFER_TOO_SMALL);
  std::vector<int32_t> ids(n);
  CACT_REQUIRE_OK(
      cact_chat_render(o.tok.get(), system.c_str(), tools_json().c_str(), kTimerRequest, ids.data(), ids.size(), &n));

  const cact::Model model = cact::Model::open(tool_model_path());
  const cact::Tokenizer tok(model.tokenizer_model());
  const cact::chat::ChatMarkers markers(tok);
  const auto tools = cact::chat::parse_tool_list(tools_json(), "tools.json");
  std::vector<int32_t> want = cact::chat::render_prefix(tok, markers, system, tools.compact_json);
  {
    cact::chat::PromptBuilder b(tok, markers, want);
    cact::chat::render_user_turn(b, markers, kTimerRequest, true, false);
  }
  CHECK(ids == want);

  Chat chat = new_chat(o.engine.get(), o.tok.get());
  CACT_REQUIRE_OK(cact_chat_set_system(chat.get(), system.c_str()));
  CACT_REQUIRE_OK(cact_chat_set_tools(chat.get(), tools_json().c_str()));
  Answer a = ask(chat.get(), kTimerRequest);
  CHECK(json::parse(envelope(a.get())).at("tokens").at("prompt").get<size_t>() == ids.size());
  // Fed through a session of its own, the rendered ids give the answer's first token greedily.
  const cact::Engine engine(model);
  cact::chat::ChatSession cpp(engine, tok);
  cpp.set_system(system);
  cpp.set_tools(tools);
  const cact::chat::Answer want_answer = cpp.ask(kTimerRequest, cact::chat::GenerateOptions{});
  REQUIRE(!want_answer.ids.empty());
  Session s = new_session(o.engine.get());
  CACT_REQUIRE_OK(cact_session_prefill(s.get(), ids.data(), ids.size()));
  const std::vector<float> l = logits(s.get());
  CHECK(cact::argmax(std::span<const float>(l.data(), tok.size())) == want_answer.ids.front());
}

TEST_CASE("capi: generation options: max_tokens, stop strings, tool choice, no constraint") {
  Opened o;
  Chat chat = tool_chat(o.engine.get(), o.tok.get());
  cact_generate_options g;
  cact_generate_options_init(&g);
  g.max_tokens = 2;
  Answer shortened = ask(chat.get(), kTimerRequest, &g);
  CHECK(stop_of(shortened.get()) == "max_tokens");
  CHECK(json::parse(envelope(shortened.get())).at("tokens").at("generated") == 2);

  cact_generate_options_init(&g);
  const char* stops[] = {"set_timer"};
  g.stop = stops;
  g.stop_count = 1;
  CACT_REQUIRE_OK(cact_chat_reset(chat.get()));
  Answer cut = ask(chat.get(), kTimerRequest, &g);
  CHECK(stop_of(cut.get()) == "stop_string");
  CHECK(json::parse(envelope(cut.get())).at("raw").get<std::string>().find("set_timer") == std::string::npos);

  cact_generate_options_init(&g);
  g.tool_choice = "none";
  CACT_REQUIRE_OK(cact_chat_reset(chat.get()));
  Answer none = ask(chat.get(), kTimerRequest, &g);
  CHECK(json::parse(envelope(none.get())).at("raw").get<std::string>().find("<tool_call>") == std::string::npos);

  cact_generate_options_init(&g);
  g.tool_choice = "get_weather";
  CACT_REQUIRE_OK(cact_chat_reset(chat.get()));
  Answer named = ask(chat.get(), kTimerRequest, &g);
  const json calls = json::parse(envelope(named.get())).at("function_calls");
  REQUIRE(!calls.empty());
  for (const auto& c : calls) CHECK(c.at("name") == "get_weather");

  cact_sampler_options so;
  cact_sampler_options_init(&so);
  so.temperature = 0.9f;
  so.seed = 7;
  cact_generate_options_init(&g);
  g.sampler = &so;
  g.constrain = 0;
  CACT_REQUIRE_OK(cact_chat_reset(chat.get()));
  const std::string sampled = answer_core(ask(chat.get(), kTimerRequest, &g).get());
  CACT_REQUIRE_OK(cact_chat_reset(chat.get()));
  CHECK(answer_core(ask(chat.get(), kTimerRequest, &g).get()) == sampled);  // same seed, same answer
  CHECK(json::parse(envelope(ask(chat.get(), "hello", &g).get())).at("seed") == 7);
}
