// The endpoints (routes.h).
#include "routes.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <utility>

#include "cact/error.h"
#include "cact/openai.h"
#include "common/output.h"
#include "conversation.h"
#include "errors.h"
#include "openai_response.h"

namespace cact::serve {

namespace {

using httplib::Request;
using httplib::Response;
using Handled = httplib::Server::HandlerResponse;

// Compares without stopping at the first difference (no timing hint about the key).
bool same_secret(std::string_view a, std::string_view b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    diff |= unsigned(i < a.size() ? a[i] : 0) ^ unsigned(i < b.size() ? b[i] : 0);
  }
  return diff == 0;
}

// With --api-key, every endpoint but /health wants "Authorization: Bearer KEY".
void check_key(const ServeContext& ctx, const Request& req) {
  if (ctx.options->api_key.empty()) return;
  const std::string given = req.get_header_value("Authorization");
  if (same_secret(given, "Bearer " + ctx.options->api_key)) return;
  throw HttpError(401, given.empty() ? "missing API key (send Authorization: Bearer KEY)" : "invalid API key");
}

Json parse_body(const Request& req, size_t max_bytes) {
  try {
    return parse_json_limited(req.body, "request body", max_bytes);
  } catch (const Error& e) {
    throw HttpError(400, e.what());
  }
}

void send_json(Response& res, const Json& body) {
  res.status = 200;
  res.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n", "application/json");
}

// Checks the key, runs a handler body and turns whatever it throws into an error response.
template <typename Body>
void guarded(const ServeContext& ctx, const Request& req, Response& res, Body&& body) {
  try {
    check_key(ctx, req);
    body();
  } catch (const HttpError& e) {
    send_error(res, e);
    if (e.status() == 401) res.set_header("WWW-Authenticate", "Bearer");
  } catch (const chat::openai::RequestError& e) {
    send_error(res, HttpError(400, e.what(), e.param()));
  } catch (const Error& e) {
    send_error(res, HttpError(400, e.what()));
  } catch (const std::bad_alloc&) {
    send_error(res, HttpError(500, "out of memory"));
  }
}

Json model_json(const ServeContext& ctx) {
  return {{"id", ctx.model_id}, {"object", "model"}, {"created", ctx.model_created}, {"owned_by", "cact"}};
}

void count(const ServeContext& ctx, const chat::Answer& answer) {
  ++(answer.stop == chat::StopReason::cancelled ? ctx.counters->cancelled : ctx.counters->answered);
}

// A streamed completion: runs in httplib's content provider, after the
// headers went out, on the slot the handler acquired.
struct StreamJob {
  const ServeContext* ctx;
  chat::openai::ChatRequest request;
  SlotPool::Lease lease;
  ResponseHead head;
  bool started = false;

  bool write(httplib::DataSink& sink, const Json& event) {
    const std::string text = sse_event(event);
    return sink.write(text.data(), text.size());
  }

  bool write_delta(httplib::DataSink& sink, const StreamSplitter::Delta& d) {
    if (d.empty()) return true;
    Json delta = Json::object();
    if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
    if (!d.content.empty()) delta["content"] = d.content;
    return write(sink, chunk_json(head, std::move(delta)));
  }

