// The AMX-INT8 table ("avx512-amx"): the avx512-vbmi table with the
// multi-vector CQ product (prefill: 6 or more activation vectors against one
// weight matrix) on the AMX tile unit (Sapphire Rapids and later). Built with
// -mavx2 -mf16c -mavx512{f,bw,vl,vnni,vbmi} -mamx-tile -mamx-int8; chosen by
// dispatch.cpp only after the CPUID/XCR0 check and a granted
// ARCH_REQ_XCOMP_PERM for the tile data (CACT_ISA=avx512-vbmi keeps it out). Fewer
// vectors (decode) and shapes the SIMD code does not take run the avx512-vbmi
// code unchanged (every AMX CPU has AVX512-VBMI; dispatch.cpp checks it). Design and exactness: docs/KERNELS.md
// "AMX-INT8 tiles".
//
// Same rules as kernels/x86/common.h (internal linkage only, no std:: templates); the
// pragmas are those of avx512_vnni.cpp (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include "kernels/x86/tiles.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__) && defined(__AVX512F__) && defined(__AVX512BW__) && \
    defined(__AVX512VL__) && defined(__AVX512VNNI__) && defined(__AVX512VBMI__) &&                                    \
    (defined(__AMX_TILE__) || defined(__AMXTILE__)) &&                                                                \
    (defined(__AMX_INT8__) || defined(__AMXINT8__))  // GCC || clang
