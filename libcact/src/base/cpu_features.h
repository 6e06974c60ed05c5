#pragma once
// CPU features read straight from CPUID, for the features whose
// __builtin_cpu_supports name clang 14 rejects (f16c, avxvnni): one query
// for the kernel dispatch (simd_select.cpp) and the engine's float builds
// (engine/vec.cpp). x86-64 only.
#if defined(__x86_64__)
namespace cact::kernels {

// Bit `bit` of register `reg` (0 eax, 1 ebx, 2 ecx, 3 edx) of CPUID leaf
// `leaf`, subleaf `subleaf`; false when the CPU does not report that leaf.
bool cpuid_bit(unsigned leaf, unsigned subleaf, int reg, unsigned bit);

// F16C (CPUID leaf 1, ECX bit 29). A VEX encoding on ymm registers, so the
// OS state check of __builtin_cpu_supports("avx2") covers it.
bool cpu_has_f16c();

}  // namespace cact::kernels
#endif
