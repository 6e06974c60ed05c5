// The 512-bit AVX-512 table ("avx512"): AVX512-F + BW + VL + VNNI (Ice Lake,
// Cascade Lake, Sapphire Rapids, Zen 4 and later). CQ tiles on zmm registers
// (two rows per register, 16 outputs per tile); the activation quantiser and
// int8_dots are the 256-bit EVEX ones. Built with -mavx2 -mf16c -mavx512f
// -mavx512bw -mavx512vl -mavx512vnni; chosen by simd_select.cpp only after
// the CPU check. Implementation: avx2_impl.h. Compiles to nothing elsewhere.
// GCC 12's AVX-512 intrinsic headers initialise their "undefined" vectors
// from themselves, which -Wmaybe-uninitialized reports at every use (GCC bug
// 105593, fixed in GCC 13); the pragma must precede <immintrin.h>.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include "kernels/avx2_impl.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__) && defined(__AVX512F__) && \
    defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
namespace cact::kernels {

// Constant-initialised (no code runs to build it); declared in simd_select.cpp.
extern const KernelTable kAvx512Kernels;
const KernelTable kAvx512Kernels{"avx512", x86::quantize_activations, x86::cq_matmul<x86::Dot::kAvx512Zmm>,
                                 x86::int8_dots<x86::Dot::kAvx512Vnni>};

}  // namespace cact::kernels
#endif
