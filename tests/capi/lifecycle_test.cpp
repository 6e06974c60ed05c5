// Lifecycle of the C API's handles: any number per process, freed in any
// order, the archive unmapped with the last handle that needs it, models from
// buffers, no state shared between handles, memory flat over open/close loops.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "cact/synth.h"
#include "capi/capi_fixture.h"
#include "support/run_app.h"

using namespace cact::test::capi;

namespace {

const std::vector<int32_t> kIds = {2, 40, 41, 42, 300, 301, 7, 9};

// Logits after kIds then two steps on a fresh session of `engine`.
std::vector<float> run(const cact_engine* engine) {
  Session s = new_session(engine);
  CACT_REQUIRE_OK(cact_session_prefill(s.get(), kIds.data(), kIds.size()));
  CACT_REQUIRE_OK(cact_session_step(s.get(), 11));
  CACT_REQUIRE_OK(cact_session_step(s.get(), 12));
  return logits(s.get());
}

struct AlignedFree {
  void operator()(uint8_t* p) const { std::free(p); }
};

}  // namespace

TEST_CASE("capi: handles may be freed in any order; each keeps alive what it was made from") {
  Model model = open_model(tool_model_path());
  Engine engine = new_engine(model.get());
  Tokenizer tok = new_tokenizer(model.get());
  const std::vector<float> want = run(engine.get());
  model.reset();  // the engine still reads the archive
  CHECK(run(engine.get()) == want);
  Session session = new_session(engine.get());
  Chat chat = tool_chat(engine.get(), tok.get());
  engine.reset();  // the session and the chat still hold the engine
  tok.reset();     // the chat still holds the tokenizer
  CACT_REQUIRE_OK(cact_session_prefill(session.get(), kIds.data(), kIds.size()));
  Answer a = ask(chat.get(), kTimerRequest);
  size_t calls = 0;
  CACT_REQUIRE_OK(cact_answer_call_count(a.get(), &calls));
  CHECK(calls == 1);
  chat.reset();  // the answer is the caller's: it outlives the chat
  const char* name = nullptr;
  const char* arguments = nullptr;
  CACT_REQUIRE_OK(cact_answer_call(a.get(), 0, &name, &arguments));
  CHECK(std::string(name) == "set_timer");
}

TEST_CASE("capi: the archive is unmapped when the last handle reading it is freed") {
  const std::string path = std::filesystem::canonical(tool_model_path()).string();
  REQUIRE(mappings_of(path) == 0);
  Model model = open_model(path);
  CHECK(mappings_of(path) > 0);
  Engine engine = new_engine(model.get());
  Session session = new_session(engine.get());
  model.reset();
  engine.reset();
  CHECK(mappings_of(path) > 0);  // the session reads it still
  session.reset();
  CHECK(mappings_of(path) == 0);
}

TEST_CASE("capi: models from a copied or a borrowed buffer run like the file") {
  const std::string bytes = cact::test::slurp(tool_model_path());
  Model file = open_model(tool_model_path());
  const std::vector<float> want = run(new_engine(file.get()).get());

  cact_model* copied = nullptr;
  {
    std::vector<char> scratch(bytes.begin(), bytes.end());
    CACT_REQUIRE_OK(cact_model_open_buffer(scratch.data(), scratch.size(), CACT_BUFFER_COPY, &copied));
    std::memset(scratch.data(), 0, scratch.size());  // the model has its own copy
  }
  Model copy(copied);
  CHECK(run(new_engine(copy.get()).get()) == want);

  std::unique_ptr<uint8_t, AlignedFree> aligned(
      static_cast<uint8_t*>(std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64)));
  std::memcpy(aligned.get(), bytes.data(), bytes.size());
  cact_model* borrowed = nullptr;
  CACT_REQUIRE_OK(cact_model_open_buffer(aligned.get(), bytes.size(), CACT_BUFFER_BORROW, &borrowed));
  Model borrow(borrowed);
  CHECK(run(new_engine(borrow.get()).get()) == want);
  borrow.reset();  // before the buffer it reads
}

TEST_CASE("capi: many models, engines, sessions and chats in one process share nothing") {
  std::vector<Model> models;
  std::vector<Engine> engines;
  for (int i = 0; i < 3; ++i) {
    models.push_back(open_model(tool_model_path()));
    engines.push_back(new_engine(models.back().get()));
  }
  const std::vector<float> want = run(engines[0].get());
  // Sessions of every engine, fed interleaved: each gives what a lone session gives.
  std::vector<Session> sessions;
  for (const Engine& e : engines) {
    for (int k = 0; k < 2; ++k) sessions.push_back(new_session(e.get()));
  }
  for (size_t i = 0; i < kIds.size(); ++i) {
    for (const Session& s : sessions) CACT_REQUIRE_OK(cact_session_step(s.get(), kIds[i]));
  }
  for (const Session& s : sessions) {
    CACT_REQUIRE_OK(cact_session_step(s.get(), 11));
    CACT_REQUIRE_OK(cact_session_step(s.get(), 12));
    CHECK(logits(s.get()) == want);
  }
  // Chats on different engines and one shared tokenizer answer alike, in any interleaving.
  Tokenizer tok = new_tokenizer(models[1].get());
  Chat a = tool_chat(engines[0].get(), tok.get());
  Chat b = tool_chat(engines[2].get(), tok.get());
  const std::string first = answer_core(ask(a.get(), kTimerRequest).get());
  CHECK(answer_core(ask(b.get(), "what is the weather in Paris").get()) != first);
  ask(b.get(), kTimerRequest);  // a second turn of b's conversation
  CACT_REQUIRE_OK(cact_chat_reset(b.get()));
  CHECK(answer_core(ask(b.get(), kTimerRequest).get()) == first);
}

TEST_CASE("capi: opening and closing in a loop leaves memory and mappings where they were") {
  // Under a sanitizer freed memory is held back on purpose (its leak check runs at exit instead).
  const int rounds = kSanitized ? 4 : 40, warm_up = kSanitized ? 1 : 8;
  const std::string path = std::filesystem::canonical(tool_model_path()).string();
  size_t rss_warm = 0;
  for (int round = 0; round < rounds; ++round) {
    if (round == warm_up) rss_warm = rss_bytes();
    Model model = open_model(path);
    Engine engine = new_engine(model.get());
    Tokenizer tok = new_tokenizer(model.get());
    Chat chat = tool_chat(engine.get(), tok.get());
    Answer answer = ask(chat.get(), kTimerRequest);
    Session session = new_session(engine.get());
    CACT_REQUIRE_OK(cact_session_prefill(session.get(), kIds.data(), kIds.size()));
  }
  CHECK(mappings_of(path) == 0);
  const double grown_mib = (double(rss_bytes()) - double(rss_warm)) / (1 << 20);
  MESSAGE("RSS grew " << grown_mib << " MiB over " << rounds - warm_up << " rounds");
  if (!kSanitized) CHECK(grown_mib < 2.0);
}
