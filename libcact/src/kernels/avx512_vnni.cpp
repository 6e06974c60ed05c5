// The AVX-512 VNNI table ("avx512-vnni"): the AVX2 kernels with the 256-bit
// EVEX VPDPBUSD of AVX512-VNNI + AVX512-VL (Ice Lake, Zen 4 and later, which
// may lack the VEX AVX-VNNI). Built with -mavx2 -mf16c -mavx512vnni
// -mavx512vl; chosen by simd_select.cpp only after the CPU check.
// Implementation: avx2_impl.h. Compiles to nothing elsewhere.
#include "kernels/avx2_impl.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__) && defined(__AVX512VNNI__) && \
    defined(__AVX512VL__)
namespace cact::kernels {

// Constant-initialised (no code runs to build it); declared in simd_select.cpp.
extern const KernelTable kAvx512VnniKernels;
const KernelTable kAvx512VnniKernels{"avx512-vnni", x86::quantize_activations,
                                     x86::cq_matmul<x86::Dot::kAvx512Vnni>,
                                     x86::int8_dots<x86::Dot::kAvx512Vnni>};

}  // namespace cact::kernels
#endif