namespace cact::kernels {
extern const KernelTable kAvx512VbmiKernels;  // avx512_vnni.cpp
namespace {
namespace amx {

using x86::Dot;
constexpr uint32_t kG = codec::kGroup;
constexpr uint32_t kRows = 16;  // matrix rows per weight tile (M)
constexpr uint32_t kVecs = 16;  // activation vectors per result tile (N)
// Fewer vectors run the avx512-vnni tiles: a call costs about what 16 vectors
// cost (zero-padded), which the avx512-vnni tiles beat up to ~5 vectors
// (docs/KERNELS.md "AMX-INT8 tiles").
constexpr uint32_t kMinVectors = 6;
// A slice of fewer rows pads the 16-row weight tile with zeros; the
// avx512-vbmi tiles do such slices for less (the probe heads' 4-row products
// of a 16-token fold in decode), unless a whole prefill chunk of vectors
// shares the padded tile (the mHC Phi's 4-row tasks).
constexpr uint32_t kMinRows = 8;
constexpr uint32_t kMinVectorsFewRows = 32;
// One (vector block, group) of activations in the B-tile (VNNI) layout: two
// tiles (columns [0, 64) and [64, 128) of the group), each 16 rows of 64 bytes:
// row k, bytes 4n..4n+3 = vector n's activations 4k..4k+3 of that half.
constexpr size_t kActBlock = 2 * 16 * 64;

// Tile registers (literal numbers below: GCC's tile intrinsics paste them into
// the register name): tmm2/tmm3 weights A0/A1 (columns 0-63, 64-127 of the
// group); two sets of result C and activations B0/B1, used by alternate steps:
// tmm0 with tmm4/tmm5, tmm1 with tmm6/tmm7.

struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// Every tile 16 rows x 64 bytes: weights A (16 rows x 64 columns), activations
// B (16 dword rows x 16 vectors), result C (16 rows x 16 vectors, int32).
constexpr TileConfig tile_config() {
  TileConfig c{};
  c.palette_id = 1;
  for (int i = 0; i < 8; ++i) {
    c.colsb[i] = 64;
    c.rows[i] = 16;
  }
  return c;
}
constexpr TileConfig kTileConfig = tile_config();

// Lookup tables of the row decoders: 128-bit lanes of zmm registers.
struct RowTables {
  __m512i z[2];
  __m256i y[4];  // width 3: the 256-bit unpacker's tables
};

inline __m512i lanes4(const int8_t* a, const int8_t* b, const int8_t* c, const int8_t* d) {
  alignas(64) int8_t buf[64];
  std::memcpy(buf, a, 16);
  std::memcpy(buf + 16, b, 16);
  std::memcpy(buf + 32, c, 16);
  std::memcpy(buf + 48, d, 16);
  return _mm512_load_si512(buf);
}

inline RowTables row_tables(uint32_t index_bits, const int8_t e[16]) {
  const NibbleTables nt = nibble_tables(index_bits, e);
  RowTables t{};
  switch (index_bits) {
    case 1:
      t.z[0] = lanes4(nt.t[0], nt.t[0], nt.t[1], nt.t[1]);
      t.z[1] = lanes4(nt.t[2], nt.t[2], nt.t[3], nt.t[3]);
      break;
    case 2:
      t.z[0] = lanes4(nt.t[0], nt.t[0], nt.t[1], nt.t[1]);
      break;
    case 3:
      x86::tables_for(3, e, t.y);
      break;
    default:
      t.z[0] = lanes4(nt.t[0], nt.t[0], nt.t[0], nt.t[0]);
      break;
  }
  return t;
}

// GCC's _tile_loadd is an asm without a memory operand or clobber: without
// this barrier the stores of the decoded weights could be moved past it.
inline void memory_barrier() { __asm__ volatile("" ::: "memory"); }

inline __m512i low_nibbles(__m512i v) { return _mm512_and_si512(v, _mm512_set1_epi8(0x0F)); }
inline __m512i high_nibbles(__m512i v) { return low_nibbles(_mm512_srli_epi16(v, 4)); }

// Row decoders: one group of one row's packed codes -> its 128 int8 weights
// (64-byte aligned `dst`, two zmm stores), in a column order of the decoder's
// choosing (derived by running it: layout_of below).
struct Row1 {  // 16 bytes: low nibbles in lanes 0 and 2, high nibbles in lanes 1 and 3
  static constexpr uint32_t kBits = 1, kBytes = 16;
  static void decode(const uint8_t* p, const RowTables& t, int8_t* dst) {
    const __m512i b = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m512i shift = _mm512_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4, 0, 0, 0, 0, 4, 4, 4, 4);
    const __m512i nib = low_nibbles(_mm512_srlv_epi32(b, shift));
    _mm512_store_si512(dst, _mm512_shuffle_epi8(t.z[0], nib));
    _mm512_store_si512(dst + 64, _mm512_shuffle_epi8(t.z[1], nib));
  }
};

struct Row2 {  // 32 bytes in both halves; crumb tables t0 (lanes 0, 1) and t1 (lanes 2, 3)
  static constexpr uint32_t kBits = 2, kBytes = 32;
  static void decode(const uint8_t* p, const RowTables& t, int8_t* dst) {
    const __m512i b = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    _mm512_store_si512(dst, _mm512_shuffle_epi8(t.z[0], low_nibbles(b)));
    _mm512_store_si512(dst + 64, _mm512_shuffle_epi8(t.z[0], high_nibbles(b)));
  }
};

struct Row3 {  // the 256-bit unpacker
  static constexpr uint32_t kBits = 3, kBytes = 48;
  static void decode(const uint8_t* p, const RowTables& t, int8_t* dst) {
    __m256i w[4];
    x86::Unpack3::weights(p, t.y, w);
    for (int k = 0; k < 4; ++k) _mm256_store_si256(reinterpret_cast<__m256i*>(dst + 32 * k), w[k]);
  }
};

struct Row4 {  // 64 bytes: low nibbles, then high nibbles
  static constexpr uint32_t kBits = 4, kBytes = 64;
  static void decode(const uint8_t* p, const RowTables& t, int8_t* dst) {
    const __m512i b = _mm512_loadu_si512(p);
    _mm512_store_si512(dst, _mm512_shuffle_epi8(t.z[0], low_nibbles(b)));
    _mm512_store_si512(dst + 64, _mm512_shuffle_epi8(t.z[0], high_nibbles(b)));
  }
};

// Byte j of a decoded row is column perm[j] of the group: the VBMI indices
// that put a group's activations in that order (vpermt2b over its 128 bytes).
struct ActPermute {
  __m512i idx[2];
};

template <class D>
ActPermute permute_of() {
  const GroupLayout layout = derive_group_layout<D::kBits>([](const uint8_t* packed, uint8_t* out) {
    int8_t identity[16];
    for (int n = 0; n < 16; ++n) identity[n] = int8_t(n);
    alignas(64) int8_t got[kG];
    D::decode(packed, row_tables(D::kBits, identity), got);
    std::memcpy(out, got, kG);
  });
  ActPermute p{};
  p.idx[0] = _mm512_loadu_si512(layout.perm);
  p.idx[1] = _mm512_loadu_si512(layout.perm + 64);
  return p;
}

const ActPermute& permute_for(uint32_t index_bits) {
  static const ActPermute perms[4] = {permute_of<Row1>(), permute_of<Row2>(), permute_of<Row3>(), permute_of<Row4>()};
  return perms[index_bits - 1];
}

// x[n] (16 dwords each) -> x[k] holding dword k of every old x[n] (lane n).
inline void transpose16x16(__m512i x[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {  // per 128-bit lane: x_i[0], x_i+1[0], x_i[1], x_i+1[1] / [2], [3]
    t[i] = _mm512_unpacklo_epi32(x[i], x[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(x[i], x[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // x[i + j], 128-bit lane L: dword 4L + j of x_i .. x_i+3
    x[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    x[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    x[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    x[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int j = 0; j < 4; ++j) {  // 4x4 transpose of 128-bit lanes: out[4L + j] lane a = x[4a + j] lane L
    const __m512i u0 = _mm512_shuffle_i32x4(x[j], x[4 + j], 0x44), u1 = _mm512_shuffle_i32x4(x[j], x[4 + j], 0xEE);
    const __m512i u2 = _mm512_shuffle_i32x4(x[8 + j], x[12 + j], 0x44);
    const __m512i u3 = _mm512_shuffle_i32x4(x[8 + j], x[12 + j], 0xEE);
    t[j] = _mm512_shuffle_i32x4(u0, u2, 0x88);
    t[4 + j] = _mm512_shuffle_i32x4(u0, u2, 0xDD);
    t[8 + j] = _mm512_shuffle_i32x4(u1, u3, 0x88);
    t[12 + j] = _mm512_shuffle_i32x4(u1, u3, 0xDD);
  }
  for (int i = 0; i < 16; ++i) x[i] = t[i];
}

// Activations of all vectors in the B-tile layout, [vector block][group]
// blocks of kActBlock bytes; vectors past `count` are zero.
void prepare_activations_amx(const QuantizedActivations& a, const ActPermute& pm, uint32_t groups, int8_t* out) {
  const uint32_t blocks = (a.count + kVecs - 1) / kVecs;
  for (uint32_t vb = 0; vb < blocks; ++vb) {
    for (uint32_t g = 0; g < groups; ++g) {
      int8_t* dst = out + (size_t(vb) * groups + g) * kActBlock;
      for (int h = 0; h < 2; ++h) {  // columns [64h, 64h + 64) of the decoded order: B tile h
        __m512i x[kVecs];
        for (uint32_t n = 0; n < kVecs; ++n) {
          const uint32_t v = vb * kVecs + n;
          x[n] = _mm512_setzero_si512();
          if (v < a.count) {
            const int8_t* src = activation_q(a) + size_t(v) * a.in_pad + size_t(g) * kG;
            x[n] = _mm512_permutex2var_epi8(_mm512_loadu_si512(src), pm.idx[h], _mm512_loadu_si512(src + 64));
          }
        }
        transpose16x16(x);  // row k: dword k (activations 4k..4k+3) of every vector
        for (int k = 0; k < 16; ++k) _mm512_store_si512(dst + h * (kActBlock / 2) + 64 * k, x[k]);
      }
    }
  }
}

// One step's tile work: the dots of the A tiles (tmm2, tmm3) and the B tiles
// B0/B1 loaded from `b` into result tile C, stored to `dots`. A macro: the
// tile numbers must be literals (GCC's intrinsics paste them into the asm).
#define CACT_AMX_STEP(C, B0, B1, b, dots)     \
  do {                                        \
    _tile_loadd(B0, b, 64);                   \
    _tile_loadd(B1, (b) + kActBlock / 2, 64); \
    _tile_zero(C);                            \
    _tile_dpbssd(C, 2, B0);                   \
    _tile_dpbssd(C, 3, B1);                   \
    _tile_stored(C, dots, 64);                \
  } while (false)

template <class D>
void matmul_rows(const codec::CqMatrix& w, const RowTables& t, const int8_t* act, const float* norms,
                 const float* scales, size_t scale_stride, uint32_t count, float cb_scale, uint32_t row_begin,
                 uint32_t row_end, float* y, size_t y_stride, float* acc, int8_t* wbuf, int32_t* cbuf) {
  const uint32_t groups = w.in_pad / kG;
  const uint32_t blocks = (count + kVecs - 1) / kVecs;
  const size_t acc_stride = size_t(blocks) * kVecs;  // acc[m][v]
  const size_t rb = w.row_bytes;
  for (uint32_t r0 = row_begin; r0 < row_end; r0 += kRows) {
    const uint32_t nrows = row_end - r0 < kRows ? row_end - r0 : kRows;
    if (nrows < kRows) std::memset(wbuf, 0, 2 * kRows * kG);  // rows past the range: zero weights (both buffers)
    std::memset(acc, 0, kRows * acc_stride * sizeof(float));
    const uint8_t* packed = w.packed + size_t(r0) * rb;
    const float* row_norms = norms + size_t(r0 - row_begin) * groups;
    for (uint32_t m = 0; m < nrows; ++m) D::decode(packed + m * rb, t, wbuf + m * kG);
    // Per output, the scalar's float math: acc += float(dot) * (norm * scale),
    // for the dots of one (group, vector block) step.
    struct Step {
      uint32_t g, vb;
    };
    const auto accumulate = [&](Step s, const int32_t* dots) {
      const __m512 scale = _mm512_loadu_ps(scales + s.g * scale_stride + s.vb * kVecs);
      for (uint32_t m = 0; m < nrows; ++m) {
        const __m512 ns = _mm512_mul_ps(_mm512_set1_ps(row_norms[size_t(m) * groups + s.g]), scale);
        const __m512 d = _mm512_cvtepi32_ps(_mm512_load_si512(dots + kVecs * m));
        float* am = acc + m * acc_stride + s.vb * kVecs;
        _mm512_store_ps(am, _mm512_add_ps(_mm512_load_ps(am), _mm512_mul_ps(d, ns)));
      }
    };
    // Steps run in (group, vector block) order; step s's tile work is issued
    // before step s - 1's sums are read (so that those loads do not wait
    // behind the store just issued). One call site each: code size.
    const uint32_t steps = groups * blocks;
    Step previous{0, 0};
    for (uint32_t s = 0, g = 0, vb = 0; s <= steps; ++s) {
      if (s < steps && vb == 0) {
        int8_t* cur = wbuf + (g % 2) * kRows * kG;
        memory_barrier();
        _tile_loadd(2, cur, kG);
        _tile_loadd(3, cur + 64, kG);
        // Decode the next group into the other buffer now, after this group's
        // tile loads: tile loads wait for older stores to drain, so the stores
        // drain while this group's dots run.
        if (g + 1 < groups) {
          int8_t* nxt = wbuf + ((g + 1) % 2) * kRows * kG;
          for (uint32_t m = 0; m < nrows; ++m) D::decode(packed + m * rb + size_t(g + 1) * D::kBytes, t, nxt + m * kG);
        }
      }
      if (s < steps) {
        const int8_t* b = act + (size_t(vb) * groups + g) * kActBlock;
        int32_t* dots = cbuf + (s % 2) * kRows * kVecs;
        if (s % 2 == 0) {
          CACT_AMX_STEP(0, 4, 5, b, dots);
        } else {
          CACT_AMX_STEP(1, 6, 7, b, dots);
        }
        memory_barrier();  // (the asm has no memory operand either)
      }
      if (s > 0) accumulate(previous, cbuf + ((s - 1) % 2) * kRows * kVecs);
      previous = {g, vb};
      if (++vb == blocks) vb = 0, ++g;
    }
    // y[v][r0 + m] = acc[m][v] * cb.scale.
    const __m512i index = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                             _mm512_set1_epi32(int(acc_stride)));
    const __mmask16 mask = __mmask16((1u << nrows) - 1);
    const __m512 cs = _mm512_set1_ps(cb_scale);
    for (uint32_t v = 0; v < count; ++v) {
      const __m512 r = _mm512_mul_ps(_mm512_i32gather_ps(index, acc + v, 4), cs);
      _mm512_mask_storeu_ps(y + size_t(v) * y_stride + r0, mask, r);
    }
  }
}

#undef CACT_AMX_STEP

// The activations in the B-tile layout and their scales transposed, kept per
// thread while the input keeps its version: q/k/v/gate, the three Phi products
// and every pool task's row range read one input in separate calls.
thread_local MatmulScratch tls_amx_scratch;

const PreparedInput& prepare_input_amx(const QuantizedActivations& a, uint32_t bits_per_index) {
  return keep_prepared(tls_amx_scratch.input, prepared_input_key(a, bits_per_index), [&](PreparedInput& p) {
    const uint32_t groups = a.in_pad / kG;
    const uint32_t blocks = (a.count + kVecs - 1) / kVecs;
    const size_t act_bytes = size_t(blocks) * groups * kActBlock;
    const size_t scale_bytes = round_up64(size_t(groups) * scale_stride(a.count) * sizeof(float));
    auto* base = static_cast<uint8_t*>(p.memory.get(act_bytes + scale_bytes));
    p.act = reinterpret_cast<int8_t*>(base);
    p.scales = reinterpret_cast<float*>(base + act_bytes);
    prepare_activations_amx(a, permute_for(bits_per_index), groups, p.act);
    transpose_scales(a, p.scales);
  });
}

void cq_matmul(const codec::CqMatrix& w, const Int8Codebook& cb, const QuantizedActivations& a, uint32_t row_begin,
               uint32_t row_end, float* y, size_t y_stride) {
  if (row_begin >= row_end || a.count == 0) return;
  const bool few_rows = row_end - row_begin < kMinRows;
  if (a.count < (few_rows ? kMinVectorsFewRows : kMinVectors) || !simd_matmul_ok(w, cb, a, /*no_minus128=*/false)) {
    kAvx512VbmiKernels.cq_matmul(w, cb, a, row_begin, row_end, y, y_stride);
    return;
  }
  const uint32_t bits_per_index = codec::index_bits(w.bits);
  const uint32_t groups = w.in_pad / kG;
  const uint32_t rows = row_end - row_begin;
  const uint32_t blocks = (a.count + kVecs - 1) / kVecs;
  const size_t stride = scale_stride(a.count);  // >= blocks * kVecs, padding zero
  const PreparedInput& input = prepare_input_amx(a, bits_per_index);
  const size_t norm_bytes = round_up64(size_t(rows) * groups * sizeof(float));
  const size_t acc_bytes = round_up64(size_t(kRows) * blocks * kVecs * sizeof(float));
  auto* base =
      static_cast<uint8_t*>(tls_amx_scratch.call.get(norm_bytes + acc_bytes + 2 * kRows * kG + 2 * kRows * kVecs * 4));
  auto* norms = reinterpret_cast<float*>(base);
  auto* acc = reinterpret_cast<float*>(base + norm_bytes);
  auto* wbuf = reinterpret_cast<int8_t*>(base + norm_bytes + acc_bytes);
  auto* cbuf = reinterpret_cast<int32_t*>(base + norm_bytes + acc_bytes + 2 * kRows * kG);

  x86::convert_norms(w.norms + 2 * size_t(row_begin) * groups, size_t(rows) * groups, norms);
  alignas(16) int8_t table[16];
  code_table(cb, w.bits, table);
  const RowTables t = row_tables(bits_per_index, table);

  memory_barrier();  // the prepared activations are read by tile loads
  _tile_loadconfig(&kTileConfig);
  auto* const rows_of_width = bits_per_index == 1   ? matmul_rows<Row1>
                              : bits_per_index == 2 ? matmul_rows<Row2>
                              : bits_per_index == 3 ? matmul_rows<Row3>
                                                    : matmul_rows<Row4>;
  rows_of_width(w, t, input.act, norms, input.scales, stride, a.count, cb.scale, row_begin, row_end, y, y_stride, acc,
                wbuf, cbuf);
  _tile_release();
}

}  // namespace amx
}  // namespace

// The rest of the table is avx512-vbmi's: called through that table rather
// than instantiated again here (its tiles are ~100 KB of code).
void quantize_activations(const float* x, uint32_t in, uint32_t count, QuantizedActivations& out) {
  kAvx512VbmiKernels.quantize_activations(x, in, count, out);
}
void dequantize_row(const codec::CqMatrix& w, const float* codebook, uint32_t r, float* out) {
  kAvx512VbmiKernels.dequantize_row(w, codebook, r, out);
}

// Constant-initialised (no code runs to build it); declared in dispatch.cpp.
extern const KernelTable kAvx512AmxKernels;
const KernelTable kAvx512AmxKernels{"avx512-amx", quantize_activations, amx::cq_matmul, dequantize_row};

}  // namespace cact::kernels
#endif
