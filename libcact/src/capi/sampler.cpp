// cact_sampler_*: cact-run's sampling options over caller-provided logits.
#include "capi/handles.h"
#include "capi/options.h"
#include "capi/sampler_options.h"

using cact::capi::guarded;
using cact::capi::need;

extern "C" {

void cact_sampler_options_init(cact_sampler_options* options) noexcept {
  if (options == nullptr) return;
  const cact::SamplerOptions defaults;
  options->struct_size = sizeof *options;
  options->temperature = defaults.temperature;
  options->top_k = defaults.top_k;
  options->top_p = defaults.top_p;
  options->min_p = defaults.min_p;
  options->repeat_penalty = defaults.repeat_penalty;
  options->repeat_last_n = defaults.repeat_last_n;
  options->seed = defaults.seed;
}

cact_status cact_sampler_new(const cact_sampler_options* options, cact_sampler** out) noexcept {
  if (out != nullptr) *out = nullptr;
  return guarded(__func__, nullptr, CACT_ERROR_INVALID_ARGUMENT, [&] {
    need(out, "out");
    *out = new cact_sampler(cact::capi::sampler_options(options));
  });
}

void cact_sampler_free(cact_sampler* sampler) noexcept { delete sampler; }

const char* cact_sampler_last_error(const cact_sampler* sampler) noexcept {
  return sampler != nullptr ? sampler->error.c_str() : "sampler is NULL";
}

cact_status cact_sampler_sample(cact_sampler* sampler, const float* logits, size_t count, const int32_t* recent,
                                size_t n_recent, int32_t* id) noexcept {
  return guarded(__func__, sampler != nullptr ? &sampler->error : nullptr, CACT_ERROR_INVALID_ARGUMENT, [&] {
    cact::Sampler& s = need(sampler, "sampler").sampler;
    need(id, "id");
    need(logits, "logits");
    if (n_recent != 0) need(recent, "recent");
    *id = s.sample(std::span<const float>(logits, count), count, std::span<const int32_t>(recent, n_recent), nullptr);
  });
}

}  // extern "C"
