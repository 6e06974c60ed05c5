// libFuzzer entry point of the "synth" target (synthetic archives of fuzzed
// geometries must pass the archive check); the work is in harness.h, replayed
// from fuzz/regressions/synth/ and the geometry_json seeds.
#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cact::fuzz::synth({data, size});
  return 0;
}
