// The one place that chooses the vectorised code: the CQ kernel tables this
// build has (CACT_HAVE_* from libcact/kernels.cmake) that cpu_features()
// allows, best last; the engine's float width (vec_isa) and the tables of its
// intrinsic routines (cact/float_kernels.h). Compiled with the baseline flags only: it must run anywhere, so it
// only reads the features and takes the addresses of the constant-initialised
// tables of the ISA-flagged files. Rules: docs/KERNELS.md "Dispatch".
#include "base/cpu_features.h"
#include "cact/float_kernels.h"
#include "cact/kernels.h"
#include "kernels/simd_common.h"

#if defined(__x86_64__) && defined(CACT_HAVE_AMX) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace cact::kernels {

#if defined(__x86_64__) && defined(CACT_HAVE_AVX2)
extern const KernelTable kAvx2Kernels;
#endif
#if defined(__x86_64__) && defined(CACT_HAVE_AVX512VNNI)
extern const KernelTable kAvx512VnniKernels;
extern const KernelTable kAvx512VbmiKernels;
#endif
#if defined(__x86_64__) && defined(CACT_HAVE_AVXVNNI)
extern const KernelTable kAvxVnniKernels;
#endif
#if defined(__x86_64__) && defined(CACT_HAVE_AMX)
extern const KernelTable kAvx512AmxKernels;
#endif
#if defined(__aarch64__) && defined(CACT_HAVE_NEON)
extern const KernelTable kNeonKernels;
#endif
#if defined(__aarch64__) && defined(CACT_HAVE_NEON_DOTPROD)
extern const KernelTable kNeonDotprodKernels;
#endif
#if defined(__x86_64__) && defined(CACT_HAVE_FLOAT_AVX2)
extern const FloatMlpKernels kFloatMlpAvx2;
#endif
#if defined(__x86_64__) && defined(CACT_HAVE_FLOAT_AVX512)
extern const FloatMlpKernels kFloatMlpAvx512;
#endif
#if defined(__x86_64__) && defined(CACT_HAVE_KV_AVX512VNNI)
extern const KvInt8Kernels kKvInt8Avx512Vnni;
#endif
#if defined(__x86_64__) && defined(CACT_HAVE_KV_AVX2)
extern const KvInt8Kernels kKvInt8Avx2;
#endif
#if defined(__aarch64__) && defined(CACT_HAVE_KV_NEON)
extern const KvInt8Kernels kKvInt8Neon;
#endif
#if defined(__aarch64__) && defined(CACT_HAVE_KV_DOTPROD)
extern const KvInt8Kernels kKvInt8Dotprod;
#endif

const int8_t* activation_q(const QuantizedActivations& a) { return a.q.data(); }
int8_t* activation_q(QuantizedActivations& a) { return a.q.data(); }
const float* activation_scale(const QuantizedActivations& a) { return a.scale.data(); }
float* activation_scale(QuantizedActivations& a) { return a.scale.data(); }

namespace {

#if defined(__x86_64__) && defined(CACT_HAVE_AMX)
// The tile data granted to this process by Linux (ARCH_REQ_XCOMP_PERM, asked
// once; the grant covers every thread). A refusal keeps avx512-amx out.
bool amx_tile_data_granted() {
#if defined(__linux__)
  static const bool granted = [] {
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return granted;
#else
  return false;
#endif
}
#endif

// The SIMD tables `f` allows, best last.
std::vector<const KernelTable*> simd_kernels(const CpuFeatures& f) {
  std::vector<const KernelTable*> tables;
#if defined(__x86_64__) && defined(CACT_HAVE_AVX2)
  const bool avx2 = f.avx2 && f.f16c;
  if (avx2) tables.push_back(&kAvx2Kernels);
#if defined(CACT_HAVE_AVXVNNI)
  if (avx2 && f.avx_vnni) tables.push_back(&kAvxVnniKernels);
#endif
#if defined(CACT_HAVE_AVX512VNNI)
  // Preferred over avx-vnni when both exist: 512-bit tiles.
  if (avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni) {
    tables.push_back(&kAvx512VnniKernels);
    if (f.avx512vbmi) tables.push_back(&kAvx512VbmiKernels);
#if defined(CACT_HAVE_AMX)
    // Prefill on AMX tiles, else avx512-vbmi (every AMX CPU has AVX512-VBMI).
    if (f.avx512vbmi && f.amx_int8 && amx_tile_data_granted()) tables.push_back(&kAvx512AmxKernels);
#endif
  }
#endif
#endif
#if defined(__aarch64__) && defined(CACT_HAVE_NEON)
  if (f.neon) tables.push_back(&kNeonKernels);
#endif
#if defined(__aarch64__) && defined(CACT_HAVE_NEON_DOTPROD)
  if (f.neon && f.dotprod) tables.push_back(&kNeonDotprodKernels);
#endif
  (void)f;
  return tables;
}

}  // namespace

std::vector<const KernelTable*> available_kernels() {
  std::vector<const KernelTable*> tables{&scalar_kernels()};
  for (const KernelTable* t : simd_kernels(cpu_features())) tables.push_back(t);
  return tables;
}

const KernelTable& best_kernels() {
  static const KernelTable* chosen = available_kernels().back();
  return *chosen;
}

const FloatMlpKernels* float_mlp_kernels(vec::VecIsa width) {
  if (width > vec::vec_isa()) return nullptr;
#if defined(__x86_64__) && defined(CACT_HAVE_FLOAT_AVX512)
  if (width == vec::VecIsa::avx512) return &kFloatMlpAvx512;
#endif
#if defined(__x86_64__) && defined(CACT_HAVE_FLOAT_AVX2)
  if (width == vec::VecIsa::avx2) return &kFloatMlpAvx2;
#endif
  return nullptr;
}

const KvInt8Kernels& kv_int8_kernels() {
  static const KvInt8Kernels chosen = [] {
    [[maybe_unused]] const CpuFeatures& f = cpu_features();
#if defined(__x86_64__) && defined(CACT_HAVE_KV_AVX512VNNI)
    if (vec::vec_isa() == vec::VecIsa::avx512 && f.avx512bw && f.avx512vl && f.avx512vnni) return kKvInt8Avx512Vnni;
#endif
#if defined(__x86_64__) && defined(CACT_HAVE_KV_AVX2)
    if (f.avx2) return kKvInt8Avx2;
#endif
#if defined(__aarch64__) && defined(CACT_HAVE_KV_NEON)
    if (f.neon) {
      KvInt8Kernels k = kKvInt8Neon;
#if defined(CACT_HAVE_KV_DOTPROD)
      if (f.dotprod) k.scores = kKvInt8Dotprod.scores;  // SDOT where the CPU has it
#endif
      return k;
    }
#endif
    return KvInt8Kernels{nullptr, nullptr, nullptr, nullptr, nullptr};
  }();
  return chosen;
}

}  // namespace cact::kernels

namespace cact::vec {

VecIsa vec_isa() {
  static const VecIsa isa = [] {
    // The wide builds fuse multiply-adds (fused_madd) and convert FP16 with
    // F16C: they need FMA3 and F16C too.
    const CpuFeatures& f = cpu_features();
    if (!f.fma || !f.f16c) return VecIsa::base;
    if (f.avx512f) return VecIsa::avx512;
    if (f.avx2) return VecIsa::avx2;
    return VecIsa::base;
  }();
  return isa;
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

}  // namespace cact::vec
