#pragma once
// The C API's boundary (docs/API.md "Errors"): every cact_* body runs inside
// guarded(), which turns whatever it throws into a cact_status and a one-line
// message, so no exception ever leaves the library.
#include <exception>
#include <string>
#include <utility>

#include "cact/cact.h"

namespace cact::capi {

// A failure the C layer detects itself, with the status it means.
class Failure : public std::exception {
 public:
  Failure(cact_status status, std::string message) : status_(status), message_(std::move(message)) {}
  cact_status status() const { return status_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  cact_status status_;
  std::string message_;
};

[[noreturn]] void fail_with(cact_status status, std::string message);

// `pointer` itself, or INVALID_ARGUMENT "<name> is NULL".
template <typename T>
T& need(T* pointer, const char* name) {
  if (pointer == nullptr) fail_with(CACT_ERROR_INVALID_ARGUMENT, std::string(name) + " is NULL");
  return *pointer;
}

// A C string argument itself, or INVALID_ARGUMENT "<name> is NULL".
inline const char* need_text(const char* text, const char* name) {
  if (text == nullptr) fail_with(CACT_ERROR_INVALID_ARGUMENT, std::string(name) + " is NULL");
  return text;
}

// A message slot whose setter cannot throw (storing the message of an
// out-of-memory failure may itself run out of memory).
class ErrorText {
 public:
  void set(const std::string& message) noexcept;
  void set_unrecorded() noexcept { fixed_ = "out of memory (while recording the error message)"; }
  const char* c_str() const noexcept { return fixed_ != nullptr ? fixed_ : text_.c_str(); }

 private:
  std::string text_;
  const char* fixed_ = nullptr;
};

// Handles the exception in flight: records "<function>: <what>" on the calling
// thread and in `handle_error` (when the failing call has a one-thread handle)
// and returns its status. libcact's own cact::Error becomes `library_status`
// (what this call's failures mean), except a context overflow.
cact_status report_current(const char* function, ErrorText* handle_error, cact_status library_status) noexcept;

template <typename Body>
cact_status guarded(const char* function, ErrorText* handle_error, cact_status library_status, Body&& body) noexcept {
  try {
    std::forward<Body>(body)();
    return CACT_OK;
  } catch (...) {
    return report_current(function, handle_error, library_status);
  }
}

}  // namespace cact::capi
