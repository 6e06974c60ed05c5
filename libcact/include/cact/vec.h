#pragma once
// Toolkit tier (docs/API.md): the multi-width float building blocks the
// engine's per-token loops are written with. Every element
// gets the same sequence of IEEE operations whatever the vector width:
// vectorised across independent outputs, never across a sum, no implicit FMA
// contraction (the engine is built with -ffp-contract=off), no reassociation.
// A multiply-add is fused only where the code says so (fused_madd below), and
// then in every width alike. So the scalar, SSE, AVX2, AVX-512 and NEON builds
// give the same bits.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cact/half.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#endif

// x86-64: a few hot routines are compiled once per vector width (explicit
// target attributes, chosen at run time by vec_isa()); elsewhere one build.
#if defined(__x86_64__) && defined(__GNUC__)
#define CACT_VEC_X86 1
// FMA3 and F16C come with every AVX2 and AVX-512 CPU but are flags of their own
// (vec_isa() checks them).
#define CACT_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define CACT_TARGET_AVX512 __attribute__((target("avx512f,fma,f16c")))
#else
#define CACT_VEC_X86 0
#endif

// Auto-vectorised loops get an AVX-512 and an AVX2 build besides the baseline
// on x86-64 GCC (in_widest below); clang and the sanitizer builds, which check
// the logic rather than the widths, keep the baseline only.
#if CACT_VEC_X86 && !defined(__clang__) && !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define CACT_VEC_LOOP_WIDTHS 1
#else
#define CACT_VEC_LOOP_WIDTHS 0
#endif

namespace cact::vec {

// Vector widths of the explicitly dispatched routines: 16-byte vectors
// (baseline x86-64, NEON), 32 (AVX2), 64 (AVX-512F).
enum class VecIsa : uint8_t { base = 16, avx2 = 32, avx512 = 64 };
// The widest this CPU runs under CACT_ISA (base off x86-64): chosen in
// kernels/dispatch.cpp with the kernel tables.
VecIsa vec_isa();
const char* vec_isa_name(VecIsa isa);

// GCC vector extension: L lanes of T.
template <typename T, uint32_t L>
struct VecOf {
  typedef T type __attribute__((vector_size(L * sizeof(T))));
};

#define CACT_VEC_INLINE [[gnu::always_inline]] inline

// Vectors wider than the baseline pass only between always-inline helpers
// inside one width-specific build, never across an ABI boundary: GCC's note
// that such a return "changes the ABI" does not apply (it stays off for the
// files that include this header).
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wunknown-warning-option"
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

// L lanes of T read from and written to float arrays (L = 1: a plain T), so
// that one loop body serves the vector part and the scalar tail. Accesses go
// through an unaligned float vector type (it aliases float only, unlike memcpy).
template <typename T, uint32_t L>
struct Lanes {
  using V = typename VecOf<T, L>::type;
  typedef float F __attribute__((vector_size(L * sizeof(float)), aligned(alignof(float))));
  CACT_VEC_INLINE static V load(const float* p) { return __builtin_convertvector(*reinterpret_cast<const F*>(p), V); }
  CACT_VEC_INLINE static void store(float* p, const V& v) { *reinterpret_cast<F*>(p) = __builtin_convertvector(v, F); }
  CACT_VEC_INLINE static V splat(T x) { return V{} + x; }
};
template <typename T>
struct Lanes<T, 1> {
  using V = T;
  CACT_VEC_INLINE static V load(const float* p) { return T(*p); }
  CACT_VEC_INLINE static void store(float* p, const V& v) { *p = float(v); }
  CACT_VEC_INLINE static V splat(T x) { return x; }
};

// L FP16 values at p as L lanes of T, exactly converted (fcvtl on aarch64,
// half_to_float elsewhere). The wide x86 float builds read their FP16 weights
// with F16C in cact/float_kernels.h's tables instead (an F16C intrinsic cannot
// be inlined into a body without that target).
template <typename T, uint32_t L>
CACT_VEC_INLINE typename Lanes<T, L>::V load_halves(const uint16_t* p) {
  if constexpr (L == 1) {
    return T(half_to_float(*p));
  } else {
    float f[L];
#if defined(__aarch64__)
    for (uint32_t i = 0; i < L; i += 4) vst1q_f32(f + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p + i))));
#else
    for (uint32_t i = 0; i < L; ++i) f[i] = half_to_float(p[i]);
#endif
    return Lanes<T, L>::load(f);
  }
}

// acc + a·x with one rounding, lane by lane, the same bits in every width:
// the FMA instructions of the AVX2 and AVX-512 builds and of NEON, and fmaf
// (correctly rounded; a library call) in the x86-64 baseline, which has no FMA
// instruction (so that build is slow where it fuses: it is only the fallback
// for pre-2013 CPUs and the tests' width comparison). Double lanes (the
// reference numerics: products of floats, exact in double) keep a separate
// multiply and add.
template <typename V>
CACT_VEC_INLINE V fused_madd(const V& a, const V& x, const V& acc) {
  if constexpr (std::is_same_v<V, float>) {
    return __builtin_fmaf(a, x, acc);
  } else if constexpr (std::is_same_v<V, double>) {  // (a[0] below is ill-formed for a scalar)
    return acc + a * x;
  } else if constexpr (std::is_same_v<decltype(a[0] + 0.0f), double>) {
    return acc + a * x;
  } else {
    // Lane by lane: GCC turns this into the vector FMA of the build's target.
    V r;
    for (size_t i = 0; i < sizeof(V) / sizeof(float); ++i) r[i] = __builtin_fmaf(a[i], x[i], acc[i]);
    return r;
  }
}

