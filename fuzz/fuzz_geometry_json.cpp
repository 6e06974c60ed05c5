// libFuzzer entry point of the "geometry_json" target; the work is in harness.h, replayed
// from fuzz/regressions/geometry_json/ by the test suite.
#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cact::fuzz::geometry_json({data, size});
  return 0;
}
