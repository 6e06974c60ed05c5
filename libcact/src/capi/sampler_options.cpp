// cact_sampler_options, read and checked (sampler_options.h).
#include "capi/sampler_options.h"

#include "cact/error.h"
#include "capi/options.h"

namespace cact::capi {

namespace {
constexpr size_t kSamplerOptionsV1 = sizeof(cact_sampler_options);
}

SamplerOptions sampler_options(const cact_sampler_options* given) {
  const cact_sampler_options o =
      read_options(given, cact_sampler_options_init, kSamplerOptionsV1, "cact_sampler_options");
  SamplerOptions so;
  so.temperature = o.temperature;
  so.top_k = o.top_k;
  so.top_p = o.top_p;
  so.min_p = o.min_p;
  so.repeat_penalty = o.repeat_penalty;
  so.repeat_last_n = o.repeat_last_n;
  so.seed = o.seed;
  try {
    check_sampler_options(so);
  } catch (const Error& e) {
    fail_with(CACT_ERROR_INVALID_ARGUMENT, e.what());
  }
  return so;
}

}  // namespace cact::capi
