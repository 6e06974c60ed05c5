#pragma once
// The integer group dots and the register tiles of the products (rows x
// vectors per tile), 256-bit and (avx512-vnni) 512-bit.
#include "kernels/x86/unpack.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__)

namespace cact::kernels {
namespace {
namespace x86 {

// ----------------------------------------------------------------------------
// The integer dot of one group: 4 blocks of 32 weights against 32 activations
// each. maddubs / dpbusd need one unsigned operand.
//  - AVX2: |a| times the weights with the sign of a: |a| * sign(a)w = a*w
//    exactly; maddubs pair sums are <= 2*128*127 < 2^15 (no saturation, also
//    for a = -128), so the weights must be in [-127, 127].
//  - VNNI: the table holds the weights biased by +128 as u8 (w + 128 in
//    0..255, any int8 w), dotted with the signed activations; the tile
//    subtracts 128 * sum(a) per (vector, group) after the reduction. dpbusd
//    sums 4 products straight into int32: exact (|sum| < 2^31 by far).

// u8 x s8 products, 4 summed into each int32 lane (VPDPBUSD, VEX or EVEX).
template <Dot kDot>
inline __m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
  static_assert(kDot != Dot::kAvx2, "no VPDPBUSD in the AVX2 table");
  if constexpr (kDot == Dot::kAvxVnni) {
#if defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
    static_assert(kDot != Dot::kAvxVnni, "avx_vnni.cpp needs -mavxvnni");
#endif
  } else {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(acc, u, s);
#else
    static_assert(kDot == Dot::kAvxVnni, "avx512_vnni.cpp needs -mavx512vnni -mavx512vl");
#endif
  }
  (void)u;
  (void)s;
  return acc;
}

template <Dot kDot>
inline __m256i dot_group(const __m256i w[4], const uint8_t* abs_a, const int8_t* a) {
  __m256i sum = _mm256_setzero_si256();
  for (int k = 0; k < 4; ++k) {
    const __m256i sa = _mm256_load_si256(reinterpret_cast<const __m256i*>(a + 32 * k));
    if constexpr (kDot == Dot::kAvx2) {
      const __m256i ua = _mm256_load_si256(reinterpret_cast<const __m256i*>(abs_a + 32 * k));
      const __m256i p16 = _mm256_maddubs_epi16(ua, _mm256_sign_epi8(w[k], sa));
      sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
    } else {
      sum = dpbusd<kDot>(sum, w[k], sa);  // biased u8 weights x s8 activations
    }
  }
  return sum;
}

// Lane i of the result = horizontal sum of v[i].
inline __m256i reduce8(const __m256i v[8]) {
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]);
  const __m256i h23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]);
  const __m256i h67 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i h0123 = _mm256_hadd_epi32(h01, h23);
  const __m256i h4567 = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20), _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

struct CqMatmulJob {
  const uint8_t* packed;
  size_t row_bytes;
  uint32_t groups, in_pad;
  const int8_t* act;  // permuted activations, [count][in_pad]
  // Row-lane tiles (avx512-vbmi, CQ2): the activations of each whole block of
  // 8 vectors in column order, 4 columns of the 8 vectors after one another:
  // [block][group][4-column step][vector][4].
  const int8_t* act_blocks;
  uint32_t row_lane_vectors;  // vectors the row-lane tiles take (whole blocks of 8; 0: none)
  int8_t* row_tile;           // 16 rows decoded for the row-lane tiles (kRowTileRows × in_pad bytes, then their norms)
  const uint8_t* act_abs;     // |act| (AVX2 only)
  const int32_t* corr;        // VNNI: 128 * sum of each group's activations, [groups][scale_stride(count)]
  float* norms;  // float norms of rows [row_begin, row_end): [row - row_begin][groups] (one vector: the tile's rows)
  const uint8_t* half;  // decode: the FP16 norms of the matrix, converted per tile (tile_norms)
  bool paired;          // avx512-vnni, one vector, 2-bit indices: activations in cq_tile512_pairs' layout
  bool vbmi;            // with `paired`: the tiles look up bytes with vpermb (avx512-vbmi table)
  uint32_t row_begin;
  uint32_t rows;        // rows of the matrix (prefetches stay inside it)
  const float* scales;  // activation scales, [groups][scale_stride(count)]
  size_t scale_stride;
  __m256i tables[4];  // the unpacker's lookup tables (VNNI: entries biased by +128)
  float cb_scale;
  float* y;
  size_t y_stride;
};

// The row-lane tiles (avx512-vbmi, CQ2, several vectors; cq_tile512_rows).
constexpr uint32_t kRowTileVectors = 8;  // vectors per cq_tile512_rows tile
constexpr uint32_t kRowTileRows = 16;    // rows per tile: one int32 lane each
constexpr uint32_t kMaxTileRows = 16;    // rows of the tallest tile (the 512-bit 1-vector tiles)

