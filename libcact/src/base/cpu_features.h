#pragma once
// What the CPU offers the SIMD code, read once for the whole library: the
// kernel dispatch (kernels/dispatch.cpp) and the engine's vector widths
// (engine/vec.cpp) both decide from cpu_features(), so CACT_ISA caps them alike.
#include <span>
#include <string_view>

namespace cact {

struct CpuFeatures {
  // x86-64. Each flag includes the OS state check its registers need (YMM for
  // the VEX features, ZMM and opmask for AVX-512, tile data for AMX).
  bool avx2 = false, fma = false, f16c = false, avx_vnni = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512vnni = false, avx512vbmi = false;
  bool amx_int8 = false;  // AMX-TILE + AMX-INT8, tile state enabled (Linux must still grant it: dispatch.cpp)
  // aarch64.
  bool neon = false, dotprod = false;
};

// The features of this CPU and OS, uncapped (CPUID and XGETBV, getauxval).
const CpuFeatures& host_cpu_features();

// The names CACT_ISA accepts on this architecture, lowest first: "scalar",
// then one per kernel table ("avx2", "avx-vnni", "avx512-vnni", "avx512-vbmi",
// "avx512-amx" on x86-64; "neon", "neon-dotprod" on aarch64).
std::span<const std::string_view> isa_levels();

// `features` without what lies above the level `name` (isa_levels()); an
// unknown name throws cact::Error listing the valid ones.
CpuFeatures capped_features(CpuFeatures features, std::string_view name);

// What the kernels and the engine may use: host_cpu_features() capped by the
// CACT_ISA environment variable when it is set, decided once. Throws
// cact::Error (on every call) when CACT_ISA names no level.
const CpuFeatures& cpu_features();

}  // namespace cact
