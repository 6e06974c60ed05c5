// libFuzzer entry point of the "chat_request" target; the work is in harness.h.
#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cact::fuzz::chat_request({data, size});
  return 0;
}
