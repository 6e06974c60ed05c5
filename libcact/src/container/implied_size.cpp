// How many bytes a record's dtype and shape imply.
#include "cact/codec.h"
#include "cact/format.h"

namespace cact {

uint64_t implied_nbytes(const Record& r) {
  if (r.ndim > 4) return 0;
  constexpr uint64_t kLimit = uint64_t(1) << 40;
  uint64_t elements = 1;
  for (uint8_t i = 0; i < r.ndim; ++i) {
    if (r.shape[i] == 0) return 0;
    elements *= r.shape[i];
    if (elements >= kLimit) return 0;
  }
  switch (r.dtype) {
    case Dtype::FP16:
      return elements * 2;
    case Dtype::FP32:
      return elements * 4;
    case Dtype::CQ:
      if (r.ndim != 2) return 0;
      return codec::blob_bytes(r.shape[0], r.shape[1], r.bits, r.group);
    case Dtype::RAW:
      return r.nbytes;  // any size: RAW carries its own framing
  }
  return 0;
}

}  // namespace cact
