// cact-serve: an OpenAI-compatible HTTP server for one .cact model (docs/SERVE.md).
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>
#include <thread>

#include "cact-run/run.h"  // default_model(): the bundled archive, found as cact-run finds it
#include "cact/engine.h"
#include "cact/error.h"
#include "cact/model.h"
#include "cact/openai.h"
#include "common/output.h"
#include "common/run_tool.h"
#include "http_server.h"
#include "options.h"
#include "routes.h"
#include "slots.h"

namespace cact::serve {

namespace {

// Threads that hold connections: every slot and every queue place, plus a few
// that answer /health, errors and 503s while those are taken.
constexpr uint32_t kSpareConnectionThreads = 4;
constexpr size_t kRequestsPerConnection = 1000;

// SIGINT and SIGTERM are taken by one thread (sigwait): the first drains the
// server, a second ends the process at once. Blocked here, before any other
// thread starts, so that every thread inherits the mask.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error return, not a signal
  return set;
}

void watch_stop_signals(sigset_t set, HttpServer& server) {
  std::thread([set, &server] {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) return;
    app::note(kTool, std::string(strsignal(sig)) + ": finishing the requests in progress, then exiting");
    server.drain();
    if (sigwait(&set, &sig) == 0) std::_Exit(128 + sig);
  }).detach();
}

int64_t modified_time(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? int64_t(st.st_mtime) : 0;
}

int serve(Options& o) {
  const sigset_t stop_signals = block_stop_signals();
  const std::string archive = o.archive.empty() ? run::default_model().string() : o.archive;
  const Model model = Model::open(archive);
  std::future<Tokenizer> tok_ready = std::async(std::launch::async, [&] { return Tokenizer(model.tokenizer_model()); });
  model.prefault_dense();
  EngineOptions eo;
  eo.kernels = o.scalar ? &kernels::scalar_kernels() : nullptr;
  const Engine engine(model, eo);
  const Tokenizer tok = tok_ready.get();
  resolve(o, std::thread::hardware_concurrency(), model.header().max_seq_len);

  chat::ChatOptions co;
  co.session.context = o.context;
  co.session.threads = o.threads;
  SlotPool slots(engine, tok, co, o.parallel, o.queue);

  ServeCounters counters;
  ServeContext ctx;
  ctx.options = &o;
  ctx.tok = &tok;
  ctx.slots = &slots;
  ctx.counters = &counters;
  ctx.model_id = o.alias.empty() ? std::filesystem::path(archive).stem().string() : o.alias;
  ctx.model_created = modified_time(archive);
  ctx.markers = chat::openai::marker_surfaces(tok);
  ctx.log_requests = !app::quiet();

  HttpServer server(std::chrono::milliseconds(int64_t(o.timeout * 1000.0)));
  const uint32_t connection_threads = o.parallel + o.queue + kSpareConnectionThreads;
  server.new_task_queue = [connection_threads] { return new httplib::ThreadPool(connection_threads); };
  server.set_payload_max_length(o.max_body);
  server.set_keep_alive_max_count(kRequestsPerConnection);
  server.set_keep_alive_timeout(std::max<time_t>(1, time_t(o.timeout)));  // what the Keep-Alive header announces
  install_routes(server, ctx);

  const int port = o.port == 0 ? server.bind_to_any_port(o.host) : (server.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port < 0) fail("cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " + std::strerror(errno));
  watch_stop_signals(stop_signals, server);
  app::note(kTool, "listening on http://" + o.host + ":" + std::to_string(port) + " (model " + ctx.model_id + ", " +
                       std::to_string(o.parallel) + " sessions of " + std::to_string(o.context) + " positions, " +
                       std::to_string(o.threads) + " threads each, queue " + std::to_string(o.queue) + ")");
  if (!server.listen_after_bind() && !server.draining())
    fail("the server stopped: " + std::string(std::strerror(errno)));
  app::note(kTool, "stopped");
  return 0;
}

}  // namespace

}  // namespace cact::serve

int main(int argc, char** argv) {
  cact::serve::Options o;
  CLI::App cli{"cact-serve: an OpenAI-compatible HTTP server (chat completions with tool calls) for a .cact model"};
  cact::serve::add_flags(cli, o);
  return cact::app::run_tool(cact::serve::kTool, cli, argc, argv, [&] { return cact::serve::serve(o); });
}
