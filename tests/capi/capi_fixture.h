#pragma once
// Helpers of the C API tests: owning wrappers of the C handles, the bundled
// tool model, and a REQUIRE that prints the failing call's message.
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cact/cact.h"

// REQUIRE the call returns CACT_OK; otherwise show its status and message.
#define CACT_REQUIRE_OK(call)                                                \
  do {                                                                       \
    const cact_status status_ = (call);                                      \
    INFO(#call, " -> ", cact_status_name(status_), ": ", cact_last_error()); \
    REQUIRE(status_ == CACT_OK);                                             \
  } while (0)

namespace cact::test::capi {

template <auto Free>
struct Deleter {
  template <typename T>
  void operator()(T* handle) const {
    Free(handle);
  }
};
using Model = std::unique_ptr<cact_model, Deleter<cact_model_free>>;
using Engine = std::unique_ptr<cact_engine, Deleter<cact_engine_free>>;
using Session = std::unique_ptr<cact_session, Deleter<cact_session_free>>;
using Tokenizer = std::unique_ptr<cact_tokenizer, Deleter<cact_tokenizer_free>>;
using Sampler = std::unique_ptr<cact_sampler, Deleter<cact_sampler_free>>;
using Chat = std::unique_ptr<cact_chat, Deleter<cact_chat_free>>;
using Answer = std::unique_ptr<cact_answer, Deleter<cact_answer_free>>;

std::string tool_model_path();  // models/tools/tools-tiny.cact
std::string tools_json();       // models/tools/tools.json
inline constexpr const char* kTimerRequest = "set a timer for 10 minutes";

Model open_model(const std::string& path);
Engine new_engine(const cact_model* model, const cact_engine_options* options = nullptr);
// One thread per session unless the test is about threads: quick, and the same bits anyway.
Session new_session(const cact_engine* engine, uint32_t context = 0);
Tokenizer new_tokenizer(const cact_model* model);
Chat new_chat(const cact_engine* engine, const cact_tokenizer* tokenizer, uint32_t context = 0);
// A chat with the bundled tools.
Chat tool_chat(const cact_engine* engine, const cact_tokenizer* tokenizer);
Answer ask(cact_chat* chat, const char* query, const cact_generate_options* options = nullptr);

std::string envelope(const cact_answer* answer);
// What the model answered: the envelope's text, reasoning, function_calls,
// validation, stop and raw (not the timings, token counts or prefix-cache use).
std::string answer_core(const cact_answer* answer);
std::vector<float> logits(const cact_session* session);
// Resident set size of this process, bytes.
size_t rss_bytes();
// Mappings of `path` in /proc/self/maps.
int mappings_of(const std::string& path);

// True under ASan or TSan, whose allocators keep freed memory for a while.
constexpr bool kSanitized =
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    true;
#else
    false;
#endif

}  // namespace cact::test::capi
