// libFuzzer entry point of the "archive" target; the work is in harness.h so that
// fuzz/regressions/archive/ replays through the same code in the test suite.
#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cact::fuzz::archive({data, size});
  return 0;
}
