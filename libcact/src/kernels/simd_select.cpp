// Which SIMD tables this CPU can run, best last. Compiled with the baseline
// flags only: it must run anywhere, so it only reads CPU features and takes
// the addresses of the constant-initialised tables in avx2.cpp / neon*.cpp.
// Rules: docs/KERNELS.md "Dispatch".
#include "kernels/simd_common.h"
#include "kernels/simd_tables.h"

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace cact::kernels {

#if defined(__x86_64__) && defined(CACT_HAVE_AVX2)
extern const KernelTable kAvx2Kernels;
#endif
#if defined(__x86_64__) && defined(CACT_HAVE_AVX512VNNI)
extern const KernelTable kAvx512VnniKernels;
#endif
#if defined(__x86_64__) && defined(CACT_HAVE_AVXVNNI)
extern const KernelTable kAvxVnniKernels;
#endif

#if defined(__aarch64__) && defined(CACT_HAVE_NEON)
extern const KernelTable kNeonKernels;
#endif
#if defined(__aarch64__) && defined(CACT_HAVE_NEON_DOTPROD)
extern const KernelTable kNeonDotprodKernels;
#endif

const int8_t* activation_q(const QuantizedActivations& a) { return a.q.data(); }
int8_t* activation_q(QuantizedActivations& a) { return a.q.data(); }
const float* activation_scale(const QuantizedActivations& a) { return a.scale.data(); }
float* activation_scale(QuantizedActivations& a) { return a.scale.data(); }

std::vector<const KernelTable*> simd_kernels() {
  std::vector<const KernelTable*> tables;
#if defined(__x86_64__) && defined(CACT_HAVE_AVX2)
  __builtin_cpu_init();  // checks OSXSAVE/XCR0 too: AVX state must be enabled by the OS
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  if (avx2) tables.push_back(&kAvx2Kernels);
#if defined(CACT_HAVE_AVXVNNI)
  if (avx2 && __builtin_cpu_supports("avxvnni")) tables.push_back(&kAvxVnniKernels);
#endif
#if defined(CACT_HAVE_AVX512VNNI)
  // Preferred over avx-vnni when both exist: 512-bit tiles. AVX-512 features
  // are reported only when the OS saves ZMM/opmask state.
  if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni")) {
    tables.push_back(&kAvx512VnniKernels);
  }
#endif
#endif
#if defined(__aarch64__) && defined(__linux__)
  const unsigned long hwcap = getauxval(AT_HWCAP);
#if defined(CACT_HAVE_NEON)
  if ((hwcap & HWCAP_ASIMD) != 0) tables.push_back(&kNeonKernels);
#endif
#if defined(CACT_HAVE_NEON_DOTPROD)
  if ((hwcap & HWCAP_ASIMD) != 0 && (hwcap & HWCAP_ASIMDDP) != 0) tables.push_back(&kNeonDotprodKernels);
#endif
  (void)hwcap;
#endif
  return tables;
}

}  // namespace cact::kernels
