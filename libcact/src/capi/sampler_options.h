#pragma once
// cact_sampler_options as cact::SamplerOptions (for the sampler and for chat answers).
#include "cact/cact.h"
#include "cact/sampler.h"

namespace cact::capi {

// NULL = the defaults (greedy). Fails with INVALID_ARGUMENT naming the first option out of range.
SamplerOptions sampler_options(const cact_sampler_options* given);

}  // namespace cact::capi
