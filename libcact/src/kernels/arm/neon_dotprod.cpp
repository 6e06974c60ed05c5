// The AArch64 NEON + dot-product table ("neon-dotprod", SDOT): built with
// -march=armv8.2-a+dotprod (libcact/kernels.cmake) and chosen only when
// getauxval(AT_HWCAP) has HWCAP_ASIMDDP (dispatch.cpp).
// Implementation: the headers of this folder. Compiles to nothing elsewhere.
#include "kernels/arm/matmul.h"
#include "kernels/arm/quantise.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
namespace cact::kernels {

// Constant-initialised (no code runs to build it); declared in dispatch.cpp.
extern const KernelTable kNeonDotprodKernels;
const KernelTable kNeonDotprodKernels{"neon-dotprod", neon::quantize_activations, neon::cq_matmul<true>,
                                      neon::dequantize_row};

}  // namespace cact::kernels
#endif
