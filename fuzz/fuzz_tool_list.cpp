// libFuzzer entry point of the "tool_list" target; the work is in harness.h.
#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cact::fuzz::tool_list({data, size});
  return 0;
}
