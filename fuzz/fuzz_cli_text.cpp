// libFuzzer entry point of the "cli_text" target (--blocks lists and --bits
// width maps); the work is in harness.h, replayed from fuzz/regressions/cli_text/.
#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cact::fuzz::cli_text({data, size});
  return 0;
}