inline float load_norm(const uint8_t* half, size_t i) {
  uint16_t h;
  std::memcpy(&h, half + 2 * i, 2);
  return _cvtsh_ss(h);
}

// The float norms of a tile's rows [r0, r0 + R). With several vectors the
// prep converted the whole row range; with one vector (job.half set) each tile
// converts its own rows (contiguous FP16, R * groups halves; into the start of
// job.norms, which holds kMaxTileRows rows) right before it
// uses them, so the loads overlap the previous tile's weight stream instead of
// stalling a separate pass over the row range. The conversion is exact either
// way, so the float math is unchanged.
__attribute__((always_inline)) inline void convert_norms(const uint8_t* half, size_t n, float* dst) {  // 8 at a time
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(half + 2 * i))));
  }
  for (; i < n; ++i) dst[i] = load_norm(half, i);
}

// One vector: starts loading the FP16 norms of the next tile, rows [r0 + R,
// r0 + 2R) (as NextTilePrefetch does for its weights), if it is in the matrix.
template <int R>
__attribute__((always_inline)) inline void prefetch_next_tile_norms(const CqMatmulJob& job, uint32_t r0) {
  if (r0 + 2 * uint32_t(R) > job.rows) return;
  const size_t bytes = 2 * size_t(R) * job.groups;
  const auto* next = reinterpret_cast<const char*>(job.half + 2 * size_t(r0 + uint32_t(R)) * job.groups);
  for (size_t off = 0; off < bytes; off += 64) _mm_prefetch(next + off, _MM_HINT_T0);
}

template <int R>
__attribute__((always_inline)) inline const float* tile_norms(const CqMatmulJob& job, uint32_t r0) {
  static_assert(R <= int(kMaxTileRows));
  if (job.half == nullptr) return job.norms + size_t(r0 - job.row_begin) * job.groups;
  prefetch_next_tile_norms<R>(job, r0);
  convert_norms(job.half + 2 * size_t(r0) * job.groups, size_t(R) * job.groups, job.norms);
  return job.norms;
}

// Software prefetch of the next tile's weights, rows [r0 + R, r0 + 2R): a
// decode step streams its weights from beyond L2, and the hardware prefetcher
// does not follow a tile's access pattern (32-64 bytes of each of R rows per
// group). Those rows are contiguous (R * row_bytes bytes); each group
// prefetches its 1/groups share, R * kBytes bytes. Only inside the matrix.
// In 1-vector tiles and in the first block of a row-lane tile (the next tile's
// decode then finds its rows in cache); the other multi-vector tiles reuse
// their rows from L1 across vector blocks, and the prefetches only cost. One
// tile ahead: two or four ahead pay less.
template <int R, class U>
struct NextTilePrefetch {
  static constexpr size_t kChunk = size_t(R) * U::kBytes;
  const char* p;
  bool on;
  NextTilePrefetch(const CqMatmulJob& job, uint32_t r0, bool wanted)
      : p(reinterpret_cast<const char*>(job.packed)), on(wanted && r0 + 2 * uint32_t(R) <= job.rows) {
    if (on) p = reinterpret_cast<const char*>(job.packed + size_t(r0 + R) * job.row_bytes);
  }
  void group() {
    if (on) {
      for (size_t off = 0; off < kChunk; off += 64) _mm_prefetch(p + off, _MM_HINT_T0);
      p += kChunk;
    }
  }
};

// Lane l = v*R + r of a tile: row index l % R, vector index l / R.
template <int R>
struct TileLanes {
  static constexpr int32_t row[8] = {0 % R, 1 % R, 2 % R, 3 % R, 4 % R, 5 % R, 6 % R, 7 % R};
  static constexpr int32_t vec[8] = {0 / R, 1 / R, 2 / R, 3 / R, 4 / R, 5 / R, 6 / R, 7 / R};
};

