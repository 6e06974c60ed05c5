// The AVX2 table ("avx2"): x86-64 with AVX2 + F16C (Haswell, Zen 1 and
// later). Built with -mavx2 -mf16c; chosen by dispatch.cpp only after the
// CPU check. Implementation: the headers of this folder. Compiles to nothing
// elsewhere.
#define CACT_X86_SHARED_DEFINITIONS  // the one home of x86_shared::masks_for
#include "kernels/x86/matmul.h"
#include "kernels/x86/quantise.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__)
namespace cact::kernels {

// Constant-initialised (no code runs to build it); declared in dispatch.cpp.
extern const KernelTable kAvx2Kernels;
const KernelTable kAvx2Kernels{"avx2", x86::quantize_activations, x86::cq_matmul<x86::Dot::kAvx2>, x86::dequantize_row};

}  // namespace cact::kernels
#endif
