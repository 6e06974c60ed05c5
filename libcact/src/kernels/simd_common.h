#pragma once
// Portable pieces shared by the SIMD tables (private to kernels/). This header
// is included by translation units built with ISA flags (avx2.cpp, neon*.cpp),
// so everything here has internal linkage (anonymous namespace) and uses no
// std:: template another translation unit could also instantiate: the linker
// keeps one copy of a weak symbol, and an ISA-flagged copy must never be the
// one the scalar path calls. See docs/KERNELS.md "Dispatch".
#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include "cact/codec.h"
#include "cact/kernels.h"
#include "kernels/scalar.h"

namespace cact::kernels {

// Storage of QuantizedActivations, defined in dispatch.cpp (baseline
// flags) so that no ISA-flagged translation unit instantiates std::vector
// members (at -O0 they are emitted as weak symbols).
const int8_t* activation_q(const QuantizedActivations& a);
int8_t* activation_q(QuantizedActivations& a);
const float* activation_scale(const QuantizedActivations& a);
float* activation_scale(QuantizedActivations& a);

namespace {

constexpr uint32_t kSimdGroup = codec::kGroup;  // the SIMD paths handle group 128 only

// The scale of an activation group (absmax of its rotated values / 127) and
// its inverse. A group whose inverse is not a positive finite float (absmax 0,
// infinite or NaN, or below ~3.7e-37 so that 1/scale overflows) quantises to
// zeros with scale 0 in every table: otherwise its values times the inverse
// would be infinite or NaN, which each table's rounding treats its own way.
struct GroupScale {
  float scale, inv;
  bool zero() const { return inv == 0.0f; }
};
inline GroupScale group_scale(float absmax) {
  const float s = absmax / 127.0f;
  const float inv = 1.0f / s;
  if (inv > 0.0f && inv <= FLT_MAX) return {s, inv};
  return {0.0f, 0.0f};
}

// Per-thread scratch (permuted activations, per-tile factors): raw aligned
// operator new, grows only.
struct SimdScratch {
  void* data = nullptr;
  size_t size = 0;
  SimdScratch() = default;
  SimdScratch(const SimdScratch&) = delete;
  SimdScratch& operator=(const SimdScratch&) = delete;
  ~SimdScratch() { release(); }
  void release() {
    if (data != nullptr) ::operator delete(data, std::align_val_t(64));
    data = nullptr;
    size = 0;
  }
  void* get(size_t bytes) {
    if (bytes > size) {
      release();
      data = ::operator new(bytes, std::align_val_t(64));
      size = bytes;
    }
    return data;
  }
};

// What a table's prepared input (the activations in its tiles' layout, kept
// per thread between cq_matmul calls) was made from. A call reuses it only
// when its own key is equal and names a version (QuantizedActivations::version);
// the table-specific fields stay 0 where a table has no such layout.
struct PreparedInputKey {
  uint64_t version = 0;  // 0: nothing kept
  const int8_t* source = nullptr;
  uint32_t count = 0, in_pad = 0, bits_per_index = 0;
  uint32_t block_vectors = 0;  // x86: vectors in row-lane blocks
  bool compact = false;        // x86: one vector's scales and corrections unpadded
  bool paired = false;         // x86: one vector in cq_tile512_pairs' layout
  bool operator==(const PreparedInputKey&) const = default;
  bool reuses(const PreparedInputKey& kept) const { return version != 0 && *this == kept; }
};

// A table's prepared input, its arrays in `memory` (what a table does not use
// stays null), and each thread's scratch of the product (one thread_local per
// table: one initialisation guard).
struct PreparedInput {
  PreparedInputKey key;
  SimdScratch memory;
  int8_t* act = nullptr;         // activations in the unpackers' order
  float* scales = nullptr;       // scales, [group][scale_stride] (x86, one vector: [group])
  uint8_t* act_abs = nullptr;    // x86 AVX2: |act|
  int32_t* corr = nullptr;       // x86 VNNI: bias corrections, laid out as the scales
  int8_t* act_blocks = nullptr;  // x86 avx512-vbmi: the row-lane tiles' blocks
};

struct MatmulScratch {
  PreparedInput input;
  SimdScratch call;  // per call: the row range's float norms (x86: and the row-lane tile)
};

// The kept input for `key`: as it is when it already holds key's input,
// otherwise rewritten by fill(p), with no key valid while that runs.
template <class Fill>
const PreparedInput& keep_prepared(PreparedInput& p, const PreparedInputKey& key, Fill fill) {
  if (key.reuses(p.key)) return p;
  p.key = PreparedInputKey{};
  fill(p);
  p.key = key;
  return p;
}

inline PreparedInputKey prepared_input_key(const QuantizedActivations& a, uint32_t bits_per_index) {
  PreparedInputKey key;
  key.version = a.version;
  key.source = activation_q(a);
  key.count = a.count;
  key.in_pad = a.in_pad;
  key.bits_per_index = bits_per_index;
  return key;
}

inline size_t round_up64(size_t n) { return (n + 63) & ~size_t(63); }

// Column order of one group for an unpacker: position j of its concatenated
// code registers holds column perm[j].
struct GroupLayout {
  uint8_t perm[kSimdGroup];
};

// Derive the layout of an unpacker by running it: pack the column numbers
// w bits at a time (LSB-first, FORMAT.md "CQ blob"), unpack, reassemble.
// `codes(packed, out128)` writes the 128 codes in register order.
template <uint32_t kIndexBits, class Codes>
GroupLayout derive_group_layout(Codes codes) {
  GroupLayout layout{};
  for (uint32_t shift = 0; shift < 7; shift += kIndexBits) {
    alignas(64) uint8_t packed[64] = {};
    for (uint32_t col = 0; col < kSimdGroup; ++col) {
      const uint32_t code = (col >> shift) & ((1u << kIndexBits) - 1);
      const uint32_t bit = col * kIndexBits;
      packed[bit / 8] = uint8_t(packed[bit / 8] | (code << (bit % 8)));
      if (bit % 8 + kIndexBits > 8) packed[bit / 8 + 1] = uint8_t(packed[bit / 8 + 1] | (code >> (8 - bit % 8)));
    }
    alignas(64) uint8_t got[kSimdGroup];
    codes(packed, got);
    for (uint32_t j = 0; j < kSimdGroup; ++j) layout.perm[j] = uint8_t(layout.perm[j] | (got[j] << shift));
  }
  return layout;
}

// The 16-entry lookup table by packed code: the int8 entries themselves, or
// for ternary the crumb order 0,1,2,3 -> trit 1,2,(invalid, read as 1),0 —
// exactly what the scalar oracle does with the invalid crumb.
inline void code_table(const Int8Codebook& cb, uint32_t bits, int8_t table[16]) {
  std::memcpy(table, cb.q, 16);
  if (bits == codec::kTernary) {
    table[0] = cb.q[1];
    table[1] = cb.q[2];
    table[2] = cb.q[1];
    table[3] = cb.q[0];
  }
}

// The 16-entry nibble lookup tables of a width, derived from the code table
// `e` (x86 and NEON unpackers): one 4-bit index serves several codes.
//   width 1:          t[k][n] = e[bit k of n], k = 0..3
//   width 2, ternary: t[0][n] = e[n & 3] (crumb 0), t[1][n] = e[n >> 2] (crumb 1); t[2], t[3] = t[0], t[1]
//   width 3, 4:       t[k] = e (the index is the code)
struct NibbleTables {
  int8_t t[4][16];
};

inline NibbleTables nibble_tables(uint32_t index_bits, const int8_t e[16]) {
  NibbleTables nt{};
  for (int k = 0; k < 4; ++k) {
    for (int n = 0; n < 16; ++n) {
      int code = n;
      if (index_bits == 1) code = (n >> k) & 1;
      if (index_bits == 2) code = k % 2 == 0 ? n & 3 : n >> 2;
      nt.t[k][n] = e[code];
    }
  }
  return nt;
}

// The group loop of dequantize_row, shared by the ISAs: per 128-group its
// indices (a group starts on a byte boundary for every width: 16 bytes per
// index bit) and its norm go to `group(indices, norm, dst)`, which writes the
// group's 128 floats; a ragged last group goes through a buffer. Other group
// sizes take the scalar table. kUnpacked = false passes the group's packed
// bytes instead, for a caller that decodes them itself.
template <bool kUnpacked = true, class Group>
inline void dequantize_row_by_groups(const codec::CqMatrix& w, const float* codebook, uint32_t r, float* out,
                                     Group group) {
  if (w.group != kSimdGroup) {
    scalar_kernels().dequantize_row(w, codebook, r, out);
    return;
  }
  // (CqMatrix's inline members are not called here: see the header comment.)
  const uint8_t* row = w.packed + size_t(r) * w.row_bytes;
  const size_t group_bytes = size_t(kSimdGroup) * codec::index_bits(w.bits) / 8;
  alignas(64) uint8_t indices[kSimdGroup];
  alignas(64) float tail[kSimdGroup];
  for (uint32_t g = 0; g < w.in_pad / kSimdGroup; ++g) {
    if constexpr (kUnpacked) codec::unpack_indices(row + g * group_bytes, kSimdGroup, w.bits, indices);
    const uint32_t first = g * kSimdGroup;
    const uint32_t used = w.in - first < kSimdGroup ? w.in - first : kSimdGroup;
    float* dst = used == kSimdGroup ? out + first : tail;
    group(kUnpacked ? indices : row + g * group_bytes, w.norm(r, g), dst);
    if (dst == tail) std::memcpy(out + first, tail, used * sizeof(float));
  }
}

// Shapes the SIMD cq_matmul handles; anything else goes to the scalar oracle.
// `no_minus128`: the kernel needs |entry| <= 127 (int16 pair sums).
inline bool simd_matmul_ok(const codec::CqMatrix& w, const Int8Codebook& cb, const QuantizedActivations& a,
                           bool no_minus128) {
  bool ok = w.group == kSimdGroup && a.group == kSimdGroup && a.in_pad == w.in_pad && codec::valid_bits(w.bits);
  if (no_minus128) {
    for (int i = 0; i < 16; ++i) ok = ok && cb.q[i] != -128;
  }
  return ok;
}

// Calls run(U{}) with U the unpacker of `bits_per_index` (1..4) among an
// architecture's Unpack1..Unpack4: each width is a separate instantiation of
// the tiles, so the index width is a compile-time constant in the inner loops.
template <class Unpack1, class Unpack2, class Unpack3, class Unpack4, class Run>
inline void with_unpacker(uint32_t bits_per_index, const Run& run) {
  switch (bits_per_index) {
    case 1:
      return run(Unpack1{});
    case 2:
      return run(Unpack2{});
    case 3:
      return run(Unpack3{});
    default:
      return run(Unpack4{});
  }
}

// Row stride of the transposed activation scales: room for reading 8 lanes
// from any vector index below `count`.
inline size_t scale_stride(uint32_t count) { return ((size_t(count) + 7) & ~size_t(7)) + 8; }

// Activation scales transposed to [group][vector] (stride scale_stride),
// padding zeroed: a tile reads the scales of its vectors with one load.
inline void transpose_scales(const QuantizedActivations& a, float* out) {
  const uint32_t groups = a.in_pad / kSimdGroup;
  const size_t stride = scale_stride(a.count);
  const float* s = activation_scale(a);
  for (uint32_t g = 0; g < groups; ++g) {
    float* row = out + g * stride;
    for (uint32_t v = 0; v < a.count; ++v) row[v] = s[size_t(v) * groups + g];
    for (size_t v = a.count; v < stride; ++v) row[v] = 0.0f;
  }
}

// Rotate + quantise `count` vectors group by group with an ISA's
// `quantize_group(src, q, scale)` (128 floats in); a ragged last group is
// zero-padded first, as the scalar oracle does.
template <void (*kQuantizeGroup)(const float*, int8_t*, float*)>
inline void quantize_activations_by_group(const float* x, uint32_t in, uint32_t count, QuantizedActivations& out) {
  prepare_activations(in, count, out);
  constexpr uint32_t kG = codec::kGroup;
  const uint32_t groups = out.in_pad / kG;
  alignas(32) float padded[kG];
  for (uint32_t v = 0; v < count; ++v) {
    const float* src = x + size_t(v) * in;
    int8_t* q = activation_q(out) + size_t(v) * out.in_pad;
    float* scales = activation_scale(out) + size_t(v) * groups;
    for (uint32_t g = 0; g < groups; ++g) {
      const uint32_t col = g * kG;
      if (col + kG <= in) {
        kQuantizeGroup(src + col, q + col, scales + g);
      } else {
        const uint32_t n = in - col;
        std::memcpy(padded, src + col, n * sizeof(float));
        std::memset(padded + n, 0, (kG - n) * sizeof(float));
        kQuantizeGroup(padded, q + col, scales + g);
      }
    }
  }
}

// The tiling of a CQ product, shared by every ISA: `Tiles` provides
// `template <int R, int V> void tile(uint32_t row, uint32_t v0) const`, which
// computes R rows for V vectors. Rows go in tiles of R, leftovers in one tile
// of 8 and one of 4 rows (when R > 8: the 512-bit 1-vector tiles, whose
// per-group reduction costs the same for 2 rows as for 16, e.g. the 4-row Phi
// slices of needle3 would otherwise run as 2 x 2 rows), then tiles of 2 rows (when R > 2),
// then one at a time.
template <int R, int V, class Tiles>
inline void tile_rows(const Tiles& t, uint32_t row_begin, uint32_t row_end, uint32_t v0) {
  uint32_t r = row_begin;
  for (; r + R <= row_end; r += R) t.template tile<R, V>(r, v0);
  if constexpr (R > 8) {
    if (r + 8 <= row_end) {
      t.template tile<8, V>(r, v0);
      r += 8;
    }
    if (r + 4 <= row_end) {
      t.template tile<4, V>(r, v0);
      r += 4;
    }
  }
  if constexpr (R > 2) {
    for (; r + 2 <= row_end; r += 2) t.template tile<2, V>(r, v0);
  }
  for (; r < row_end; ++r) t.template tile<1, V>(r, v0);
}

// kLanes = outputs per tile (8: 256-bit and NEON tiles, 16: 512-bit). One
// vector: tiles of kLanes rows. Several: (kLanes/4) x 4 tiles (leftovers
// (kLanes/4) x 3, (kLanes/2) x 2, kLanes x 1), vectors in chunks of
// `chunk_budget` (rounded down to 4, at least 4) whose activations stay in L2
// while all rows pass; within a chunk, steps of kLanes rows run every vector
// block, so a row's packed bytes come from L1 for all but the first.
template <int kLanes = 8, class Tiles>
inline void tile_matmul(const Tiles& t, uint32_t row_begin, uint32_t row_end, uint32_t count, uint32_t chunk_budget) {
  if (count == 1) {
    tile_rows<kLanes, 1>(t, row_begin, row_end, 0);
    return;
  }
  const uint32_t chunk = chunk_budget < 4 ? 4 : chunk_budget & ~3u;
  constexpr uint32_t kStep = kLanes;
  for (uint32_t v0 = 0; v0 < count; v0 += chunk) {
    const uint32_t ve = count - v0 < chunk ? count : v0 + chunk;
    for (uint32_t r = row_begin; r < row_end; r += kStep) {
      const uint32_t re = row_end - r < kStep ? row_end : r + kStep;
      uint32_t v = v0;
      for (; v + 4 <= ve; v += 4) tile_rows<kLanes / 4, 4>(t, r, re, v);
      switch (ve - v) {
        case 3:
          tile_rows<kLanes / 4, 3>(t, r, re, v);
          break;
        case 2:
          tile_rows<kLanes / 2, 2>(t, r, re, v);
          break;
        case 1:
          tile_rows<kLanes, 1>(t, r, re, v);
          break;
        default:
          break;
      }
    }
  }
}

}  // namespace
}  // namespace cact::kernels
