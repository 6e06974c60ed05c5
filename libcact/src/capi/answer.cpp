// cact_answer_*: one answer's envelope and its validated calls.
#include "capi/handles.h"

using cact::capi::fail_with;
using cact::capi::guarded;
using cact::capi::need;

extern "C" {

void cact_answer_free(cact_answer* answer) noexcept { delete answer; }

cact_status cact_answer_json(const cact_answer* answer, const char** json) noexcept {
  return guarded(__func__, nullptr, CACT_ERROR_INTERNAL,
                 [&] { need(json, "json") = need(answer, "answer").json.c_str(); });
}

cact_status cact_answer_text(const cact_answer* answer, const char** text) noexcept {
  return guarded(__func__, nullptr, CACT_ERROR_INTERNAL,
                 [&] { need(text, "text") = need(answer, "answer").answer.parsed.text.c_str(); });
}

cact_status cact_answer_stop(const cact_answer* answer, const char** reason) noexcept {
  return guarded(__func__, nullptr, CACT_ERROR_INTERNAL,
                 [&] { need(reason, "reason") = cact::chat::stop_reason_name(need(answer, "answer").answer.stop); });
}

cact_status cact_answer_call_count(const cact_answer* answer, size_t* count) noexcept {
  return guarded(__func__, nullptr, CACT_ERROR_INTERNAL,
                 [&] { need(count, "count") = need(answer, "answer").answer.function_calls.size(); });
}

cact_status cact_answer_call(const cact_answer* answer, size_t index, const char** name,
                             const char** arguments_json) noexcept {
  return guarded(__func__, nullptr, CACT_ERROR_INTERNAL, [&] {
    const auto& calls = need(answer, "answer").answer.function_calls;
    need(name, "name");
    need(arguments_json, "arguments_json");
    if (index >= calls.size()) {
      fail_with(CACT_ERROR_INVALID_ARGUMENT,
                "index " + std::to_string(index) + " is past the answer's " + std::to_string(calls.size()) + " calls");
    }
    *name = calls[index].name.c_str();
    *arguments_json = calls[index].arguments.c_str();
  });
}

}  // extern "C"
