#include "engine/vec.h"

#include <atomic>

#include "base/cpu_features.h"

namespace cact::engine {

namespace {
std::atomic<VecIsa> session_cap{VecIsa::avx512};
}  // namespace

VecIsa vec_isa() {
  static const VecIsa isa = [] {
    // The wide builds fuse multiply-adds (vec.h fused_madd) and convert FP16
    // weights with F16C: they need FMA3 and F16C too.
    const CpuFeatures& f = cpu_features();
    if (!f.fma || !f.f16c) return VecIsa::base;
    if (f.avx512f) return VecIsa::avx512;
    if (f.avx2) return VecIsa::avx2;
    return VecIsa::base;
  }();
  return isa;
}

void cap_session_vec_isa(VecIsa cap) { session_cap.store(cap); }

VecIsa engine_vec_isa() {
  const VecIsa cap = session_cap.load();
  return cap < vec_isa() ? cap : vec_isa();
}

const char* vec_isa_name(VecIsa isa) {
  switch (isa) {
    case VecIsa::avx512:
      return "avx512";
    case VecIsa::avx2:
      return "avx2";
    case VecIsa::base:
      break;
  }
  return "base";
}

}  // namespace cact::engine
