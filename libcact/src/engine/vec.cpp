#include "engine/vec.h"

namespace cact::engine {

VecIsa vec_isa() {
#if CACT_VEC_X86
  static const VecIsa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return VecIsa::avx512;
    if (__builtin_cpu_supports("avx2")) return VecIsa::avx2;
    return VecIsa::base;
  }();
  return isa;
#else
  return VecIsa::base;
#endif
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