// R rows x V vectors; lane l = v*R + r of every 8-lane vector. Per lane, the
// float math is the scalar's: acc += float(dot) * (norm * scale), in group
// order, then acc * cb.scale. Lanes >= R*V compute on zero dots and are
// never stored.
template <Dot kDot, class U, int R, int V>
void cq_tile(const CqMatmulJob& job, uint32_t r0, uint32_t v0) {
  static_assert(R * V <= 8);
  constexpr int P = R * V;
  const uint32_t groups = job.groups;
  // Norm of lane l at group g: norms[(r0 + l%R - row_begin)*groups + g].
  const __m256i norm_index = _mm256_mullo_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(TileLanes<R>::row)),
                                                _mm256_set1_epi32(int(groups)));
  const __m256i scale_index = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(TileLanes<R>::vec));
  const float* norms = tile_norms<R>(job, r0);
  const size_t rb = job.row_bytes;
  const uint8_t* packed = job.packed + size_t(r0) * rb;
  __m256 acc = _mm256_setzero_ps();
  NextTilePrefetch<R, U> prefetch(job, r0, V == 1);
  for (uint32_t g = 0; g < groups; ++g, packed += U::kBytes) {
    prefetch.group();
    __m256i dots[8];
    for (int l = P; l < 8; ++l) dots[l] = _mm256_setzero_si256();
    const uint8_t* row = packed;
    for (int r = 0; r < R; ++r, row += rb) {
      __m256i w[4];
      U::weights(row, job.tables, w);
      for (int v = 0; v < V; ++v) {
        const size_t off = size_t(v0 + v) * job.in_pad + size_t(g) * kG;
        dots[v * R + r] = dot_group<kDot>(w, kDot == Dot::kAvx2 ? job.act_abs + off : nullptr, job.act + off);
      }
    }
    const __m256 norm = _mm256_i32gather_ps(norms + g, norm_index, 4);
    const __m256 scale = _mm256_permutevar8x32_ps(_mm256_loadu_ps(job.scales + g * job.scale_stride + v0), scale_index);
    __m256i idots = reduce8(dots);
    if constexpr (kDot != Dot::kAvx2) {
      idots = _mm256_sub_epi32(
          idots,
          _mm256_permutevar8x32_epi32(
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(job.corr + g * job.scale_stride + v0)), scale_index));
    }
    const __m256 d = _mm256_cvtepi32_ps(idots);
    acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_mul_ps(norm, scale)));
  }
  alignas(32) float res[8];
  _mm256_store_ps(res, _mm256_mul_ps(acc, _mm256_set1_ps(job.cb_scale)));
  for (int v = 0; v < V; ++v) {
    for (int r = 0; r < R; ++r) job.y[size_t(v0 + v) * job.y_stride + r0 + r] = res[v * R + r];
  }
}

// This ISA's tile for the shared tiling driver (simd_common.h).
template <Dot kDot, class U>
struct Tiles {
  const CqMatmulJob& job;
  template <int R, int V>
  void tile(uint32_t r, uint32_t v0) const {
    cq_tile<kDot, U, R, V>(job, r, v0);
  }
};

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
// ----------------------------------------------------------------------------
// 512-bit tiles (the "avx512-vnni" table): two rows per zmm register, row 2p in
// the low 256 bits and row 2p + 1 in the high 256 bits, with the same 32
// activations broadcast to both halves. Per row pair and group: the 256-bit
// unpacking done once on both rows, 4 zmm VPDPBUSD; per tile and group one
// reduction of up to 8 zmm accumulators into 16 int32 lanes (21 instructions,
// against 21 for 8 lanes with vphaddd), then the scalar's float math on 16
// lanes. The column order is the 256-bit one, so the same permutation.

inline __m512i pair256(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }
inline __m256i load256(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m512i table512(__m256i t) { return _mm512_broadcast_i32x4(_mm256_castsi256_si128(t)); }

// Weights of rows p0 (low halves) and p1 (high halves): w[k] = the 256-bit
// unpacker's w[k] of each row.
template <class U>
struct Unpack512 {  // generic: unpack each row with 256-bit code, then pair
  static void weights(const uint8_t* p0, const uint8_t* p1, const __m256i t[4], const __m512i[4], __m512i w[4]) {
    __m256i a[4], b[4];
    U::weights(p0, t, a);
    U::weights(p1, t, b);
    for (int k = 0; k < 4; ++k) w[k] = pair256(a[k], b[k]);
  }
};

template <>
struct Unpack512<Unpack1> {
  static void weights(const uint8_t* p0, const uint8_t* p1, const __m256i[4], const __m512i t[4], __m512i w[4]) {
    auto bcast = [](const uint8_t* p) {
      return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    };
    const __m512i b = pair256(bcast(p0), bcast(p1));
    const __m512i shift = _mm512_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4, 0, 0, 0, 0, 4, 4, 4, 4);
    Unpack1::decode(vand(_mm512_srlv_epi32(b, shift), vlow_nibbles(b)), t, w);
  }
};

template <>
struct Unpack512<Unpack2> {
  static void weights(const uint8_t* p0, const uint8_t* p1, const __m256i[4], const __m512i t[4], __m512i w[4]) {
    Unpack2::decode(pair256(load256(p0), load256(p1)), t, w);
  }
};

template <>
struct Unpack512<Unpack4> {
  static void weights(const uint8_t* p0, const uint8_t* p1, const __m256i[4], const __m512i t[4], __m512i w[4]) {
    Unpack4::decode(pair256(load256(p0), load256(p1)), pair256(load256(p0 + 32), load256(p1 + 32)), t, w);
  }
};

