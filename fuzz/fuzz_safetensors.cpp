// libFuzzer entry point of the "safetensors" target; the work is in harness.h, replayed
// from fuzz/regressions/safetensors/ by the test suite.
#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cact::fuzz::safetensors({data, size});
  return 0;
}
