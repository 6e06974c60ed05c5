// cact_session_*: one decoding state on a shared engine.
#include "capi/handles.h"
#include "capi/options.h"

using cact::capi::fail_with;
using cact::capi::guarded;
using cact::capi::need;

namespace {

constexpr size_t kSessionOptionsV1 = sizeof(cact_session_options);

cact::capi::ErrorText* error_of(const cact_session* s) { return s != nullptr ? &s->error : nullptr; }

cact::HeadKind head_kind(cact_head head) {
  switch (head) {
    case CACT_HEAD_EMBEDDING:
      return cact::HeadKind::embedding;
    case CACT_HEAD_CONFIDENCE:
      return cact::HeadKind::confidence;
    case CACT_HEAD_ROUTER:
      return cact::HeadKind::router;
    default:
      break;
  }
  fail_with(CACT_ERROR_INVALID_ARGUMENT, "head " + std::to_string(int(head)) + " is not a cact_head");
}

// The probe heads read every token since reset: refuse what has none, or no token yet.
void need_head(const cact::Session& s, cact::HeadKind kind) {
  if (!s.has_head(kind)) {
    fail_with(CACT_ERROR_UNSUPPORTED, std::string("this archive has no ") + cact::head_kind_name(kind) + " head");
  }
  if (s.position() == 0) fail_with(CACT_ERROR_STATE, "no token was fed since the last reset");
}

// The context check before the engine's own, so that it has its own status.
void need_room(const cact::Session& s, size_t count) {
  if (count > s.remaining()) {
    fail_with(CACT_ERROR_CONTEXT_OVERFLOW, std::to_string(count) + (count == 1 ? " token does" : " tokens do") +
                                               " not fit the context of " + std::to_string(s.context()) +
                                               " positions (" + std::to_string(s.position()) + " used)");
  }
}

}  // namespace

extern "C" {

void cact_session_options_init(cact_session_options* options) noexcept {
  if (options == nullptr) return;
  const cact::SessionOptions defaults;
  options->struct_size = sizeof *options;
  options->context = defaults.context;
  options->sinks = defaults.sinks;
  options->kv_window = defaults.kv_window;
  options->max_chunk = defaults.max_chunk;
  options->threads = defaults.threads;
}

cact_status cact_session_new(const cact_engine* engine, const cact_session_options* options,
                             cact_session** out) noexcept {
  if (out != nullptr) *out = nullptr;
  return guarded(__func__, nullptr, CACT_ERROR_INVALID_ARGUMENT, [&] {
    need(out, "out");
    const auto& data = need(engine, "engine").data;
    const cact_session_options o =
        cact::capi::read_options(options, cact_session_options_init, kSessionOptionsV1, "cact_session_options");
    cact::SessionOptions so;
    so.context = o.context;
    so.sinks = o.sinks;
    so.kv_window = o.kv_window;
    so.max_chunk = o.max_chunk;
    so.threads = o.threads;
    *out = new cact_session(data, so);
  });
}

void cact_session_free(cact_session* session) noexcept { delete session; }

const char* cact_session_last_error(const cact_session* session) noexcept {
  return session != nullptr ? session->error.c_str() : "session is NULL";
}

cact_status cact_session_prefill(cact_session* session, const int32_t* ids, size_t count) noexcept {
  return guarded(__func__, error_of(session), CACT_ERROR_INVALID_ARGUMENT, [&] {
    cact::Session& s = need(session, "session").session;
    if (count == 0) return;
    need(ids, "ids");
    need_room(s, count);
    s.prefill(std::span<const int32_t>(ids, count));
  });
}

cact_status cact_session_step(cact_session* session, int32_t id) noexcept {
  return guarded(__func__, error_of(session), CACT_ERROR_INVALID_ARGUMENT, [&] {
    cact::Session& s = need(session, "session").session;
    need_room(s, 1);
    s.step(id);
  });
}

cact_status cact_session_logits(const cact_session* session, const float** logits, size_t* count) noexcept {
  return guarded(__func__, error_of(session), CACT_ERROR_INTERNAL, [&] {
    const cact::Session& s = need(session, "session").session;
    need(logits, "logits");
    need(count, "count");
    const std::span<const float> l = s.logits();
    if (l.empty()) fail_with(CACT_ERROR_STATE, "no token was fed since the last reset");
    *logits = l.data();
    *count = l.size();
  });
}

cact_status cact_session_reset(cact_session* session) noexcept {
  return guarded(__func__, error_of(session), CACT_ERROR_INTERNAL, [&] { need(session, "session").session.reset(); });
}

cact_status cact_session_copy(cact_session* session, const cact_session* source) noexcept {
  return guarded(__func__, error_of(session), CACT_ERROR_INVALID_ARGUMENT, [&] {
    cact::Session& s = need(session, "session").session;
    const cact::Session& from = need(source, "source").session;
    if (&s != &from) s.copy_state_from(from);
  });
}

cact_status cact_session_position(const cact_session* session, uint32_t* position) noexcept {
  return guarded(__func__, error_of(session), CACT_ERROR_INTERNAL,
                 [&] { need(position, "position") = need(session, "session").session.position(); });
}

cact_status cact_session_context(const cact_session* session, uint32_t* context) noexcept {
  return guarded(__func__, error_of(session), CACT_ERROR_INTERNAL,
                 [&] { need(context, "context") = need(session, "session").session.context(); });
}

cact_status cact_session_confidence(const cact_session* session, float* confidence) noexcept {
  return guarded(__func__, error_of(session), CACT_ERROR_INTERNAL, [&] {
    const cact::Session& s = need(session, "session").session;
    need(confidence, "confidence");
    need_head(s, cact::HeadKind::confidence);
    *confidence = s.confidence();
  });
}

cact_status cact_session_head(const cact_session* session, cact_head head, float* values, size_t capacity,
                              size_t* count) noexcept {
  return guarded(__func__, error_of(session), CACT_ERROR_INTERNAL, [&] {
    const cact::Session& s = need(session, "session").session;
    const cact::HeadKind kind = head_kind(head);
    need_head(s, kind);
    const std::vector<float> out = s.head_output(kind);
    cact::capi::copy_out(out.data(), out.size(), values, capacity, count, "values");
  });
}

}  // extern "C"