// vpermb as inline assembly: avx512_vnni.cpp is built without -mavx512vbmi
// (the avx512-vnni table runs on CPUs without it), and the intrinsic would
// need a target attribute on every always-inline caller. Only the
// avx512-vbmi table's tiles reach it (VbmiPairs).
__attribute__((always_inline)) inline __m512i vpermb(__m512i index, __m512i table) {
  __m512i r;
  __asm__("vpermb %2, %1, %0" : "=v"(r) : "v"(index), "v"(table));
  return r;
}

// Lanes of a 512-bit tile of R rows (R/2 pairs, at least one) x V vectors:
// accumulator i = v * pairs + p holds rows 2p (low half) and 2p + 1 (high
// half); after reduce16, lane L = 4t + e holds accumulator 4(t/2) + e, half
// t % 2. Unused lanes point at row 0 / vector 0 (valid memory, never stored).
template <int R, int V>
struct Lanes512 {
  static constexpr int kPairs = (R + 1) / 2;
  static_assert(kPairs * V <= 8);
  static constexpr int row_of(int lane) {
    const int t = lane / 4, i = 4 * (t / 2) + lane % 4;
    const int row = 2 * (i % kPairs) + t % 2;
    return i < kPairs * V && row < R ? row : 0;
  }
  static constexpr int vec_of(int lane) {
    const int i = 4 * (lane / 8) + lane % 4;
    return i < kPairs * V ? i / kPairs : 0;
  }
  static constexpr int lane_of(int row, int v) {
    const int i = v * kPairs + row / 2;
    return 4 * (2 * (i / 4) + row % 2) + i % 4;
  }
};

// Lane L = 4t + e of the result: sum of the 8 lanes of half t % 2 of a[4(t/2) + e].
// (Always inlined: with many callers GCC may call it out of line, and its 8
// inputs then go through the stack.)
__attribute__((always_inline)) inline __m512i reduce16(const __m512i a[8]) {
  __m512i x[4], y[2];
  for (int i = 0; i < 4; ++i) {  // per 128-bit lane: [a0+a2, b0+b2, a1+a3, b1+b3]
    x[i] =
        _mm512_add_epi32(_mm512_unpacklo_epi32(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_epi32(a[2 * i], a[2 * i + 1]));
  }
  for (int j = 0; j < 2; ++j) {  // per 128-bit lane: the 4-element sums of a[4j..4j+3]
    y[j] =
        _mm512_add_epi32(_mm512_unpacklo_epi64(x[2 * j], x[2 * j + 1]), _mm512_unpackhi_epi64(x[2 * j], x[2 * j + 1]));
  }
  // 128-bit lanes (0+1, 2+3) of y0, then of y1.
  return _mm512_add_epi32(_mm512_shuffle_i64x2(y[0], y[1], 0x88), _mm512_shuffle_i64x2(y[0], y[1], 0xDD));
}

template <class U, int R, int V>
void cq_tile512(const CqMatmulJob& job, const __m512i t512[4], uint32_t r0, uint32_t v0) {
  using L = Lanes512<R, V>;
  constexpr int P = L::kPairs;
  constexpr int A = P * V;
  alignas(64) static constexpr int32_t kRow[16] = {L::row_of(0),  L::row_of(1),  L::row_of(2),  L::row_of(3),
                                                   L::row_of(4),  L::row_of(5),  L::row_of(6),  L::row_of(7),
                                                   L::row_of(8),  L::row_of(9),  L::row_of(10), L::row_of(11),
                                                   L::row_of(12), L::row_of(13), L::row_of(14), L::row_of(15)};
  alignas(64) static constexpr int32_t kVec[16] = {L::vec_of(0),  L::vec_of(1),  L::vec_of(2),  L::vec_of(3),
                                                   L::vec_of(4),  L::vec_of(5),  L::vec_of(6),  L::vec_of(7),
                                                   L::vec_of(8),  L::vec_of(9),  L::vec_of(10), L::vec_of(11),
                                                   L::vec_of(12), L::vec_of(13), L::vec_of(14), L::vec_of(15)};
  const uint32_t groups = job.groups;
  const __m512i norm_index = _mm512_mullo_epi32(_mm512_load_si512(kRow), _mm512_set1_epi32(int(groups)));
  const __m512i vec_index = _mm512_load_si512(kVec);
  const float* norms = tile_norms<R>(job, r0);
  const size_t rb = job.row_bytes;
  const uint8_t* packed = job.packed + size_t(r0) * rb;
  __m512 acc = _mm512_setzero_ps();
  NextTilePrefetch<R, U> prefetch(job, r0, V == 1);
  for (uint32_t g = 0; g < groups; ++g, packed += U::kBytes) {
    prefetch.group();
    __m512i dots[8];
    for (int i = A; i < 8; ++i) dots[i] = _mm512_setzero_si512();
    const uint8_t* row = packed;  // row 2p (a 1-row tile pairs the row with itself)
    for (int p = 0; p < P; ++p, row += 2 * rb) {
      __m512i w[4];
      Unpack512<U>::weights(row, 2 * p + 1 < R ? row + rb : row, job.tables, t512, w);
      for (int v = 0; v < V; ++v) {
        const int8_t* a = job.act + size_t(v0 + v) * job.in_pad + size_t(g) * kG;
        __m512i sum = _mm512_setzero_si512();
        for (int k = 0; k < 4; ++k) {
          const __m512i av = _mm512_broadcast_i64x4(_mm256_load_si256(reinterpret_cast<const __m256i*>(a + 32 * k)));
          sum = _mm512_dpbusd_epi32(sum, w[k], av);
        }
        dots[v * P + p] = sum;
      }
    }
    const size_t f = g * job.scale_stride + v0;  // 8 readable entries from here
    const __m512 norm = _mm512_i32gather_ps(norm_index, norms + g, 4);
    __m512 scale;
    __m512i corr;
    if constexpr (V == 1) {  // one vector: broadcasts from memory (load port) instead of vpermps/vpermd (port 5)
      scale = _mm512_set1_ps(job.scales[f]);
      corr = _mm512_set1_epi32(job.corr[f]);
    } else {
      scale = _mm512_permutexvar_ps(vec_index, _mm512_castps256_ps512(_mm256_loadu_ps(job.scales + f)));
      corr = _mm512_permutexvar_epi32(
          vec_index, _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(job.corr + f))));
    }
    const __m512 d = _mm512_cvtepi32_ps(_mm512_sub_epi32(reduce16(dots), corr));
    acc = _mm512_add_ps(acc, _mm512_mul_ps(d, _mm512_mul_ps(norm, scale)));
  }
  alignas(64) float res[16];
  _mm512_store_ps(res, _mm512_mul_ps(acc, _mm512_set1_ps(job.cb_scale)));
  for (int v = 0; v < V; ++v) {
    for (int r = 0; r < R; ++r) job.y[size_t(v0 + v) * job.y_stride + r0 + r] = res[L::lane_of(r, v)];
  }
}

