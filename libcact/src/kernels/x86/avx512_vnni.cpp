// The AVX-512 VNNI table ("avx512-vnni"): AVX512-F + BW + VL + VNNI (Cascade
// Lake, Ice Lake, Sapphire Rapids, Zen 4 and later; every CPU with
// AVX512-VNNI has the other three). CQ tiles on zmm registers (two rows per
// register, 16 outputs per tile); the activation quantiser and dequantize_row
// on zmm registers too. The avx512-vbmi table here is the same with vpermb
// lookups in the 1-vector CQ2 tiles. Built with -mavx2 -mf16c
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni; chosen by dispatch.cpp
// only after the CPU check. Implementation: the headers of this folder. Compiles to
// nothing elsewhere. One file for both tables: they differ in one tile
// only (a run-time flag of cq_matmul), and a file of its own would compile
// the shared 512-bit code a second time.
//
// GCC 12's AVX-512 intrinsic headers initialise their "undefined" vectors
// from themselves, which -W(maybe-)uninitialized reports at every use (GCC
// bug 105593, fixed in GCC 13); the pragmas must precede <immintrin.h>.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include "kernels/x86/matmul.h"
#include "kernels/x86/quantise.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__) && defined(__AVX512F__) && defined(__AVX512BW__) && \
    defined(__AVX512VL__) && defined(__AVX512VNNI__)
namespace cact::kernels {

// Constant-initialised (no code runs to build it); declared in dispatch.cpp.
extern const KernelTable kAvx512VnniKernels;
const KernelTable kAvx512VnniKernels{"avx512-vnni", x86::quantize_activations512, x86::cq_matmul<x86::Dot::kAvx512Vnni>,
                                     x86::dequantize_row512};
// avx512-vnni with vpermb lookups in its 1-vector CQ2 tiles (VbmiPairs, inline
// assembly); chosen only on CPUs with AVX512-VBMI.
extern const KernelTable kAvx512VbmiKernels;
const KernelTable kAvx512VbmiKernels{"avx512-vbmi", x86::quantize_activations512, x86::cq_matmul_vbmi,
                                     x86::dequantize_row512};

}  // namespace cact::kernels
#endif
