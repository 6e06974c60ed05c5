// libFuzzer entry point of the "transcript" target; the work is in harness.h.
#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cact::fuzz::transcript({data, size});
  return 0;
}