// One vector, CQ2 (and ternary): one row per zmm register holding two
// consecutive groups (64 contiguous bytes, one load, no vinserti64x4), dotted
// with the activations of the two groups in "paired" layout (block k of group
// 2j in bytes [64k, 64k + 32) of pair j's 256 bytes, of group 2j + 1 in
// [64k + 32, 64k + 64); cq_matmul lays them out so for this tile). Per pair of
// groups, up to 16 rows: reduce16 of rows 0-7 and of rows 8-15 give lanes
// (row 4 (t/2) + e, group 2j + t % 2) for lane 4t + e; one vpermt2d per group
// puts the 16 rows of a group in lane order (lane = row). Then the scalar's
// float math per group, in group order. An odd last group loads 32 bytes
// (the upper half of the register is zero and its results unused).
// The norms come straight from the FP16 norms (job.half), one dword gather per
// pair of groups: dword r = the halves (norm[r][g], norm[r][g + 1]), adjacent
// in the [row][group] layout. That replaces a float conversion pass and two
// float gathers per pair; the conversion is exact, so
// the float math is unchanged. An odd last group gathers (g - 1, g), which
// stays inside the norms (a matrix of one group loads its R norms instead).
// The byte lookups of the paired tile, two ways (the same weights; `t` holds
// each one's tables, see vbmi_pairs_tables):
//  - PshufbPairs: Unpack2's nibble lookups, 2 ANDs + 1 shift + 4 vpshufb per row;
//  - VbmiPairs (AVX512-VBMI): vpermb looks up a byte by its low 6 bits, so
//    crumbs 0, 1, 2 of each byte index 64-entry tables directly (entry i =
//    code (i >> 2k) & 3) and crumb 3 after one 16-bit shift by 2 (bits 6-7 land
//    in 4-5; what comes in from the next byte lands in 6-7, which vpermb
//    ignores): 1 shift + 4 vpermb per row, two fewer vector µops on the ports
//    the VPDPBUSDs use.
struct PshufbPairs {
  __attribute__((always_inline)) static void decode(__m512i b, const __m512i t[4], __m512i w[4]) {
    Unpack2::decode(b, t, w);
  }
};
struct VbmiPairs {
  __attribute__((always_inline)) static void decode(__m512i b, const __m512i t[4], __m512i w[4]) {
    w[0] = vpermb(b, t[0]);
    w[1] = vpermb(b, t[1]);
    w[2] = vpermb(b, t[2]);
    w[3] = vpermb(_mm512_srli_epi16(b, 2), t[2]);
  }
};

