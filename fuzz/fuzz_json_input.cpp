// libFuzzer entry point of the "json_input" target; the work is in harness.h.
#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cact::fuzz::json_input({data, size});
  return 0;
}
