// The C API tests' helpers (capi_fixture.h).
#include "capi/capi_fixture.h"

#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/run_app.h"
#include "support/test_paths.h"

namespace cact::test::capi {

std::string tool_model_path() { return (models_dir() / "tools" / "tools-tiny.cact").string(); }
std::string tools_json() { return slurp(models_dir() / "tools" / "tools.json"); }

Model open_model(const std::string& path) {
  cact_model* m = nullptr;
  CACT_REQUIRE_OK(cact_model_open(path.c_str(), &m));
  return Model(m);
}

Engine new_engine(const cact_model* model, const cact_engine_options* options) {
  cact_engine* e = nullptr;
  CACT_REQUIRE_OK(cact_engine_new(model, options, &e));
  return Engine(e);
}

Session new_session(const cact_engine* engine, uint32_t context) {
  cact_session_options o;
  cact_session_options_init(&o);
  o.threads = 1;
  o.context = context;
  cact_session* s = nullptr;
  CACT_REQUIRE_OK(cact_session_new(engine, &o, &s));
  return Session(s);
}

Tokenizer new_tokenizer(const cact_model* model) {
  cact_tokenizer* t = nullptr;
  CACT_REQUIRE_OK(cact_tokenizer_new(model, &t));
  return Tokenizer(t);
}

Chat new_chat(const cact_engine* engine, const cact_tokenizer* tokenizer, uint32_t context) {
  cact_chat_options o;
  cact_chat_options_init(&o);
  o.threads = 1;
  o.context = context;
  cact_chat* c = nullptr;
  CACT_REQUIRE_OK(cact_chat_new(engine, tokenizer, &o, &c));
  return Chat(c);
}

Chat tool_chat(const cact_engine* engine, const cact_tokenizer* tokenizer) {
  Chat c = new_chat(engine, tokenizer);
  CACT_REQUIRE_OK(cact_chat_set_tools(c.get(), tools_json().c_str()));
  return c;
}

Answer ask(cact_chat* chat, const char* query, const cact_generate_options* options) {
  cact_answer* a = nullptr;
  CACT_REQUIRE_OK(cact_chat_ask(chat, query, options, nullptr, nullptr, &a));
  return Answer(a);
}

std::string envelope(const cact_answer* answer) {
  const char* json = nullptr;
  CACT_REQUIRE_OK(cact_answer_json(answer, &json));
  return json;
}

std::string answer_core(const cact_answer* answer) {
  const auto j = nlohmann::ordered_json::parse(envelope(answer));
  nlohmann::ordered_json core;
  for (const char* key : {"text", "reasoning", "function_calls", "validation", "stop", "raw"}) core[key] = j.at(key);
  return core.dump();
}

std::vector<float> logits(const cact_session* session) {
  const float* l = nullptr;
  size_t n = 0;
  CACT_REQUIRE_OK(cact_session_logits(session, &l, &n));
  return std::vector<float>(l, l + n);
}

size_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * size_t(::sysconf(_SC_PAGESIZE));
}

int mappings_of(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) n += line.find(path) != std::string::npos;
  return n;
}

}  // namespace cact::test::capi