template <int R, class Decode>
__attribute__((always_inline)) inline void cq_tile512_pairs_body(const CqMatmulJob& job, const __m512i t512[4],
                                                                 uint32_t r0) {
  static_assert(R >= 1 && R <= 16);
  // Lane = row; lanes past the tile read row 0's norms (valid memory, never stored).
  constexpr auto lane_row = [](int lane) { return lane < R ? lane : 0; };
  alignas(64) static constexpr int32_t kRow[16] = {
      lane_row(0), lane_row(1), lane_row(2),  lane_row(3),  lane_row(4),  lane_row(5),  lane_row(6),  lane_row(7),
      lane_row(8), lane_row(9), lane_row(10), lane_row(11), lane_row(12), lane_row(13), lane_row(14), lane_row(15)};
  const uint32_t groups = job.groups;
  // Halves from one row's norms to the next: the gather's index is in halves (scale 2).
  const __m512i norm_index = _mm512_mullo_epi32(_mm512_load_si512(kRow), _mm512_set1_epi32(int(groups)));
  const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
  const __m512i second = _mm512_setr_epi32(4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  const size_t rb = job.row_bytes;
  const uint8_t* packed = job.packed + size_t(r0) * rb;
  const uint8_t* norm_half = job.half + 2 * size_t(r0) * groups;
  prefetch_next_tile_norms<R>(job, r0);
  const int8_t* act = job.act;
  NextTilePrefetch<R, Unpack2> prefetch(job, r0, true);
  __m512 acc = _mm512_setzero_ps();
  const auto accumulate = [&](uint32_t g, __m512i dots, __m256i norm_halves) {  // lane = row
    const size_t f = g * job.scale_stride;
    const __m512 norm = _mm512_cvtph_ps(norm_halves);
    const __m512 d = _mm512_cvtepi32_ps(_mm512_sub_epi32(dots, _mm512_set1_epi32(job.corr[f])));
    acc = _mm512_add_ps(acc, _mm512_mul_ps(d, _mm512_mul_ps(norm, _mm512_set1_ps(job.scales[f]))));
  };
  for (uint32_t g = 0; g < groups; g += 2, packed += 2 * Unpack2::kBytes, act += 2 * kG) {
    const bool two = g + 1 < groups;
    prefetch.group();
    if (two) prefetch.group();
    // (One group in all: the tile's norms are R contiguous halves.)
    const __m512i norm_pairs =
        groups == 1 ? _mm512_slli_epi32(
                          _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(__mmask16((1u << R) - 1), norm_half)), 16)
                    : _mm512_i32gather_epi32(norm_index, norm_half + 2 * (two ? g : g - 1), 2);
    __m512i av[4];
    for (int k = 0; k < 4; ++k) av[k] = _mm512_load_si512(act + 64 * k);
    const auto half = [&](int r_first) {  // reduce16 of rows r_first .. r_first + 7
      __m512i dots[8];
      const uint8_t* row = packed + size_t(r_first) * rb;
      for (int i = 0; i < 8; ++i, row += rb) {
        if (r_first + i >= R) {
          dots[i] = _mm512_setzero_si512();
          continue;
        }
        const __m512i b = two ? _mm512_loadu_si512(row)
                              : _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row)));
        __m512i w[4];
        Decode::decode(b, t512, w);
        __m512i sum = _mm512_setzero_si512();
        for (int k = 0; k < 4; ++k) sum = _mm512_dpbusd_epi32(sum, w[k], av[k]);
        dots[i] = sum;
      }
      return reduce16(dots);
    };
    const __m512i lo = half(0);
    const __m512i hi = R > 8 ? half(8) : _mm512_setzero_si512();
    if (two) {
      accumulate(g, _mm512_permutex2var_epi32(lo, first, hi), _mm512_cvtepi32_epi16(norm_pairs));
      accumulate(g + 1, _mm512_permutex2var_epi32(lo, second, hi),
                 _mm512_cvtepi32_epi16(_mm512_srli_epi32(norm_pairs, 16)));
    } else {
      accumulate(g, _mm512_permutex2var_epi32(lo, first, hi), _mm512_cvtepi32_epi16(_mm512_srli_epi32(norm_pairs, 16)));
    }
  }
  alignas(64) float res[16];
  _mm512_store_ps(res, _mm512_mul_ps(acc, _mm512_set1_ps(job.cb_scale)));
  for (int r = 0; r < R; ++r) job.y[r0 + uint32_t(r)] = res[r];
}

