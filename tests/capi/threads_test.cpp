// Thread safety as cact.h states it (run under TSan by scripts/tsan.sh): one
// engine and one tokenizer shared read-only by sessions and chats on many
// threads; a session used by one thread at a time, moving between threads;
// each thread's last error its own.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "capi/capi_fixture.h"

using namespace cact::test::capi;

namespace {

constexpr int kThreads = 4;
const std::vector<int32_t> kIds = {2, 50, 51, 52, 53, 400, 401, 9};
const char* const kRequests[] = {kTimerRequest, "call my mother", "what is the weather in Oslo"};

struct Shared {
  Model model = open_model(tool_model_path());
  Engine engine = new_engine(model.get());
  Tokenizer tok = new_tokenizer(model.get());
};

std::vector<float> prefill_logits(const cact_engine* engine, uint32_t threads) {
  cact_session_options o;
  cact_session_options_init(&o);
  o.threads = threads;
  cact_session* s = nullptr;
  CACT_REQUIRE_OK(cact_session_new(engine, &o, &s));
  Session session(s);
  CACT_REQUIRE_OK(cact_session_prefill(s, kIds.data(), kIds.size()));
  CACT_REQUIRE_OK(cact_session_step(s, 12));
  return logits(s);
}

}  // namespace

TEST_CASE("capi: sessions, chats and tokenizing on many threads share one engine and tokenizer") {
  Shared shared;
  // What one thread alone gets.
  const std::vector<float> want_logits = prefill_logits(shared.engine.get(), 1);
  std::vector<std::string> want_answers;
  {
    Chat chat = tool_chat(shared.engine.get(), shared.tok.get());
    for (const char* request : kRequests) {
      CACT_REQUIRE_OK(cact_chat_reset(chat.get()));
      want_answers.push_back(answer_core(ask(chat.get(), request).get()));
    }
  }
  size_t want_count = 0;
  CHECK(cact_tokenize(shared.tok.get(), kRequests[2], std::strlen(kRequests[2]), 0, nullptr, 0, &want_count) ==
        CACT_ERROR_BUFFER_TOO_SMALL);

  // Results are gathered per thread and checked on the main thread (doctest's asserts are not thread-safe).
  struct Result {
    std::vector<float> logits;
    std::vector<std::string> answers;
    std::vector<size_t> counts;
    bool ok = true;
  };
  std::vector<Result> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Result& r = results[size_t(t)];
      // A session with a worker pool of its own on every other thread.
      cact_session_options so;
      cact_session_options_init(&so);
      so.threads = t % 2 == 0 ? 1 : 2;
      cact_session* s = nullptr;
      r.ok &= cact_session_new(shared.engine.get(), &so, &s) == CACT_OK;
      Session session(s);
      r.ok &= cact_session_prefill(s, kIds.data(), kIds.size()) == CACT_OK && cact_session_step(s, 12) == CACT_OK;
      const float* l = nullptr;
      size_t n = 0;
      r.ok &= cact_session_logits(s, &l, &n) == CACT_OK;
      if (r.ok) r.logits.assign(l, l + n);

      cact_chat_options co;
      cact_chat_options_init(&co);
      co.threads = 1;
      cact_chat* c = nullptr;
      r.ok &= cact_chat_new(shared.engine.get(), shared.tok.get(), &co, &c) == CACT_OK;
      Chat chat(c);
      r.ok &= cact_chat_set_tools(c, tools_json().c_str()) == CACT_OK;
      for (const char* request : kRequests) {
        r.ok &= cact_chat_reset(c) == CACT_OK;
        cact_answer* a = nullptr;
        r.ok &= cact_chat_ask(c, request, nullptr, nullptr, nullptr, &a) == CACT_OK;
        Answer answer(a);
        if (a != nullptr) r.answers.push_back(answer_core(a));
        size_t count = 0;
        cact_tokenize(shared.tok.get(), request, std::strlen(request), 0, nullptr, 0, &count);
        r.counts.push_back(count);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Result& r : results) {
    CHECK(r.ok);
    CHECK(r.logits == want_logits);
    CHECK(r.answers == want_answers);
    REQUIRE(r.counts.size() == 3);
    CHECK(r.counts[2] == want_count);
  }
}

TEST_CASE("capi: a session may move between threads, one at a time") {
  Shared shared;
  const std::vector<float> want = prefill_logits(shared.engine.get(), 2);
  Session session = new_session(shared.engine.get());
  bool ok = true;
  std::thread([&] { ok &= cact_session_prefill(session.get(), kIds.data(), kIds.size()) == CACT_OK; }).join();
  std::thread([&] { ok &= cact_session_step(session.get(), 12) == CACT_OK; }).join();
  CHECK(ok);
  CHECK(logits(session.get()) == want);
}

TEST_CASE("capi: each thread reads its own last error") {
  Shared shared;
  std::string seen[2];
  std::thread a([&] {
    cact_model* m = nullptr;
    cact_model_open("/nonexistent/a.cact", &m);
    seen[0] = cact_last_error();
  });
  std::thread b([&] {
    size_t n = 0;
    cact_tokenize(shared.tok.get(), "x", 1, 1u << 30, nullptr, 0, &n);
    seen[1] = cact_last_error();
  });
  a.join();
  b.join();
  CHECK(seen[0].find("/nonexistent/a.cact") != std::string::npos);
  CHECK(seen[1].find("flags") != std::string::npos);
  CHECK(std::string(cact_last_error()).find("/nonexistent/a.cact") == std::string::npos);
}
