// HttpError and its OpenAI-shaped body (errors.h).
#include "errors.h"

#include "cact/json_input.h"

namespace cact::serve {

namespace {

// OpenAI's error types, and a default code, per status.
struct Kind {
  const char* type;
  const char* code;
};

Kind kind_of(int status) {
  switch (status) {
    case 400:
      return {"invalid_request_error", "invalid_request"};
    case 401:
      return {"authentication_error", "invalid_api_key"};
    case 404:
      return {"not_found_error", "not_found"};
    case 405:
      return {"invalid_request_error", "method_not_allowed"};
    case 408:
      return {"invalid_request_error", "request_timeout"};
    case 413:
      return {"invalid_request_error", "request_too_large"};
    case 414:
      return {"invalid_request_error", "uri_too_long"};
    case 415:
      return {"invalid_request_error", "unsupported_media_type"};
    case 503:
      return {"server_error", "server_busy"};
    default:
      return {status < 500 ? "invalid_request_error" : "server_error", status < 500 ? "bad_request" : "internal_error"};
  }
}

}  // namespace

HttpError::HttpError(int status, const std::string& message, std::string param, std::string code)
    : std::runtime_error(message), status_(status), param_(std::move(param)), code_(std::move(code)) {}

std::string error_json(const HttpError& e) {
  const Kind kind = kind_of(e.status());
  const Json body = {{"error",
                      {{"message", e.what()},
                       {"type", kind.type},
                       {"param", e.param().empty() ? Json(nullptr) : Json(e.param())},
                       {"code", e.code().empty() ? kind.code : e.code()}}}};
  // replace: a message may quote bytes of the request that are not UTF-8.
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void send_error(httplib::Response& res, const HttpError& e) {
  res.status = e.status();
  if (e.status() == 503) res.set_header("Retry-After", "1");
  res.set_content(error_json(e) + "\n", "application/json");
}

}  // namespace cact::serve
