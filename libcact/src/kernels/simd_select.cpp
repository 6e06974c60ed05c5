// Which SIMD tables this CPU can run, best last. Compiled with the baseline
// flags only: it must run anywhere, so it only reads CPU features and takes
// the addresses of the constant-initialised tables in avx2.cpp / neon*.cpp.
// Rules: docs/KERNELS.md "Dispatch".
#include "base/cpu_features.h"
#include "kernels/simd_common.h"
#include "kernels/simd_tables.h"

#if defined(__x86_64__) && defined(CACT_HAVE_AMX)
#include <cstdlib>
#include <cstring>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif
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

const int8_t* activation_q(const QuantizedActivations& a) { return a.q.data(); }
int8_t* activation_q(QuantizedActivations& a) { return a.q.data(); }
const float* activation_scale(const QuantizedActivations& a) { return a.scale.data(); }
float* activation_scale(QuantizedActivations& a) { return a.scale.data(); }

#if defined(__x86_64__) && defined(CACT_HAVE_AMX)
namespace {
// AMX-INT8 for the avx512-amx table: AMX-TILE and AMX-INT8 (CPUID 7.0 EDX bits
// 24, 25) and AVX512-VBMI (ECX bit 1), the OS managing the tile state (XCR0
// bits 17, 18 after OSXSAVE), and the tile data granted to this process by
// Linux (ARCH_REQ_XCOMP_PERM, once; the grant covers every thread). Any
// failure (an emulator such as valgrind reports no AMX) keeps the table out.
// CACT_AMX=0 in the environment does too, without asking.
bool amx_usable() {
  static const bool usable = [] {
    const char* env = std::getenv("CACT_AMX");
    if (env != nullptr && std::strcmp(env, "0") == 0) return false;
    if (!cpuid_bit(7, 0, 3, 24) || !cpuid_bit(7, 0, 3, 25) || !cpuid_bit(7, 0, 2, 1)) return false;
    if (!cpuid_bit(1, 0, 2, 27)) return false;  // OSXSAVE: xgetbv is available
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0u));
    if (((lo >> 17) & 3u) != 3u) return false;  // XTILECFG, XTILEDATA
#if defined(__linux__)
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
  }();
  return usable;
}
}  // namespace
#endif

std::vector<const KernelTable*> simd_kernels() {
  std::vector<const KernelTable*> tables;
#if defined(__x86_64__) && defined(CACT_HAVE_AVX2)
  __builtin_cpu_init();  // checks OSXSAVE/XCR0 too: AVX state must be enabled by the OS
  const bool avx2 = __builtin_cpu_supports("avx2") && cpu_has_f16c();
  if (avx2) tables.push_back(&kAvx2Kernels);
#if defined(CACT_HAVE_AVXVNNI)
  // AVX-VNNI: CPUID 7.1 EAX bit 4 (clang 14 rejects __builtin_cpu_supports("avxvnni")); a VEX
  // encoding on ymm registers, so the avx2 OS state check covers it.
  if (avx2 && cpuid_bit(7, 1, 0, 4)) tables.push_back(&kAvxVnniKernels);
#endif
#if defined(CACT_HAVE_AVX512VNNI)
  // Preferred over avx-vnni when both exist: 512-bit tiles. AVX-512 features
  // are reported only when the OS saves ZMM/opmask state.
  if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni")) {
    tables.push_back(&kAvx512VnniKernels);
    if (cpuid_bit(7, 0, 2, 1)) tables.push_back(&kAvx512VbmiKernels);  // AVX512-VBMI (CPUID 7.0 ECX bit 1)
#if defined(CACT_HAVE_AMX)
    if (amx_usable()) tables.push_back(&kAvx512AmxKernels);  // prefill on AMX tiles, else avx512-vbmi
#endif
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
