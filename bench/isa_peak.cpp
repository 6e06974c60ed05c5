#include "isa_peak.h"

#include <map>

#include "thread_seconds.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace cact::bench {

namespace {

// Best of 5 runs of `loop(iterations)`, in iterations per second.
template <typename Loop>
double best_rate(Loop loop, long iterations) {
  double best = 0.0;
  for (int r = 0; r < 5; ++r) {
    const double t0 = thread_seconds();
    loop(iterations);
    const double s = thread_seconds() - t0;
    if (s > 0.0 && double(iterations) / s > best) best = double(iterations) / s;
  }
  return best;
}

volatile int g_sink = 0;

#if defined(__x86_64__)
constexpr int kAccumulators = 12;  // more than latency × throughput of any loop below

// Operands hidden from the optimiser, so that nothing is folded or hoisted.
template <typename V>
inline void opaque(V& v) {
  asm volatile("" : "+v"(v));
}

// One 256-bit step per accumulator: the AVX2 table's multiply-add pair, or VNNI's dot.
struct MaddubsStep {
  [[gnu::target("avx2"), gnu::always_inline]] static __m256i step(__m256i acc, __m256i a, __m256i b) {
    opaque(a);  // (else the product, which does not read acc, would be computed once for every accumulator)
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1)));
  }
};
struct DpbusdStep {
  [[gnu::target("avx2,avxvnni"), gnu::always_inline]] static __m256i step(__m256i acc, __m256i a, __m256i b) {
    return _mm256_dpbusd_avx_epi32(acc, a, b);
  }
};
// (Built with AVX-VNNI allowed for both steps; the AVX2 step issues none.)
template <typename Step>
[[gnu::target("avx2,avxvnni")]] void ymm_loop(long n) {
  __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(5);
  __m256i acc[kAccumulators];
  for (int k = 0; k < kAccumulators; ++k) {
    acc[k] = _mm256_set1_epi32(k);
    opaque(acc[k]);  // (equal, visible start values let the compiler merge the chains into one)
  }
  for (long i = 0; i < n; ++i) {
    opaque(a);
    for (int k = 0; k < kAccumulators; ++k) acc[k] = Step::step(acc[k], a, b);
  }
  for (int k = 1; k < kAccumulators; ++k) acc[0] = _mm256_add_epi32(acc[0], acc[k]);
  g_sink = g_sink + _mm256_extract_epi32(acc[0], 0);
}

[[gnu::target("avx512f,avx512vnni")]] void avx512_vnni_loop(long n) {
  __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(5);
  __m512i acc[kAccumulators];
  for (int k = 0; k < kAccumulators; ++k) {
    acc[k] = _mm512_set1_epi32(k);
    opaque(acc[k]);  // (as in ymm_loop)
  }
  for (long i = 0; i < n; ++i) {
    opaque(a);
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_dpbusd_epi32(acc[k], a, b);
  }
  for (int k = 1; k < kAccumulators; ++k) acc[0] = _mm512_add_epi32(acc[0], acc[k]);
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, acc[0]);
  g_sink = g_sink + lanes[0];
}

// AMX: four 16×16 int32 accumulator tiles, each TDPBSSD (the product's
// instruction) a 16×64 by 64×16 int8 product (16 384 MACs), operand tiles loaded once.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
bool amx_granted() {
  constexpr long kReqPerm = 0x1023, kXtileData = 18;  // ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA
  return syscall(SYS_arch_prctl, kReqPerm, kXtileData) == 0;
}
[[gnu::target("amx-tile,amx-int8")]] void amx_loop(long n) {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  _tile_loadconfig(&cfg);
  alignas(64) static int8_t operand[16 * 64] = {3};
  alignas(64) static int32_t out[16 * 16];
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  for (long i = 0; i < n; ++i) {
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    _tile_dpbssd(2, 5, 6);
    _tile_dpbssd(3, 5, 7);
  }
  _tile_stored(0, out, 64);
  _tile_release();
  g_sink = g_sink + out[0];
}
#endif

}  // namespace

double cycles_per_second() {
#if defined(__x86_64__) || defined(__aarch64__)
  const auto chain = [](long n) {
    long x = 3;
    for (long i = 0; i < n; ++i) {
#if defined(__x86_64__)
      asm volatile(
          "imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0\n\t"
          "imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0"
          : "+r"(x));
#else
      asm volatile(
          "add %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1\n\t"
          "add %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1"
          : "+r"(x));
#endif
    }
    g_sink = g_sink + int(x);
  };
#if defined(__x86_64__)
  constexpr double kCyclesPerLink = 3.0;  // imul r64
#else
  constexpr double kCyclesPerLink = 1.0;  // add
#endif
  return kCyclesPerLink * 8.0 * best_rate(chain, 20'000'000);
#else
  return 0.0;
#endif
}

IsaPeak isa_peak(const std::string& table) {
#if defined(__x86_64__)
  // Each instruction's loop runs once per process: several tables share one
  // (avx512-vnni, avx512-vbmi and avx512-amx's one-vector products).
  static std::map<std::string, double> measured;
  const auto peak = [](const char* instruction, double macs_per_iteration, void (*loop)(long), long iterations) {
    auto [it, fresh] = measured.try_emplace(instruction, 0.0);
    if (fresh) it->second = macs_per_iteration * best_rate(loop, iterations);
    return IsaPeak{it->second, instruction};
  };
  constexpr long kN = 10'000'000;
  if (table == "avx2") return peak("vpmaddubsw+vpmaddwd ymm", 32.0 * kAccumulators, ymm_loop<MaddubsStep>, kN);
  if (table == "avx-vnni") return peak("vpdpbusd ymm", 32.0 * kAccumulators, ymm_loop<DpbusdStep>, kN);
  if (table == "avx512-vnni" || table == "avx512-vbmi") {
    return peak("vpdpbusd zmm", 64.0 * kAccumulators, avx512_vnni_loop, kN);
  }
  if (table == "avx512-amx" && amx_granted()) return peak("tdpbssd", 4 * 16384.0, amx_loop, kN / 10);
#else
  (void)table;
#endif
  return {};
}

}  // namespace cact::bench
