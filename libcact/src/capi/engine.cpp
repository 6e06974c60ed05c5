// cact_engine_*: the prepared numerics of one model, shared by sessions and chats.
#include "capi/handles.h"
#include "capi/options.h"

using cact::capi::fail_with;
using cact::capi::guarded;
using cact::capi::need;

namespace {

// The size of the struct's first version (stays when fields are appended).
constexpr size_t kEngineOptionsV1 = sizeof(cact_engine_options);

cact::EngineOptions engine_options(const cact_engine_options* given) {
  const cact_engine_options o =
      cact::capi::read_options(given, cact_engine_options_init, kEngineOptionsV1, "cact_engine_options");
  cact::EngineOptions eo;
  switch (o.numerics) {
    case CACT_NUMERICS_INT8:
      eo.numerics = cact::Numerics::int8;
      break;
    case CACT_NUMERICS_FLOAT:
      eo.numerics = cact::Numerics::reference;
      break;
    default:
      fail_with(CACT_ERROR_INVALID_ARGUMENT, "numerics " + std::to_string(int(o.numerics)) + " is not a cact_numerics");
  }
  switch (o.kernels) {
    case CACT_KERNELS_BEST:
      eo.kernels = nullptr;
      break;
    case CACT_KERNELS_SCALAR:
      eo.kernels = &cact::kernels::scalar_kernels();
      break;
    default:
      fail_with(CACT_ERROR_INVALID_ARGUMENT, "kernels " + std::to_string(int(o.kernels)) + " is not a cact_kernels");
  }
  return eo;
}

}  // namespace

extern "C" {

void cact_engine_options_init(cact_engine_options* options) noexcept {
  if (options == nullptr) return;
  options->struct_size = sizeof *options;
  options->numerics = CACT_NUMERICS_INT8;
  options->kernels = CACT_KERNELS_BEST;
}

cact_status cact_engine_new(const cact_model* model, const cact_engine_options* options, cact_engine** out) noexcept {
  if (out != nullptr) *out = nullptr;
  return guarded(__func__, nullptr, CACT_ERROR_BAD_MODEL, [&] {
    need(out, "out");
    const auto& data = need(model, "model").data;
    auto engine = std::make_shared<const cact::capi::EngineData>(data, engine_options(options));
    *out = new cact_engine{std::move(engine)};
  });
}

void cact_engine_free(cact_engine* engine) noexcept { delete engine; }

cact_status cact_engine_kernels_name(const cact_engine* engine, const char** name) noexcept {
  return guarded(__func__, nullptr, CACT_ERROR_INTERNAL, [&] {
    const cact::Engine& e = need(engine, "engine").data->engine;
    need(name, "name") = e.numerics() == cact::Numerics::int8 ? e.kernels().name : "none";
  });
}

}  // extern "C"