template <int R>
void cq_tile512_pairs(const CqMatmulJob& job, const __m512i t512[4], uint32_t r0) {
  cq_tile512_pairs_body<R, PshufbPairs>(job, t512, r0);
}
template <int R>
void cq_tile512_pairs_vbmi(const CqMatmulJob& job, const __m512i t512[4], uint32_t r0) {
  cq_tile512_pairs_body<R, VbmiPairs>(job, t512, r0);
}

// vpmultishiftqb as inline assembly, for the reason vpermb is (above).
__attribute__((always_inline)) inline __m512i vpmultishiftqb(__m512i control, __m512i data) {
  __m512i r;
  __asm__("vpmultishiftqb %2, %1, %0" : "=v"(r) : "v"(control), "v"(data));
  return r;
}

// acc += dpbusd(w, the 4 bytes at a broadcast to every dword), with the
// broadcast embedded in the instruction ({1to16}, the load fused into the
// dot). Inline assembly keeps the accumulator in one register: GCC 12 copies
// the tile's accumulators between registers on every step otherwise.
__attribute__((always_inline)) inline void dpbusd_broadcast(__m512i& acc, __m512i w, const int8_t* a) {
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*reinterpret_cast<const int32_t*>(a)));
}

// Several vectors, CQ2 (and ternary), avx512-vbmi table: lane = row, so a
// group's dots need no reduction. A tile of 16 rows is decoded once into
// `weights` (decode_rows_vbmi) and then read by every block of 8 vectors
// (cq_tile512_rows): per 4 columns, one load of 16 rows × 4 weights and one
// VPDPBUSD per vector against that vector's 4 activations broadcast.

// weights[s] (64 bytes) = the biased weights of columns 4s .. 4s + 3 of rows
// r0 .. r0 + 15, row r in dword r, for the in_pad / 4 steps s. Byte j of a
// row's group holds columns 4j .. 4j + 3 (crumb k = column 4j + k). Per
// group, the 16 rows' 32 bytes are transposed to 8 registers of dword q of
// every row (rows r and r + 8 in the two halves of one register, then an 8 × 8
// dword transpose in each half: 24 shuffles, where 8 dword gathers cost more);
// per byte of those, one vpmultishiftqb moves crumb k of the byte to the low
// bits of byte k of each dword and one vpermb looks the crumbs up (table:
// entry i = the biased weight of code i & 3). Then the tile's norms,
// [group][row] (one load per group in the tile). Rows past `rows` repeat row 0.
inline void decode_rows_vbmi(const CqMatmulJob& job, __m512i table, uint32_t r0, uint32_t rows, int8_t* weights) {
  // Byte k of dword h of a qword takes 8 bits from bit 32h + 8j + 2k of it.
  __m512i spread[4];
  for (int j = 0; j < 4; ++j) {
    int64_t q = 0;
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < 4; ++k) q |= int64_t(32 * h + 8 * j + 2 * k) << (8 * (4 * h + k));
    }
    spread[j] = _mm512_set1_epi64(q);
  }
  const __m512i low_lanes = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
  const __m512i high_lanes = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  // Each lane's packed row; after the weights, the tile's float norms, [group][row].
  const uint8_t* row[kRowTileRows];
  auto* norms = reinterpret_cast<float*>(weights + size_t(kRowTileRows) * job.in_pad);
  for (uint32_t r = 0; r < kRowTileRows; ++r) {
    const uint32_t at = r < rows ? r0 + r : r0;
    row[r] = job.packed + size_t(at) * job.row_bytes;
    const float* from = job.norms + size_t(at - job.row_begin) * job.groups;
    for (uint32_t g = 0; g < job.groups; ++g) norms[g * kRowTileRows + r] = from[g];
  }
  const auto load32 = [](const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
  for (uint32_t at = 0; at < job.groups * Unpack2::kBytes; at += Unpack2::kBytes) {
    __m512i z[8], a[8], b[8];
    for (int p = 0; p < 8; ++p)
      z[p] = _mm512_inserti64x4(_mm512_castsi256_si512(load32(row[p] + at)), load32(row[p + 8] + at), 1);
    for (int p = 0; p < 8; p += 2) {
      a[p] = _mm512_unpacklo_epi32(z[p], z[p + 1]);
      a[p + 1] = _mm512_unpackhi_epi32(z[p], z[p + 1]);
    }
    for (int p = 0; p < 8; p += 4) {
      b[p] = _mm512_unpacklo_epi64(a[p], a[p + 2]);
      b[p + 1] = _mm512_unpackhi_epi64(a[p], a[p + 2]);
      b[p + 2] = _mm512_unpacklo_epi64(a[p + 1], a[p + 3]);
      b[p + 3] = _mm512_unpackhi_epi64(a[p + 1], a[p + 3]);
    }
    // b[q] (q < 4): dword q (128-bit lanes 0, 2) and q + 4 (lanes 1, 3) of rows 0-3 | 8-11; b[q + 4]: rows 4-7 | 12-15.
    for (int q = 0; q < 8; ++q, weights += 4 * 64) {
      const __m512i bytes = _mm512_permutex2var_epi64(b[q % 4], q < 4 ? low_lanes : high_lanes, b[q % 4 + 4]);
      for (int j = 0; j < 4; ++j) {
        _mm512_store_si512(weights + 64 * j, vpermb(vpmultishiftqb(spread[j], bytes), table));
      }
    }
  }
}

