#pragma once
// What every x86-64 kernel header shares: the group size and the choice of
// the group dot. The headers of this folder are compiled into each x86 table
// file (avx2.cpp, avx_vnni.cpp, avx512_vnni.cpp, avx512_amx.cpp) with that
// file's ISA flags (libcact/kernels.cmake); each table is reached only through
// dispatch.cpp after a CPU check, so nothing here may run on a CPU without
// those features.
//
// Rules (these translation units are built with ISA flags the baseline
// lacks): everything has internal linkage (anonymous namespace), and no
// std:: template another translation unit could also instantiate is used
// (no std::vector, std::max, ...): the linker keeps one copy of such a weak
// symbol, and an AVX2-compiled copy could then be called from the scalar
// path. The only external definition of each table file is its
// constant-initialised table (and, in avx2.cpp, x86_shared::masks_for:
// unpack.h). The weak_symbols test audits the objects at -O0.
//
// Design and exactness: docs/KERNELS.md.
#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__)

#include <immintrin.h>

#include <cstring>

#include "cact/codec.h"
#include "cact/kernels.h"
#include "kernels/scalar.h"
#include "kernels/simd_common.h"

namespace cact::kernels {
namespace {
namespace x86 {

// Which instruction computes the group dot.
// kAvx512Vnni: cq_matmul runs the 512-bit tiles of tiles.h.
enum class Dot { kAvx2, kAvxVnni, kAvx512Vnni };

constexpr uint32_t kG = codec::kGroup;  // 128 lanes per group, 4 blocks of 32

}  // namespace x86
}  // namespace
}  // namespace cact::kernels

#endif  // x86-64 with AVX2 + F16C
