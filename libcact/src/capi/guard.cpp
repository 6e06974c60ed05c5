// Status codes and messages of the C API (guard.h), cact_last_error and cact_status_name.
#include "capi/guard.h"

#include <new>
#include <string_view>

#include "cact/error.h"

namespace cact::capi {
namespace {

// The calling thread's last failure: the only per-thread state of the C API,
// for calls whose handles are shared between threads or not made yet.
thread_local ErrorText thread_error;

// libcact reports a context that cannot take the tokens in these words
// (engine Session, chat layer); the C API gives them their own status.
bool is_context_overflow(std::string_view message) {
  return message.find("fit the context") != std::string_view::npos ||
         message.find("positions is full") != std::string_view::npos;
}

cact_status record(const char* function, ErrorText* handle_error, cact_status status, const char* what) noexcept {
  try {
    const std::string message = std::string(function) + ": " + what;
    thread_error.set(message);
    if (handle_error != nullptr) handle_error->set(message);
  } catch (...) {  // no memory left for the message
    thread_error.set_unrecorded();
    if (handle_error != nullptr) handle_error->set_unrecorded();
  }
  return status;
}

}  // namespace

void fail_with(cact_status status, std::string message) { throw Failure(status, std::move(message)); }

void ErrorText::set(const std::string& message) noexcept {
  try {
    text_ = message;
    fixed_ = nullptr;
  } catch (...) {
    set_unrecorded();
  }
}

cact_status report_current(const char* function, ErrorText* handle_error, cact_status library_status) noexcept {
  try {
    throw;
  } catch (const Failure& f) {
    return record(function, handle_error, f.status(), f.what());
  } catch (const Error& e) {
    const cact_status status = is_context_overflow(e.what()) ? CACT_ERROR_CONTEXT_OVERFLOW : library_status;
    return record(function, handle_error, status, e.what());
  } catch (const std::bad_alloc&) {
    return record(function, handle_error, CACT_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return record(function, handle_error, CACT_ERROR_INTERNAL, e.what());
  } catch (...) {
    return record(function, handle_error, CACT_ERROR_INTERNAL, "an unknown exception");
  }
}

}  // namespace cact::capi

extern "C" {

const char* cact_last_error(void) noexcept { return cact::capi::thread_error.c_str(); }

const char* cact_status_name(cact_status status) noexcept {
  switch (status) {
    case CACT_OK:
      return "CACT_OK";
    case CACT_ERROR_INVALID_ARGUMENT:
      return "CACT_ERROR_INVALID_ARGUMENT";
    case CACT_ERROR_IO:
      return "CACT_ERROR_IO";
    case CACT_ERROR_BAD_MODEL:
      return "CACT_ERROR_BAD_MODEL";
    case CACT_ERROR_WRONG_GENERATION:
      return "CACT_ERROR_WRONG_GENERATION";
    case CACT_ERROR_CONTEXT_OVERFLOW:
      return "CACT_ERROR_CONTEXT_OVERFLOW";
    case CACT_ERROR_BAD_TOOLS:
      return "CACT_ERROR_BAD_TOOLS";
    case CACT_ERROR_BUFFER_TOO_SMALL:
      return "CACT_ERROR_BUFFER_TOO_SMALL";
    case CACT_ERROR_UNSUPPORTED:
      return "CACT_ERROR_UNSUPPORTED";
    case CACT_ERROR_STATE:
      return "CACT_ERROR_STATE";
    case CACT_ERROR_OUT_OF_MEMORY:
      return "CACT_ERROR_OUT_OF_MEMORY";
    case CACT_ERROR_INTERNAL:
      return "CACT_ERROR_INTERNAL";
    default:
      break;
  }
  return "CACT_ERROR_UNKNOWN";
}

}  // extern "C"
