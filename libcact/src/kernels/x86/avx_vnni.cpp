// The AVX-VNNI table ("avx-vnni"): AVX2 + F16C + AVX-VNNI (VEX VPDPBUSD;
// Alder Lake, Sapphire Rapids and later). Built with -mavx2 -mf16c -mavxvnni;
// chosen by dispatch.cpp only after the CPU check. Implementation: the
// headers of this folder. Compiles to nothing elsewhere.
#include "kernels/x86/matmul.h"
#include "kernels/x86/quantise.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__) && defined(__AVXVNNI__)
namespace cact::kernels {

// Constant-initialised (no code runs to build it); declared in dispatch.cpp.
extern const KernelTable kAvxVnniKernels;
const KernelTable kAvxVnniKernels{"avx-vnni", x86::quantize_activations, x86::cq_matmul<x86::Dot::kAvxVnni>,
                                  x86::dequantize_row};

}  // namespace cact::kernels
#endif