  // The whole answer in one call; false when the client left or a write failed
  // (httplib then ends the response instead of asking for more).
  bool run(httplib::DataSink& sink) {
    if (std::exchange(started, true)) return false;
    if (!write(sink, chunk_json(head, {{"role", "assistant"}, {"content", ""}}))) return false;
    StreamSplitter splitter;
    bool connected = true;
    const chat::OnPiece on_piece = [&](std::string_view piece) {
      connected = connected && write_delta(sink, splitter.push(piece)) && !HttpServer::client_gone();
      return connected;
    };
    try {
      const Outcome outcome = answer_request(lease.chat(), lease.fit(), request, *ctx->tok, on_piece);
      count(*ctx, outcome.answer);
      if (!connected || !write_delta(sink, splitter.finish())) return false;
      const std::vector<std::string> ids = new_call_ids(outcome.answer.function_calls.size());
      for (const Json& chunk : tool_call_chunks(head, outcome.answer, ids)) {
        if (!write(sink, chunk)) return false;
      }
      Json last = chunk_json(head, Json::object(), chat::openai::finish_reason(outcome.answer));
      last["cact"] = cact_extension(outcome, {lease.index(), lease.fit(), lease.waited_ms()});
      if (!write(sink, last)) return false;
      if (request.include_usage && !write(sink, usage_chunk_json(head, outcome.usage))) return false;
    } catch (const std::exception& e) {
      // The status line went out already: the error is an event, as OpenAI sends it.
      // (Nothing may escape: the provider runs outside httplib's handler guard.)
      const int status = dynamic_cast<const Error*>(&e) != nullptr ? 400 : 500;
      if (!write(sink, Json::parse(error_json(HttpError(status, e.what()))))) return false;
    }
    static constexpr std::string_view kDone = "data: [DONE]\n\n";
    if (!sink.write(kDone.data(), kDone.size())) return false;
    sink.done();
    return true;
  }
};

void chat_completions(const ServeContext& ctx, const Request& req, Response& res) {
  const Json body = parse_body(req, ctx.options->max_body);
  chat::openai::ChatRequest request = chat::openai::parse_chat_request(body, ctx.options->limits, ctx.markers);
  check_fits(*ctx.tok, request, ctx.options->context);
  std::optional<SlotPool::Lease> lease = ctx.slots->acquire(request, [] { return !HttpServer::client_gone(); });
  if (!lease) throw HttpError(400, "the client closed the connection while the request waited");
  ResponseHead head = new_response_head(ctx.model_id);
  if (!request.stream) {
    const Outcome outcome = answer_request(lease->chat(), lease->fit(), request, *ctx.tok,
                                           [](std::string_view) { return !HttpServer::client_gone(); });
    count(ctx, outcome.answer);
    const std::vector<std::string> ids = new_call_ids(outcome.answer.function_calls.size());
    send_json(res, completion_json(head, outcome, ids, {lease->index(), lease->fit(), lease->waited_ms()}));
    return;
  }
  auto job =
      std::make_shared<StreamJob>(StreamJob{&ctx, std::move(request), std::move(*lease), std::move(head), false});
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream",
                                   [job](size_t, httplib::DataSink& sink) { return job->run(sink); });
}

Json tokenize(const ServeContext& ctx, const Json& body) {
  if (!body.is_object()) throw HttpError(400, "expected a JSON object {\"content\": string}");
  for (const auto& [key, value] : body.items()) {
    if (key != "content" && key != "add_special") throw HttpError(400, key + ": unknown parameter", key);
  }
  const auto content = body.find("content");
  if (content == body.end() || !content->is_string()) throw HttpError(400, "content: expected a string", "content");
  bool add_special = false;
  if (const auto special = body.find("add_special"); special != body.end()) {
    if (!special->is_boolean()) throw HttpError(400, "add_special: expected true or false", "add_special");
    add_special = special->get<bool>();
  }
  std::vector<int32_t> ids;
  if (add_special) ids.push_back(int32_t(ctx.tok->model().bos_id));
  const std::vector<int32_t> text_ids = ctx.tok->encode(content->get_ref<const std::string&>());
  ids.insert(ids.end(), text_ids.begin(), text_ids.end());
  return {{"tokens", ids}};
}

Json detokenize(const ServeContext& ctx, const Json& body) {
  if (!body.is_object()) throw HttpError(400, "expected a JSON object {\"tokens\": [int, ...]}");
  for (const auto& [key, value] : body.items()) {
    if (key != "tokens") throw HttpError(400, key + ": unknown parameter", key);
  }
  const auto tokens = body.find("tokens");
  if (tokens == body.end() || !tokens->is_array())
    throw HttpError(400, "tokens: expected a list of token ids", "tokens");
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens->size(); ++i) {
    const Json& id = (*tokens)[i];
    const std::string at = "tokens[" + std::to_string(i) + "]";
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || uint64_t(id.get<int64_t>()) >= ctx.tok->size()) {
      throw HttpError(400, at + ": expected a token id in [0, " + std::to_string(ctx.tok->size()) + ")", at);
    }
    ids.push_back(int32_t(id.get<int64_t>()));
  }
  return {{"content", ctx.tok->decode(ids)}};
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