// Rows r0 .. r0 + rows - 1 (decoded in `weights`) × vectors of block `block`.
// The bias correction is the even accumulators' start value.
// Per group and vector the scalar's float math on 16 rows, in group order.
template <int V>
void cq_tile512_rows(const CqMatmulJob& job, const int8_t* weights, uint32_t r0, uint32_t rows, uint32_t block) {
  constexpr uint32_t kSteps = kG / 4;  // 4-column steps per group
  const __mmask16 live = __mmask16((1u << rows) - 1);
  const uint32_t groups = job.groups, v0 = block * V;
  const auto* norms = reinterpret_cast<const float*>(weights + size_t(kRowTileRows) * job.in_pad);
  const int8_t* act = job.act_blocks + size_t(block) * groups * kSteps * V * 4;
  __m512 acc[V];
  for (int v = 0; v < V; ++v) acc[v] = _mm512_setzero_ps();
  NextTilePrefetch<int(kRowTileRows), Unpack2> prefetch(job, r0, block == 0);
  for (uint32_t g = 0; g < groups; ++g) {
    prefetch.group();
    // Two sets of accumulators, even and odd steps (twice the dependency
    // chains in flight; integer sums, so the split does not change them).
    // The even set starts at minus the bias correction (exact in int32).
    __m512i dots[V], odd[V];
    const size_t f = g * job.scale_stride + v0;
    for (int v = 0; v < V; ++v) {
      dots[v] = _mm512_set1_epi32(-job.corr[f + v]);
      odd[v] = _mm512_setzero_si512();
    }
    for (uint32_t s = 0; s < kSteps; s += 2, weights += 128, act += 2 * V * 4) {
      const __m512i w0 = _mm512_load_si512(weights);
      const __m512i w1 = _mm512_load_si512(weights + 64);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        dpbusd_broadcast(dots[v], w0, act + 4 * v);
        dpbusd_broadcast(odd[v], w1, act + 4 * (V + v));
      }
    }
    for (int v = 0; v < V; ++v) dots[v] = _mm512_add_epi32(dots[v], odd[v]);
    const __m512 norm = _mm512_load_ps(norms + size_t(g) * kRowTileRows);
    for (int v = 0; v < V; ++v) {
      const __m512 d = _mm512_cvtepi32_ps(dots[v]);
      acc[v] = _mm512_add_ps(acc[v], _mm512_mul_ps(d, _mm512_mul_ps(norm, _mm512_set1_ps(job.scales[f + v]))));
    }
  }
  const __m512 cb_scale = _mm512_set1_ps(job.cb_scale);
  for (int v = 0; v < V; ++v) {
    _mm512_mask_storeu_ps(job.y + size_t(v0 + v) * job.y_stride + r0, live, _mm512_mul_ps(acc[v], cb_scale));
  }
}

// VbmiPairs' tables from the code table e: t[k][i] = e[(i >> 2k) & 3], k = 0..2.
inline void vbmi_pairs_tables(const int8_t e[16], __m512i t[4]) {
  alignas(64) int8_t bytes[4][64] = {};
  for (int k = 0; k < 3; ++k) {
    for (int i = 0; i < 64; ++i) bytes[k][i] = e[(i >> (2 * k)) & 3];
  }
  for (int k = 0; k < 4; ++k) t[k] = _mm512_load_si512(bytes[k]);
}

template <class U>
struct Tiles512 {
  const CqMatmulJob& job;
  __m512i t512[4];
  __m512i vbmi[4];  // VbmiPairs' tables when job.paired and job.vbmi
  template <int R, int V>
  void tile(uint32_t r, uint32_t v0) const {
    if constexpr (U::kBits == 2 && V == 1) {  // CQ2 and ternary, a call with one vector: paired layout
      if (job.paired) {
        if (job.vbmi) {
          cq_tile512_pairs_vbmi<R>(job, vbmi, r);
        } else {
          cq_tile512_pairs<R>(job, t512, r);
        }
        return;
      }
    }
    cq_tile512<U, R, V>(job, t512, r, v0);
  }
};
#endif  // AVX-512 F, BW, VL, VNNI

}  // namespace x86
}  // namespace
}  // namespace cact::kernels

#endif  // x86-64 with AVX2 + F16C
