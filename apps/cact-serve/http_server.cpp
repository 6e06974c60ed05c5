// HttpServer (http_server.h): httplib's request processing over a connection
// stream of ours that enforces the per-request deadline and reports a client
// that has gone.
#include "http_server.h"

#include <arpa/inet.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace cact::serve {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often an idle wait looks at the drain flag.
constexpr milliseconds kDrainPoll{100};
// Bytes one request may carry beyond its body limit (request line, headers, chunk framing).
constexpr size_t kHeadAllowance = size_t(64) << 10;
// After a request this large, freed memory goes back to the system: glibc keeps
// it in the connection thread's arena otherwise, and with one arena per thread
// a few large requests would raise the RSS for good.
constexpr size_t kTrimAfterBytes = size_t(256) << 10;

int poll_one(int fd, short events, milliseconds wait) {
  pollfd p{fd, events, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, int(std::max<int64_t>(wait.count(), 0)));
  } while (rc < 0 && errno == EINTR);
  if (rc <= 0) return rc;
  return p.revents;
}

void address_of(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  const int rc = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                      : ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0) return;
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    ip = host;
    port = std::atoi(serv);
  }
}

// One accepted connection. Reads are buffered; each request gets a deadline
// and a byte budget from start_request().
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(socket_t sock, milliseconds timeout, size_t byte_budget)
      : sock_(sock), timeout_(timeout), byte_budget_(byte_budget) {}

  void start_request() {
    deadline_ = Clock::now() + timeout_;
    bytes_read_ = 0;
  }

  size_t request_bytes() const { return bytes_read_; }
  void close_after_response() { close_after_response_ = true; }
  bool closing() const { return close_after_response_; }

  // Waits up to `limit` for the next request's first byte; false when none
  // came, the client closed, or the server is draining.
  bool wait_for_request(milliseconds limit, const std::atomic<bool>& draining) const {
    if (begin_ < end_) return true;
    const Clock::time_point until = Clock::now() + limit;
    while (!draining.load()) {
      const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now());
      if (left.count() <= 0) return false;
      const int ev = poll_one(sock_, POLLIN, std::min(left, kDrainPoll));
      if (ev < 0) return false;
      if (ev > 0) return (ev & POLLIN) != 0 && !peer_closed();
    }
    return false;
  }

  // The peer closed (or reset) the connection. Buffered or pipelined bytes mean it has not.
  bool peer_closed() const {
    if (begin_ < end_) return false;
    char byte;
    const ssize_t n = ::recv(sock_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return false;
    if (n == 0) return true;
    return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  }

  bool is_readable() const override {
    if (begin_ < end_) return true;
    return poll_one(sock_, POLLIN, std::min(timeout_, left())) > 0;
  }

  bool is_writable() const override { return !peer_closed() && poll_one(sock_, POLLOUT, timeout_) > 0; }

  ssize_t read(char* ptr, size_t size) override {
    if (begin_ == end_) {
      const milliseconds wait = std::min(timeout_, left());
      if (wait.count() <= 0 || bytes_read_ >= byte_budget_) return -1;
      if (poll_one(sock_, POLLIN, wait) <= 0) return -1;
      ssize_t n;
      do {
        n = ::recv(sock_, buffer_, sizeof buffer_, 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      begin_ = 0;
      end_ = size_t(n);
      bytes_read_ += size_t(n);
    }
    const size_t take = std::min(size, end_ - begin_);
    std::memcpy(ptr, buffer_ + begin_, take);
    begin_ += take;
    return ssize_t(take);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (poll_one(sock_, POLLOUT, timeout_) <= 0) return -1;
    ssize_t n;
    do {
      n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { address_of(sock_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address_of(sock_, false, ip, port); }
  socket_t socket() const override { return sock_; }

 private:
  milliseconds left() const { return std::chrono::duration_cast<milliseconds>(deadline_ - Clock::now()); }

  socket_t sock_;
  milliseconds timeout_;
  size_t byte_budget_;
  Clock::time_point deadline_ = Clock::now();
  size_t bytes_read_ = 0;
  bool close_after_response_ = false;
  char buffer_[4096];
  size_t begin_ = 0, end_ = 0;
};

// The connection the current worker thread serves (for client_gone()).
thread_local ConnectionStream* current_connection = nullptr;

}  // namespace

HttpServer::HttpServer(milliseconds timeout) : timeout_(timeout) {}

void HttpServer::drain() {
  draining_.store(true);
  // stop() does nothing before listen() runs: a signal right after start waits for it (at most 5 s).
  for (int i = 0; i < 500 && !is_running(); ++i) std::this_thread::sleep_for(milliseconds(10));
  stop();
}

bool HttpServer::client_gone() { return current_connection != nullptr && current_connection->peer_closed(); }

void HttpServer::close_after_response() {
  if (current_connection != nullptr) current_connection->close_after_response();
}

bool HttpServer::process_and_close_socket(socket_t sock) {
  // A response goes out in several writes (head, body, each event): Nagle's algorithm would
  // hold each one back until the client's delayed ACK of the previous (40 ms on Linux).
  const int one = 1;
  ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ConnectionStream stream(sock, timeout_, payload_max_length_ + kHeadAllowance);
  current_connection = &stream;
  bool ok = true;
  for (size_t served = 0; served < keep_alive_max_count_; ++served) {
    // The first request of a connection gets the whole timeout to arrive, like any other.
    if (served > 0 && !stream.wait_for_request(timeout_, draining_)) break;
    stream.start_request();
    bool client_closes = false;
    const bool last = served + 1 == keep_alive_max_count_ || draining_.load();
    try {
      ok = process_request(stream, last, client_closes, nullptr);
    } catch (...) {  // httplib guards handlers, not its own writing: a failure there ends the connection
      ok = false;
    }
    if (stream.request_bytes() >= kTrimAfterBytes) malloc_trim(0);
    if (!ok || client_closes || last || stream.closing()) break;
  }
  current_connection = nullptr;
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace cact::serve