// The message of an error httplib answered itself (no handler ran or read the body).
std::string transport_error_message(const Request& req, int status, const Options& o) {
  switch (status) {
    case 404:
      return "no such endpoint: " + req.method + " " + req.path;
    case 413:
      return "the request body is larger than the limit of " + std::to_string(o.max_body) + " bytes (--max-body)";
    case 414:
      return "the request line is too long";
    case 400:
      return "malformed HTTP request, a body over the limit of " + std::to_string(o.max_body) +
             " bytes, or a request that did not arrive whole within " + seconds_text(o.timeout);
    default:
      return "HTTP error " + std::to_string(status);
  }
}

}  // namespace

void install_routes(HttpServer& server, const ServeContext& context) {
  const ServeContext* ctx = &context;

  server.Post("/v1/chat/completions", [ctx](const Request& req, Response& res) {
    guarded(*ctx, req, res, [&] { chat_completions(*ctx, req, res); });
  });
  server.Post("/tokenize", [ctx](const Request& req, Response& res) {
    guarded(*ctx, req, res, [&] { send_json(res, tokenize(*ctx, parse_body(req, ctx->options->max_body))); });
  });
  server.Post("/detokenize", [ctx](const Request& req, Response& res) {
    guarded(*ctx, req, res, [&] { send_json(res, detokenize(*ctx, parse_body(req, ctx->options->max_body))); });
  });
  server.Get("/v1/models", [ctx](const Request& req, Response& res) {
    guarded(*ctx, req, res, [&] { send_json(res, {{"object", "list"}, {"data", Json::array({model_json(*ctx)})}}); });
  });
  server.Get(R"(/v1/models/(.+))", [ctx](const Request& req, Response& res) {
    guarded(*ctx, req, res, [&] {
      const std::string id = req.matches[1];
      if (id != ctx->model_id)
        throw HttpError(404, "no model " + id + " (this server has " + ctx->model_id + ")", "model", "model_not_found");
      send_json(res, model_json(*ctx));
    });
  });
  server.Get("/health", [ctx](const Request&, Response& res) {
    const SlotPool::Stats s = ctx->slots->stats();
    send_json(res, {{"status", "ok"},
                    {"slots", s.slots},
                    {"slots_busy", s.busy},
                    {"queued", s.waiting},
                    {"queue_limit", s.queue_limit},
                    {"served", s.served},
                    {"answered", ctx->counters->answered.load()},
                    {"cancelled", ctx->counters->cancelled.load()}});
  });

  // The right path with the wrong method: 405 naming the one that works.
  const auto wrong_method = [](const char* allowed) {
    return [allowed](const Request& req, Response& res) {
      send_error(res, HttpError(405, req.method + " " + req.path + ": use " + allowed));
      res.set_header("Allow", allowed);
    };
  };
  for (const char* path : {"/v1/chat/completions", "/tokenize", "/detokenize"}) {
    server.Get(path, wrong_method("POST"));
    server.Put(path, wrong_method("POST"));
    server.Delete(path, wrong_method("POST"));
    server.Patch(path, wrong_method("POST"));
  }
  for (const char* path : {"/v1/models", "/health"}) {
    server.Post(path, wrong_method("GET"));
    server.Put(path, wrong_method("GET"));
    server.Delete(path, wrong_method("GET"));
    server.Patch(path, wrong_method("GET"));
  }

  // Errors httplib produced itself (unknown path, body too large, malformed request).
  server.set_error_handler(httplib::Server::HandlerWithResponse([ctx](const Request& req, Response& res) {
    if (!res.body.empty()) return Handled::Unhandled;
    send_error(res, HttpError(res.status, transport_error_message(req, res.status, *ctx->options)));
    if (res.status != 404) {
      res.set_header("Connection", "close");
      HttpServer::close_after_response();
    }
    return Handled::Handled;
  }));
  server.set_exception_handler([](const Request&, Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what += std::string(": ") + e.what();
    } catch (...) {
    }
    send_error(res, HttpError(500, what));
  });
  if (context.log_requests) {
    server.set_logger([](const Request& req, const Response& res) {
      app::note(kTool, req.remote_addr + " " + req.method + " " + req.path + " " + std::to_string(res.status));
    });
  }
}

}  // namespace cact::serve
