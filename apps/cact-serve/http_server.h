#pragma once
// httplib's server with cact-serve's connection handling (docs/SERVE.md
// "Limits"): each connection is read through a stream of ours, so that
//   - a request (line, headers, body) must arrive whole within the timeout
//     (a slowloris client that drips bytes is cut off, not only a silent one);
//   - a handler can ask whether its client has gone (generation then stops);
//   - on drain, idle keep-alive connections close at once and busy ones
//     finish their request.
#include <httplib.h>

#include <atomic>
#include <chrono>

namespace cact::serve {

class HttpServer : public httplib::Server {
 public:
  // `timeout`: to receive one request, per stalled write, and keep-alive idle time.
  explicit HttpServer(std::chrono::milliseconds timeout);

  // Stop accepting; requests in progress finish; listen() returns when they have.
  void drain();
  bool draining() const { return draining_.load(); }

  // On a handler's thread (and in its content provider): true once the client
  // of the request being served has closed its connection.
  static bool client_gone();
  // On a handler's thread: close the connection after this response (the
  // request's body may not have been read, so nothing after it can be parsed).
  static void close_after_response();

 private:
  bool process_and_close_socket(socket_t sock) override;

  std::chrono::milliseconds timeout_;
  std::atomic<bool> draining_{false};
};

}  // namespace cact::serve
