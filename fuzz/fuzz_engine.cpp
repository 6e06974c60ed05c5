// libFuzzer entry point of the "engine" target; the work is in harness.h, replayed
// from fuzz/regressions/engine/ by the test suite.
#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cact::fuzz::engine({data, size});
  return 0;
}
