// The float MLP's FP16 stages for the engine's AVX2 width (cact/float_kernels.h).
// Built with -mavx2 -mfma -mf16c; chosen by dispatch.cpp only when vec_isa()
// allows that width. Implementation: float_mlp.h. Compiles to nothing elsewhere.
#include "kernels/x86/float_mlp.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
namespace cact::kernels {

// Constant-initialised (no code runs to build it); declared in dispatch.cpp.
extern const FloatMlpKernels kFloatMlpAvx2;
const FloatMlpKernels kFloatMlpAvx2{x86_float::cond_logits, x86_float::cond_values<x86_float::Ymm>,
                                    x86_float::permute<x86_float::Ymm>};

}  // namespace cact::kernels
#endif
