#pragma once
// What every AArch64 kernel header shares: the group size. The headers of
// this folder are compiled into neon.cpp (baseline ARMv8-A: int8 products
// through vmull_s8 + pairwise accumulate) and neon_dotprod.cpp
// (-march=armv8.2-a+dotprod: vdotq_s32). Everything has internal linkage
// (anonymous namespace), so the two translation units, built with different
// flags, never share a symbol; same rules as kernels/x86/common.h.
// Design and exactness: docs/KERNELS.md.
#if defined(__aarch64__) && defined(__ARM_NEON)

#include <arm_neon.h>

#include <cstring>

#include "cact/codec.h"
#include "cact/kernels.h"
#include "kernels/scalar.h"
#include "kernels/simd_common.h"

namespace cact::kernels {
namespace {
namespace neon {

constexpr uint32_t kG = kSimdGroup;  // 128 lanes per group: 8 blocks of 16

}  // namespace neon
}  // namespace
}  // namespace cact::kernels

#endif  // aarch64 NEON
