// libFuzzer entry point of the "tokenizer_encode" target; the work is in harness.h so that
// fuzz/regressions/tokenizer_encode/ replays through the same code in the test suite.
#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cact::fuzz::tokenizer_encode({data, size});
  return 0;
}