// a in every lane of the vector type V, or a itself if V is its scalar type,
// for fused_madd's operands (a − 0 is a for every a, -0 included, so the
// subtraction folds away, unlike Lanes::splat's 0 + a, which turns -0 into +0).
template <typename V, typename T>
CACT_VEC_INLINE V broadcast(T a) {
  if constexpr (std::is_same_v<V, T>) {
    return a;
  } else {
    return a - V{};
  }
}

// An auto-vectorised loop built for each width and run in the widest
// vec_isa() allows: in_widest<Loop>(args...) calls the always-inline static
// `Loop::run(args...)` compiled for AVX-512F, AVX2 or the baseline. (GCC's
// target_clones would choose by CPU alone, past CACT_ISA.) The loops' per-element
// operations do not depend on the width, so neither do their bits.
#if CACT_VEC_LOOP_WIDTHS
template <typename Loop, typename... A>
[[gnu::noinline]] CACT_TARGET_AVX512 auto run_avx512(A... a) {
  return Loop::run(a...);
}
template <typename Loop, typename... A>
[[gnu::noinline]] CACT_TARGET_AVX2 auto run_avx2(A... a) {
  return Loop::run(a...);
}
template <typename Loop, typename... A>
[[gnu::noinline]] auto run_base(A... a) {
  return Loop::run(a...);
}
template <typename Loop, typename... A>
CACT_VEC_INLINE auto in_widest(A... a) {
  switch (vec_isa()) {
    case VecIsa::avx512:
      return run_avx512<Loop>(a...);
    case VecIsa::avx2:
      return run_avx2<Loop>(a...);
    case VecIsa::base:
      break;
  }
  return run_base<Loop>(a...);
}
#else
template <typename Loop, typename... A>
CACT_VEC_INLINE auto in_widest(A... a) {
  return Loop::run(a...);
}
#endif

// Width-specific builds of `template <typename Acc, uint32_t Bytes> void
// name##_body(const Args&)` (always-inline): defines
//   name##_at<Acc, Bytes>(a)  the out-of-line build for that width (a callee of
//                            another width-specific body, kept out of line so
//                            that a large body is not copied into each caller);
//   name<Acc>(isa, a)        the build for min(isa, vec_isa()).
// Widths: 16-byte vectors, or on x86-64 AVX2 / AVX-512F, where the target
// attribute maps the vectors onto registers.
#if CACT_VEC_X86
#define CACT_VEC_DISPATCH(name, Args)                                      \
  template <typename Acc>                                                  \
  [[gnu::noinline]] void name##_base(const Args& a) {                      \
    name##_body<Acc, 16>(a);                                               \
  }                                                                        \
  template <typename Acc>                                                  \
  [[gnu::noinline]] CACT_TARGET_AVX2 void name##_avx2(const Args& a) {     \
    name##_body<Acc, 32>(a);                                               \
  }                                                                        \
  template <typename Acc>                                                  \
  [[gnu::noinline]] CACT_TARGET_AVX512 void name##_avx512(const Args& a) { \
    name##_body<Acc, 64>(a);                                               \
  }                                                                        \
  template <typename Acc, uint32_t Bytes>                                  \
  CACT_VEC_INLINE void name##_at(const Args& a) {                          \
    if constexpr (Bytes == 64) {                                           \
      name##_avx512<Acc>(a);                                               \
    } else if constexpr (Bytes == 32) {                                    \
      name##_avx2<Acc>(a);                                                 \
    } else {                                                               \
      name##_base<Acc>(a);                                                 \
    }                                                                      \
  }                                                                        \
  template <typename Acc>                                                  \
  void name(::cact::vec::VecIsa isa, const Args& a) {                      \
    const ::cact::vec::VecIsa cpu = ::cact::vec::vec_isa();                \
    if (isa > cpu) isa = cpu;                                              \
    if (isa == ::cact::vec::VecIsa::avx512) return name##_avx512<Acc>(a);  \
    if (isa == ::cact::vec::VecIsa::avx2) return name##_avx2<Acc>(a);      \
    name##_base<Acc>(a);                                                   \
  }
#else
#define CACT_VEC_DISPATCH(name, Args)                 \
  template <typename Acc>                             \
  [[gnu::noinline]] void name##_base(const Args& a) { \
    name##_body<Acc, 16>(a);                          \
  }                                                   \
  template <typename Acc, uint32_t>                   \
  CACT_VEC_INLINE void name##_at(const Args& a) {     \
    name##_base<Acc>(a);                              \
  }                                                   \
  template <typename Acc>                             \
  void name(::cact::vec::VecIsa, const Args& a) {     \
    name##_base<Acc>(a);                              \
  }
#endif

}  // namespace cact::vec
