#include "engine/vec.h"

#include <cstdlib>
#include <cstring>

#if CACT_VEC_X86
#include "base/cpu_features.h"
#endif

namespace cact::engine {

VecIsa vec_isa() {
#if CACT_VEC_X86
  static const VecIsa isa = [] {
    __builtin_cpu_init();
    // The wide builds fuse multiply-adds (vec.h fused_madd) and convert FP16
    // weights with F16C: they need FMA3 and F16C too.
    if (!__builtin_cpu_supports("fma") || !kernels::cpu_has_f16c()) return VecIsa::base;
    if (__builtin_cpu_supports("avx512f")) return VecIsa::avx512;
    if (__builtin_cpu_supports("avx2")) return VecIsa::avx2;
    return VecIsa::base;
  }();
  return isa;
#else
  return VecIsa::base;
#endif
}

VecIsa engine_vec_isa() {
  const char* env = std::getenv("CACT_VEC");
  VecIsa want = vec_isa();
  if (env != nullptr) {
    if (std::strcmp(env, "base") == 0) want = VecIsa::base;
    if (std::strcmp(env, "avx2") == 0) want = VecIsa::avx2;
  }
  return want < vec_isa() ? want : vec_isa();
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
