// libFuzzer entry point of the "slice" target; the work is in harness.h, replayed
// from fuzz/regressions/slice/ by the test suite.
#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cact::fuzz::slice({data, size});
  return 0;
}
