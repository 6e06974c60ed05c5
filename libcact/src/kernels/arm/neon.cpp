// The baseline AArch64 NEON table ("neon"): every ARMv8-A CPU, including the
// Cortex-A53/A72 class of routers that lack the dot-product extension.
// Implementation: the headers of this folder. Compiles to nothing on other architectures.
#include "kernels/arm/matmul.h"
#include "kernels/arm/quantise.h"

#if defined(__aarch64__) && defined(__ARM_NEON)
namespace cact::kernels {

// Constant-initialised (no code runs to build it); declared in dispatch.cpp.
extern const KernelTable kNeonKernels;
const KernelTable kNeonKernels{"neon", neon::quantize_activations, neon::cq_matmul<false>, neon::dequantize_row};

}  // namespace cact::kernels
#endif
