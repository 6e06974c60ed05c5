// Every error path of the C API returns its status and one line saying what
// went wrong (on the thread, and on the handle when it has one); nothing
// changes when a call fails; no exception leaves the library.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cact/format.h"
#include "capi/capi_fixture.h"
#include "support/run_app.h"
#include "support/test_paths.h"

using namespace cact::test::capi;

namespace {

// The status of `call`, checking that the thread's message names the function and says `what`.
void check_fails(cact_status want, const std::string& function, const std::string& what, cact_status got) {
  const std::string message = cact_last_error();
  INFO(function, " -> ", cact_status_name(got), ": ", message);
  CHECK(got == want);
  CHECK(message.rfind(function + ": ", 0) == 0);
  CHECK(message.find(what) != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
}

std::filesystem::path write_file(const std::string& name, const std::string& bytes) {
  const auto path = cact::test::scratch_dir("capi-errors") / name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

const std::string kBadTools[] = {
    "not json",
    "{\"name\":\"x\"}",
    "[{\"name\":\"x\",\"parameters\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"pattern\":\"y\"}"
    "}}}]",
    "[{\"name\":\"x\",\"parameters\":{\"type\":\"object\"}},{\"name\":\"x\",\"parameters\":{\"type\":\"object\"}}]",
};

}  // namespace

TEST_CASE("capi: a path that cannot be read is CACT_ERROR_IO, naming the path") {
  cact_model* m = reinterpret_cast<cact_model*>(&m);  // set to NULL on failure
  check_fails(CACT_ERROR_IO, "cact_model_open", "/nonexistent/model.cact",
              cact_model_open("/nonexistent/model.cact", &m));
  CHECK(m == nullptr);
  const std::string dir = cact::test::scratch_dir("capi-dir").string();
  check_fails(CACT_ERROR_IO, "cact_model_open", "not a regular file", cact_model_open(dir.c_str(), &m));
}

TEST_CASE("capi: an archive of another generation is CACT_ERROR_WRONG_GENERATION") {
  std::string needle2(120, '\0');
  const uint32_t tag = cact::kTagNeedle2;
  std::memcpy(needle2.data(), &tag, sizeof tag);
  cact_model* m = nullptr;
  check_fails(CACT_ERROR_WRONG_GENERATION, "cact_model_open", "Needle 2",
              cact_model_open(write_file("needle2.cact", needle2).c_str(), &m));
  check_fails(CACT_ERROR_WRONG_GENERATION, "cact_model_open_buffer", "Needle 2",
              cact_model_open_buffer(needle2.data(), needle2.size(), CACT_BUFFER_COPY, &m));
  CHECK(m == nullptr);
}

TEST_CASE("capi: a damaged archive is CACT_ERROR_BAD_MODEL with its first problem") {
  std::string bytes = cact::test::slurp(tool_model_path());
  cact_model* m = nullptr;
  const std::string truncated = bytes.substr(0, 1000);
  check_fails(CACT_ERROR_BAD_MODEL, "cact_model_open", "bytes",
              cact_model_open(write_file("truncated.cact", truncated).c_str(), &m));
  bytes[0] ^= 0x55;  // not a .cact tag at all
  check_fails(CACT_ERROR_BAD_MODEL, "cact_model_open_buffer", "tag",
              cact_model_open_buffer(bytes.data(), bytes.size(), CACT_BUFFER_COPY, &m));
  check_fails(CACT_ERROR_BAD_MODEL, "cact_model_open_buffer", "header",
              cact_model_open_buffer(nullptr, 0, CACT_BUFFER_COPY, &m));
  CHECK(m == nullptr);
}

TEST_CASE("capi: tokens past the context are CACT_ERROR_CONTEXT_OVERFLOW and change nothing") {
  Model model = open_model(tool_model_path());
  Engine engine = new_engine(model.get());
  Session s = new_session(engine.get(), 8);
  const std::vector<int32_t> nine(9, 40);
  check_fails(CACT_ERROR_CONTEXT_OVERFLOW, "cact_session_prefill", "context of 8",
              cact_session_prefill(s.get(), nine.data(), nine.size()));
  CHECK(std::string(cact_session_last_error(s.get())) == cact_last_error());
  uint32_t position = 99;
  CACT_REQUIRE_OK(cact_session_position(s.get(), &position));
  CHECK(position == 0);
  CACT_REQUIRE_OK(cact_session_prefill(s.get(), nine.data(), 8));
  check_fails(CACT_ERROR_CONTEXT_OVERFLOW, "cact_session_step", "context of 8", cact_session_step(s.get(), 40));
  CACT_REQUIRE_OK(cact_session_position(s.get(), &position));
  CHECK(position == 8);

  // A chat whose system text and tools cannot fit: the conversation is as before.
  Tokenizer tok = new_tokenizer(model.get());
  Chat chat = new_chat(engine.get(), tok.get(), 32);
  CACT_REQUIRE_OK(cact_chat_set_tools(chat.get(), tools_json().c_str()));
  cact_answer* a = nullptr;
  check_fails(CACT_ERROR_CONTEXT_OVERFLOW, "cact_chat_ask", "context of 32",
              cact_chat_ask(chat.get(), kTimerRequest, nullptr, nullptr, nullptr, &a));
  CHECK(a == nullptr);
  CHECK(std::string(cact_chat_last_error(chat.get())) == cact_last_error());
  char* transcript = nullptr;
  CACT_REQUIRE_OK(cact_chat_transcript(chat.get(), &transcript));
  CHECK(nlohmann::json::parse(transcript).at("turns").empty());
  cact_string_free(transcript);
}

TEST_CASE("capi: a bad tool list or tool choice is CACT_ERROR_BAD_TOOLS, saying what is wrong") {
  Model model = open_model(tool_model_path());
  Engine engine = new_engine(model.get());
  Tokenizer tok = new_tokenizer(model.get());
  Chat chat = new_chat(engine.get(), tok.get());
  for (const std::string& tools : kBadTools) {
    CAPTURE(tools);
    check_fails(CACT_ERROR_BAD_TOOLS, "cact_chat_set_tools", "tool list",
                cact_chat_set_tools(chat.get(), tools.c_str()));
    size_t n = 0;
    check_fails(CACT_ERROR_BAD_TOOLS, "cact_chat_render", "tool list",
                cact_chat_render(tok.get(), "", tools.c_str(), kTimerRequest, nullptr, 0, &n));
  }
  check_fails(CACT_ERROR_BAD_TOOLS, "cact_chat_set_tools", "pattern",
              cact_chat_set_tools(chat.get(), kBadTools[2].c_str()));

  CACT_REQUIRE_OK(cact_chat_set_tools(chat.get(), tools_json().c_str()));
  cact_generate_options g;
  cact_generate_options_init(&g);
  cact_answer* a = nullptr;
  g.tool_choice = "send_email";
  check_fails(CACT_ERROR_BAD_TOOLS, "cact_chat_ask", "send_email",
              cact_chat_ask(chat.get(), kTimerRequest, &g, nullptr, nullptr, &a));
  CACT_REQUIRE_OK(cact_chat_set_tools(chat.get(), nullptr));
  g.tool_choice = "required";
  check_fails(CACT_ERROR_BAD_TOOLS, "cact_chat_ask", "required",
              cact_chat_ask(chat.get(), kTimerRequest, &g, nullptr, nullptr, &a));
  CHECK(a == nullptr);
}

TEST_CASE("capi: a NULL argument is CACT_ERROR_INVALID_ARGUMENT naming it, for every call") {
  Model model = open_model(tool_model_path());
  Engine engine = new_engine(model.get());
  Tokenizer tok = new_tokenizer(model.get());
  Session session = new_session(engine.get());
  Chat chat = tool_chat(engine.get(), tok.get());
  Answer answer = ask(chat.get(), kTimerRequest);
  cact_sampler* sampler_raw = nullptr;
  CACT_REQUIRE_OK(cact_sampler_new(nullptr, &sampler_raw));
  Sampler sampler(sampler_raw);
  cact_model* m = nullptr;
  cact_engine* e = nullptr;
  cact_session* s = nullptr;
  cact_tokenizer* t = nullptr;
  cact_sampler* sm = nullptr;
  cact_chat* c = nullptr;
  cact_answer* a = nullptr;
  uint64_t u64 = 0;
  uint32_t u32 = 0;
  size_t n = 0;
  int32_t id = 0;
  float f = 0;
  const float* fp = nullptr;
  const char* text = nullptr;
  char* owned = nullptr;
  const float logit = 1.0f;
  const int32_t one = 40;
  struct Case {
    const char* function;
    const char* argument;
    std::function<cact_status()> call;
  };
  const Case cases[] = {
      {"cact_model_open", "path", [&] { return cact_model_open(nullptr, &m); }},
      {"cact_model_open", "out", [&] { return cact_model_open(tool_model_path().c_str(), nullptr); }},
      {"cact_model_open_buffer", "data", [&] { return cact_model_open_buffer(nullptr, 10, CACT_BUFFER_COPY, &m); }},
      {"cact_model_get", "model", [&] { return cact_model_get(nullptr, CACT_MODEL_VOCAB, &u64); }},
      {"cact_model_get", "value", [&] { return cact_model_get(model.get(), CACT_MODEL_VOCAB, nullptr); }},
      {"cact_engine_new", "model", [&] { return cact_engine_new(nullptr, nullptr, &e); }},
      {"cact_engine_new", "out", [&] { return cact_engine_new(model.get(), nullptr, nullptr); }},
      {"cact_engine_kernels_name", "name", [&] { return cact_engine_kernels_name(engine.get(), nullptr); }},
      {"cact_session_new", "engine", [&] { return cact_session_new(nullptr, nullptr, &s); }},
      {"cact_session_prefill", "session", [&] { return cact_session_prefill(nullptr, &one, 1); }},
      {"cact_session_prefill", "ids", [&] { return cact_session_prefill(session.get(), nullptr, 1); }},
      {"cact_session_step", "session", [&] { return cact_session_step(nullptr, 40); }},
      {"cact_session_logits", "logits", [&] { return cact_session_logits(session.get(), nullptr, &n); }},
      {"cact_session_reset", "session", [&] { return cact_session_reset(nullptr); }},
      {"cact_session_copy", "source", [&] { return cact_session_copy(session.get(), nullptr); }},
      {"cact_session_position", "position", [&] { return cact_session_position(session.get(), nullptr); }},
      {"cact_session_context", "session", [&] { return cact_session_context(nullptr, &u32); }},
      {"cact_session_confidence", "confidence", [&] { return cact_session_confidence(session.get(), nullptr); }},
      {"cact_session_head", "session", [&] { return cact_session_head(nullptr, CACT_HEAD_ROUTER, &f, 1, &n); }},
      {"cact_tokenizer_new", "model", [&] { return cact_tokenizer_new(nullptr, &t); }},
      {"cact_tokenize", "tokenizer", [&] { return cact_tokenize(nullptr, "a", 1, 0, &id, 1, &n); }},
      {"cact_tokenize", "text", [&] { return cact_tokenize(tok.get(), nullptr, 1, 0, &id, 1, &n); }},
      {"cact_tokenize", "count", [&] { return cact_tokenize(tok.get(), "a", 1, 0, &id, 1, nullptr); }},
      {"cact_detokenize", "ids", [&] { return cact_detokenize(tok.get(), nullptr, 1, owned, 0, &n); }},
      {"cact_tokenizer_special", "id", [&] { return cact_tokenizer_special(tok.get(), CACT_TOKEN_EOS, nullptr); }},
      {"cact_tokenizer_size", "tokenizer", [&] { return cact_tokenizer_size(nullptr, &n); }},
      {"cact_sampler_new", "out", [&] { return cact_sampler_new(nullptr, nullptr); }},
      {"cact_sampler_sample", "logits",
       [&] { return cact_sampler_sample(sampler.get(), nullptr, 1, nullptr, 0, &id); }},
      {"cact_sampler_sample", "sampler", [&] { return cact_sampler_sample(nullptr, &logit, 1, nullptr, 0, &id); }},
      {"cact_chat_new", "tokenizer", [&] { return cact_chat_new(engine.get(), nullptr, nullptr, &c); }},
      {"cact_chat_set_system", "chat", [&] { return cact_chat_set_system(nullptr, "x"); }},
      {"cact_chat_set_tools", "chat", [&] { return cact_chat_set_tools(nullptr, "[]"); }},
      {"cact_chat_reset", "chat", [&] { return cact_chat_reset(nullptr); }},
      {"cact_chat_ask", "query", [&] { return cact_chat_ask(chat.get(), nullptr, nullptr, nullptr, nullptr, &a); }},
      {"cact_chat_ask", "answer", [&] { return cact_chat_ask(chat.get(), "hi", nullptr, nullptr, nullptr, nullptr); }},
      {"cact_chat_tool_results", "results",
       [&] { return cact_chat_tool_results(chat.get(), nullptr, 1, nullptr, nullptr, nullptr, &a); }},
      {"cact_chat_transcript", "json", [&] { return cact_chat_transcript(chat.get(), nullptr); }},
      {"cact_chat_load", "transcript_json", [&] { return cact_chat_load(chat.get(), nullptr); }},
      {"cact_chat_position", "position", [&] { return cact_chat_position(chat.get(), nullptr); }},
      {"cact_chat_context", "chat", [&] { return cact_chat_context(nullptr, &u32); }},
      {"cact_chat_render", "query", [&] { return cact_chat_render(tok.get(), "", "", nullptr, &id, 1, &n); }},
      {"cact_answer_json", "json", [&] { return cact_answer_json(answer.get(), nullptr); }},
      {"cact_answer_text", "answer", [&] { return cact_answer_text(nullptr, &text); }},
      {"cact_answer_stop", "reason", [&] { return cact_answer_stop(answer.get(), nullptr); }},
      {"cact_answer_call_count", "count", [&] { return cact_answer_call_count(answer.get(), nullptr); }},
      {"cact_answer_call", "arguments_json", [&] { return cact_answer_call(answer.get(), 0, &text, nullptr); }},
  };
  for (const Case& kase : cases) {
    CAPTURE(kase.function);
    CAPTURE(kase.argument);
    check_fails(CACT_ERROR_INVALID_ARGUMENT, kase.function, std::string(kase.argument) + " is NULL", kase.call());
  }
  CHECK(
      (m == nullptr && e == nullptr && s == nullptr && t == nullptr && sm == nullptr && c == nullptr && a == nullptr));
  CHECK(fp == nullptr);
  // Freeing NULL is allowed; the last-error calls answer even for NULL.
  cact_model_free(nullptr);
  cact_engine_free(nullptr);
  cact_session_free(nullptr);
  cact_tokenizer_free(nullptr);
  cact_sampler_free(nullptr);
  cact_chat_free(nullptr);
  cact_answer_free(nullptr);
  cact_string_free(nullptr);
  CHECK(std::string(cact_session_last_error(nullptr)) == "session is NULL");
  CHECK(std::string(cact_chat_last_error(nullptr)) == "chat is NULL");
  CHECK(std::string(cact_sampler_last_error(nullptr)) == "sampler is NULL");
}

TEST_CASE("capi: wrong values, short buffers and calls out of order have their statuses") {
  Model model = open_model(tool_model_path());
  Engine engine = new_engine(model.get());
  Tokenizer tok = new_tokenizer(model.get());
  Session s = new_session(engine.get());
  const float* l = nullptr;
  size_t n = 0;
  check_fails(CACT_ERROR_STATE, "cact_session_logits", "no token", cact_session_logits(s.get(), &l, &n));
  check_fails(CACT_ERROR_INVALID_ARGUMENT, "cact_session_step", "outside the vocabulary",
              cact_session_step(s.get(), 1 << 20));
  check_fails(CACT_ERROR_INVALID_ARGUMENT, "cact_session_step", "outside the vocabulary",
              cact_session_step(s.get(), -1));
  float confidence = 0;
  check_fails(CACT_ERROR_UNSUPPORTED, "cact_session_confidence", "no confidence head",
              cact_session_confidence(s.get(), &confidence));
  check_fails(CACT_ERROR_INVALID_ARGUMENT, "cact_session_head", "not a cact_head",
              cact_session_head(s.get(), cact_head(9), nullptr, 0, &n));

  int32_t ids[2];
  check_fails(CACT_ERROR_BUFFER_TOO_SMALL, "cact_tokenize", "capacity of 2",
              cact_tokenize(tok.get(), "hello there world", 17, 0, ids, 2, &n));
  CHECK(n > 2);
  std::vector<int32_t> all(n);
  CACT_REQUIRE_OK(cact_tokenize(tok.get(), "hello there world", 17, 0, all.data(), all.size(), &n));
  char text[64];
  size_t length = 0;
  CACT_REQUIRE_OK(cact_detokenize(tok.get(), all.data(), all.size(), text, sizeof text, &length));
  CHECK(std::string(text) == "hello there world");
  check_fails(CACT_ERROR_BUFFER_TOO_SMALL, "cact_detokenize", "NUL",
              cact_detokenize(tok.get(), all.data(), all.size(), text, length, &n));
  CHECK(n == length);
  const int32_t bad = 99999;
  check_fails(CACT_ERROR_INVALID_ARGUMENT, "cact_detokenize", "outside the vocabulary",
              cact_detokenize(tok.get(), &bad, 1, text, sizeof text, &n));
  check_fails(CACT_ERROR_INVALID_ARGUMENT, "cact_tokenize", "flags", cact_tokenize(tok.get(), "a", 1, 64, ids, 2, &n));

  cact_session_options so;
  std::memset(&so, 0, sizeof so);  // never initialised
  cact_session* sp = nullptr;
  check_fails(CACT_ERROR_INVALID_ARGUMENT, "cact_session_new", "cact_session_options_init",
              cact_session_new(engine.get(), &so, &sp));
  cact_engine_options eo;
  cact_engine_options_init(&eo);
  eo.numerics = cact_numerics(7);
  cact_engine* ep = nullptr;
  check_fails(CACT_ERROR_INVALID_ARGUMENT, "cact_engine_new", "not a cact_numerics",
              cact_engine_new(model.get(), &eo, &ep));
  cact_sampler_options smo;
  cact_sampler_options_init(&smo);
  smo.top_p = 0.0f;
  cact_sampler* smp = nullptr;
  check_fails(CACT_ERROR_INVALID_ARGUMENT, "cact_sampler_new", "top_p", cact_sampler_new(&smo, &smp));
  uint64_t value = 0;
  check_fails(CACT_ERROR_INVALID_ARGUMENT, "cact_model_get", "not a cact_model_property",
              cact_model_get(model.get(), cact_model_property(0), &value));

  Chat chat = tool_chat(engine.get(), tok.get());
  const char* result = "{\"ok\":true}";
  cact_answer* a = nullptr;
  check_fails(CACT_ERROR_STATE, "cact_chat_tool_results", "no answer",
              cact_chat_tool_results(chat.get(), &result, 1, nullptr, nullptr, nullptr, &a));
  check_fails(CACT_ERROR_INVALID_ARGUMENT, "cact_chat_load", "transcript", cact_chat_load(chat.get(), "{}"));
  Answer answer = ask(chat.get(), kTimerRequest);
  const char* name = nullptr;
  const char* arguments = nullptr;
  check_fails(CACT_ERROR_INVALID_ARGUMENT, "cact_answer_call", "past the answer's 1 calls",
              cact_answer_call(answer.get(), 1, &name, &arguments));
}

TEST_CASE("capi: a chat refuses calls from its own piece callback, and the answer still completes") {
  Model model = open_model(tool_model_path());
  Engine engine = new_engine(model.get());
  Tokenizer tok = new_tokenizer(model.get());
  Chat chat = tool_chat(engine.get(), tok.get());
  struct Probe {
    cact_chat* chat;
    std::vector<cact_status> nested;
  } probe{chat.get(), {}};
  auto on_piece = [](void* user, const char*, size_t) {
    auto* p = static_cast<Probe*>(user);
    p->nested.push_back(cact_chat_set_system(p->chat, "changed"));
    return 0;
  };
  cact_answer* a = nullptr;
  CACT_REQUIRE_OK(cact_chat_ask(chat.get(), kTimerRequest, nullptr, on_piece, &probe, &a));
  Answer answer(a);
  REQUIRE(!probe.nested.empty());
  for (const cact_status s : probe.nested) CHECK(s == CACT_ERROR_STATE);
  CHECK(std::string(cact_chat_last_error(chat.get())).find("own piece callback") != std::string::npos);
  size_t calls = 0;
  CACT_REQUIRE_OK(cact_answer_call_count(answer.get(), &calls));
  CHECK(calls == 1);
}

TEST_CASE("capi: status names and the library's version") {
  CHECK(std::string(cact_status_name(CACT_OK)) == "CACT_OK");
  CHECK(std::string(cact_status_name(CACT_ERROR_CONTEXT_OVERFLOW)) == "CACT_ERROR_CONTEXT_OVERFLOW");
  CHECK(std::string(cact_status_name(cact_status(1000))) == "CACT_ERROR_UNKNOWN");
  CHECK(std::string(cact_version()) == std::to_string(CACT_VERSION_MAJOR) + "." + std::to_string(CACT_VERSION_MINOR) +
                                           "." + std::to_string(CACT_VERSION_PATCH));
  CHECK(cact_version_number() == CACT_VERSION_NUMBER);
}
