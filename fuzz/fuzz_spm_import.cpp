// libFuzzer entry point of the "spm_import" target (SentencePiece ModelProto
// reader); the work is in harness.h, replayed from fuzz/regressions/spm_import/.
#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cact::fuzz::spm_import({data, size});
  return 0;
}
