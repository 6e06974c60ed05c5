// libFuzzer entry point of the "archive_layout" target (header + directory
// overlaid on a real archive); the work is in harness.h, replayed from
// fuzz/regressions/archive_layout/.
#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cact::fuzz::archive_layout({data, size});
  return 0;
}
