#pragma once
// Errors in OpenAI's shape (docs/SERVE.md "Errors"):
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// with the HTTP status that says what kind of failure it is.
#include <httplib.h>

#include <stdexcept>
#include <string>

namespace cact::serve {

class HttpError : public std::runtime_error {
 public:
  // `param`: the request field at fault ("" = none); `code`: a short machine
  // word ("" = the status's default code).
  HttpError(int status, const std::string& message, std::string param = "", std::string code = "");
  int status() const { return status_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }

 private:
  int status_;
  std::string param_, code_;
};

// The error object (one line of JSON) of an HttpError.
std::string error_json(const HttpError& e);
// Sets the response's status and error body.
void send_error(httplib::Response& res, const HttpError& e);

}  // namespace cact::serve
