#include "base/cpu_features.h"

#include <cstdlib>
#include <string>

#include "base/quote.h"
#include "cact/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace cact {
namespace {

#if defined(__x86_64__)
// Bit `bit` of register `reg` (0 eax, 1 ebx, 2 ecx, 3 edx) of CPUID leaf
// `leaf`, subleaf `subleaf`; false when the CPU does not report that leaf.
bool cpuid_bit(unsigned leaf, unsigned subleaf, int reg, unsigned bit) {
  unsigned r[4] = {0, 0, 0, 0};
  if (static_cast<unsigned>(__get_cpuid_max(0, nullptr)) < leaf) return false;  // int in clang's <cpuid.h>
  __cpuid_count(leaf, 0, r[0], r[1], r[2], r[3]);
  if (subleaf > 0 && r[0] < subleaf) return false;  // leaf 7: EAX = highest subleaf
  __cpuid_count(leaf, subleaf, r[0], r[1], r[2], r[3]);
  return ((r[reg] >> bit) & 1u) != 0;
}

// __builtin_cpu_supports checks the OS's register state (XCR0) with the
// feature bit; CPUID is read directly for the names clang 14 rejects (f16c,
// avxvnni) and for VBMI and AMX, which it does not know.
CpuFeatures read_x86() {
  CpuFeatures f;
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.f16c = cpuid_bit(1, 0, 2, 29);               // a VEX encoding: the avx2 state check covers it
  f.avx_vnni = f.avx2 && cpuid_bit(7, 1, 0, 4);  // likewise
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512vbmi = f.avx512f && cpuid_bit(7, 0, 2, 1);
  // AMX-TILE, AMX-INT8 (CPUID 7.0 EDX bits 24, 25) and the OS managing the
  // tile state (XCR0 bits 17, 18, readable once OSXSAVE is set). An emulator
  // such as valgrind reports no AMX.
  if (cpuid_bit(7, 0, 3, 24) && cpuid_bit(7, 0, 3, 25) && cpuid_bit(1, 0, 2, 27)) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0u));
    f.amx_int8 = ((lo >> 17) & 3u) == 3u;
  }
  return f;
}
#endif

CpuFeatures read_host() {
#if defined(__x86_64__)
  return read_x86();
#elif defined(__aarch64__) && defined(__linux__)
  CpuFeatures f;
  const unsigned long hwcap = getauxval(AT_HWCAP);
  f.neon = (hwcap & HWCAP_ASIMD) != 0;
  f.dotprod = f.neon && (hwcap & HWCAP_ASIMDDP) != 0;
  return f;
#else
  return {};
#endif
}

#if defined(__x86_64__)
constexpr std::string_view kLevels[] = {"scalar", "avx2", "avx-vnni", "avx512-vnni", "avx512-vbmi", "avx512-amx"};
#elif defined(__aarch64__)
constexpr std::string_view kLevels[] = {"scalar", "neon", "neon-dotprod"};
#else
constexpr std::string_view kLevels[] = {"scalar"};
#endif

// Each feature belongs to the lowest level whose kernel table needs it.
CpuFeatures cap_at(CpuFeatures f, size_t level) {
  if (level < 1) f.avx2 = f.fma = f.f16c = f.neon = false;
  if (level < 2) f.avx_vnni = f.dotprod = false;
  if (level < 3) f.avx512f = f.avx512bw = f.avx512vl = f.avx512vnni = false;
  if (level < 4) f.avx512vbmi = false;
  if (level < 5) f.amx_int8 = false;
  return f;
}

CpuFeatures capped_by_environment() {
  const char* isa = std::getenv("CACT_ISA");
  if (isa == nullptr || *isa == '\0') return host_cpu_features();
  return capped_features(host_cpu_features(), isa);
}

}  // namespace

const CpuFeatures& host_cpu_features() {
  static const CpuFeatures f = read_host();
  return f;
}

std::span<const std::string_view> isa_levels() { return kLevels; }

CpuFeatures capped_features(CpuFeatures features, std::string_view name) {
  for (size_t i = 0; i < std::size(kLevels); ++i) {
    if (kLevels[i] == name) return cap_at(features, i);
  }
  std::string valid;
  for (std::string_view l : kLevels) valid.append(valid.empty() ? "" : ", ").append(l);
  fail("CACT_ISA=" + quote_bytes(name) + " names no instruction set level of this build; valid: " + valid);
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = capped_by_environment();
  return f;
}

}  // namespace cact
