#pragma once
// cq_matmul of the x86 tables: the input prepared once per version and
// thread, the norms per call, then the tiles (tiles.h) driven over the rows.
#include "kernels/x86/tiles.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__)

namespace cact::kernels {
namespace {
namespace x86 {

// The lookup tables derived from a code table (tables_for, and with 512-bit
// registers the vpermb tables of CQ2), remembered per thread and width: a
// decode step runs ~170 products over the same few code tables, and deriving
// them on every call (byte loops) is not free. Trivial type:
// zero-initialised thread-local storage, no guard.
struct DerivedTables {
  bool valid;
  int8_t e[16];
  __m256i t[4];
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
  __m512i vbmi[4];
#endif
};

template <Dot kDot, class U>
void cq_matmul_width(CqMatmulJob& job, const int8_t table[16], uint32_t row_begin, uint32_t row_end, uint32_t count) {
  thread_local DerivedTables memo;  // one per instantiation: per table and width
  if (!memo.valid || std::memcmp(memo.e, table, sizeof memo.e) != 0) {
    tables_for(U::kBits, table, memo.t);
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
    if constexpr (kDot == Dot::kAvx512Vnni && U::kBits == 2) vbmi_pairs_tables(table, memo.vbmi);
#endif
    std::memcpy(memo.e, table, sizeof memo.e);
    memo.valid = true;
  }
  for (int k = 0; k < 4; ++k) job.tables[k] = memo.t[k];
  // L2 budget 96 KiB: each vector keeps its activations (AVX2: and their absolute values).
  const size_t per_vector = (kDot == Dot::kAvx2 ? 2 : 1) * size_t(job.in_pad);
  const auto budget = uint32_t(96 * 1024 / per_vector);
  if constexpr (kDot == Dot::kAvx512Vnni) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
    Tiles512<U> tiles{job, {}, {}};
    for (int k = 0; k < 4; ++k) tiles.t512[k] = table512(job.tables[k]);
    if constexpr (U::kBits == 2) {
      for (int k = 0; k < 4; ++k) tiles.vbmi[k] = memo.vbmi[k];
      // The row-lane tiles for whole blocks of 8 vectors (job.row_lane_vectors
      // of them, see cq_matmul_impl), the tiles below for the rest.
      if (job.row_lane_vectors > 0) {
        const uint32_t full = job.row_lane_vectors;
        for (uint32_t r = row_begin; r < row_end; r += kRowTileRows) {
          const uint32_t rows = row_end - r < kRowTileRows ? row_end - r : kRowTileRows;
          decode_rows_vbmi(job, memo.vbmi[0], r, rows, job.row_tile);
          for (uint32_t b = 0; b < full / kRowTileVectors; ++b) {
            cq_tile512_rows<kRowTileVectors>(job, job.row_tile, r, rows, b);
          }
        }
        if (full == count) return;
        job.act += size_t(full) * job.in_pad;
        job.scales += full;
        job.corr += full;
        job.y += size_t(full) * job.y_stride;
        count -= full;
      }
    }
    tile_matmul<16>(tiles, row_begin, row_end, count, budget);
#else
    static_assert(kDot != Dot::kAvx512Vnni, "the 512-bit table needs -mavx512f -mavx512bw -mavx512vl -mavx512vnni");
#endif
  } else {
    tile_matmul(Tiles<kDot, U>{job}, row_begin, row_end, count, budget);
  }
}

// The input as the tiles read it: activations permuted into the unpackers'
// column order (AVX2: and their absolute values), bias corrections, scales
// transposed, the row-lane tiles' blocks. Kept per thread between calls:
// q/k/v/gate and the three Φ products each read one input in several calls (a
// matrix per call, a row range per pool task), and preparing it is most of a
// Φ product's time. Reused while the activations keep their version
// (QuantizedActivations::version) and the layout is the same.
thread_local MatmulScratch tls_scratch;

template <Dot kDot>
void fill_prepared_input(const QuantizedActivations& a, const PreparedInputKey& key, PreparedInput& p) {
  constexpr bool kAbs = kDot == Dot::kAvx2;
  // (the layouts only the 512-bit tiles use, constant elsewhere)
  constexpr bool k512 = kDot == Dot::kAvx512Vnni;
  const uint32_t in_pad = key.in_pad, count = key.count, block_vectors = k512 ? key.block_vectors : 0;
  const bool compact = k512 && key.compact, paired = k512 && key.paired;
  const uint32_t groups = in_pad / kG;
  const size_t act_bytes = size_t(count) * in_pad;
  const size_t stride = compact ? 1 : scale_stride(count);
  const size_t factor_bytes = round_up64(size_t(groups) * stride * sizeof(float));
  // (+ 128: one vector's activations in the paired layout of cq_tile512_pairs fill an even number of groups)
  const size_t act_total = (kAbs ? 2 : 1) * round_up64(act_bytes + 128);
  const size_t blocks_bytes = round_up64(size_t(block_vectors) * in_pad);
  auto* base = static_cast<uint8_t*>(p.memory.get(act_total + 2 * factor_bytes + blocks_bytes));
  int8_t* const act = p.act = reinterpret_cast<int8_t*>(base);
  uint8_t* const act_abs = p.act_abs = kAbs ? base + round_up64(act_bytes) : nullptr;
  float* const scales = p.scales = reinterpret_cast<float*>(base + act_total);
  int32_t* const corr = p.corr = reinterpret_cast<int32_t*>(base + act_total + factor_bytes);
  int8_t* const act_blocks = p.act_blocks = reinterpret_cast<int8_t*>(base + act_total + 2 * factor_bytes);
  // [block][group][step][vector][4]: vector v's 4 columns of step s of group g.
  const uint32_t steps = in_pad / 4;
  for (uint32_t v = 0; v < block_vectors; ++v) {
    const int8_t* src = activation_q(a) + size_t(v) * in_pad;
    int8_t* dst = act_blocks + (size_t(v / kRowTileVectors) * kRowTileVectors * steps + v % kRowTileVectors) * 4;
    for (uint32_t s = 0; s < steps; ++s) std::memcpy(dst + size_t(s) * kRowTileVectors * 4, src + 4 * s, 4);
  }
  const PermuteMasks& pm = masks_for(key.bits_per_index);
#if defined(__AVX512F__) && defined(__AVX512BW__)
  const PermuteMasks512& pm512 = masks512_for(key.bits_per_index);
#endif
  if (paired && groups % 2 == 1) {  // the missing second group of the last pair
    for (int k = 0; k < 4; ++k) std::memset(act + size_t(groups - 1) * kG + 64 * k + 32, 0, 32);
  }
  for (uint32_t v = 0; v < count; ++v) {
    for (uint32_t g = 0; g < groups; ++g) {
      const size_t off = size_t(v) * in_pad + size_t(g) * kG;
      if constexpr (kDot == Dot::kAvx512Vnni) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
        if (paired) {
          permute_group512(pm512, activation_q(a) + off, act + size_t(g / 2) * 2 * kG + (g % 2) * 32, 64);
        } else if (v >= block_vectors) {  // (the row-lane tiles read act_blocks)
          permute_group512(pm512, activation_q(a) + off, act + off, 32);
        }
#endif
      } else {
        permute_group(pm, activation_q(a) + off, act + off, kAbs ? act_abs + off : nullptr);
      }
      if constexpr (!kAbs) corr[g * stride + v] = bias_correction(activation_q(a) + off);
    }
  }
  if constexpr (!kAbs) {
    for (uint32_t g = 0; g < groups; ++g) {
      for (size_t v = count; v < stride; ++v) corr[g * stride + v] = 0;
    }
  }
  if (compact) {
    std::memcpy(scales, activation_scale(a), groups * sizeof(float));
  } else {
    transpose_scales(a, scales);
  }
}

template <Dot kDot>
const PreparedInput& prepare_input(const QuantizedActivations& a, const PreparedInputKey& key) {
  return keep_prepared(tls_scratch.input, key, [&](PreparedInput& p) { fill_prepared_input<kDot>(a, key, p); });
}

// `vbmi` (avx512-vbmi table only): the 1-vector CQ2 tiles look up with vpermb.
template <Dot kDot>
void cq_matmul_impl(const codec::CqMatrix& w, const Int8Codebook& cb, const QuantizedActivations& a, uint32_t row_begin,
                    uint32_t row_end, float* y, size_t y_stride, bool vbmi) {
  if (row_begin >= row_end || a.count == 0) return;
  // The VNNI dot takes any int8 weight (biased table); AVX2 needs |w| <= 127.
  if (!simd_matmul_ok(w, cb, a, /*no_minus128=*/kDot == Dot::kAvx2)) {
    scalar_kernels().cq_matmul(w, cb, a, row_begin, row_end, y, y_stride);
    return;
  }
  constexpr bool kAbs = kDot == Dot::kAvx2;
  const uint32_t bits_per_index = codec::index_bits(w.bits);
  const uint32_t groups = w.in_pad / kG;
  const uint32_t rows = row_end - row_begin;
  PreparedInputKey key = prepared_input_key(a, bits_per_index);
  // The 512-bit 1-vector tiles read one scale and one correction per group
  // (broadcasts), so with one vector those are stored unpadded ([group]).
  key.compact = kDot == Dot::kAvx512Vnni && a.count == 1;
  // avx512-vnni, one vector, 2-bit indices: the paired layout of cq_tile512_pairs.
  key.paired = kDot == Dot::kAvx512Vnni && a.count == 1 && bits_per_index == 2;
  // avx512-vbmi, CQ2, 8 vectors or more, a row range of a whole row-lane tile
  // or more (fewer rows, e.g. the Φ and probe products of 4-16 rows, would
  // leave most lanes idle): the row-lane tiles' activation blocks.
  const bool row_lanes = kDot == Dot::kAvx512Vnni && vbmi && bits_per_index == 2 && rows >= kRowTileRows;
  key.block_vectors = row_lanes ? a.count / kRowTileVectors * kRowTileVectors : 0;
  const PreparedInput& input = prepare_input<kDot>(a, key);

  const size_t norm_count = size_t(rows) * groups;
  // (one vector: room for one tile's rows, which tile_norms converts)
  const size_t norms_bytes = round_up64((a.count > 1 ? norm_count : size_t(kMaxTileRows) * groups) * sizeof(float));
  const size_t row_tile_bytes = key.block_vectors > 0 ? size_t(kRowTileRows) * (w.in_pad + groups * sizeof(float)) : 0;
  auto* base = static_cast<uint8_t*>(tls_scratch.call.get(norms_bytes + row_tile_bytes));
  auto* norms = reinterpret_cast<float*>(base);
  // The norms of the row range are contiguous FP16: with several vectors
  // convert them all here, 8 at a time; with one, each tile converts its own
  // rows (tile_norms).
  if (a.count > 1) convert_norms(w.norms + 2 * size_t(row_begin) * groups, norm_count, norms);

  alignas(16) int8_t table[16];
  code_table(cb, w.bits, table);
  if constexpr (!kAbs) {
    for (int e = 0; e < 16; ++e) table[e] = int8_t(uint8_t(table[e]) ^ 0x80);  // w + 128 as u8
  }
  CqMatmulJob job{};
  job.packed = w.packed;
  job.row_bytes = w.row_bytes;
  job.groups = groups;
  job.in_pad = w.in_pad;
  job.act = input.act;
  job.act_blocks = input.act_blocks;
  job.row_lane_vectors = key.block_vectors;
  job.row_tile = reinterpret_cast<int8_t*>(base + norms_bytes);
  job.act_abs = input.act_abs;
  job.corr = input.corr;
  job.norms = norms;
  job.half = a.count == 1 ? w.norms : nullptr;
  job.paired = key.paired;
  job.vbmi = vbmi;
  job.row_begin = row_begin;
  job.rows = w.out;
  job.scales = input.scales;
  job.scale_stride = key.compact ? 1 : scale_stride(a.count);
  job.cb_scale = cb.scale;
  job.y = y;
  job.y_stride = y_stride;
  with_unpacker<Unpack1, Unpack2, Unpack3, Unpack4>(bits_per_index, [&](auto unpack) {
    cq_matmul_width<kDot, decltype(unpack)>(job, table, row_begin, row_end, a.count);
  });
}

template <Dot kDot>
void cq_matmul(const codec::CqMatrix& w, const Int8Codebook& cb, const QuantizedActivations& a, uint32_t row_begin,
               uint32_t row_end, float* y, size_t y_stride) {
  cq_matmul_impl<kDot>(w, cb, a, row_begin, row_end, y, y_stride, false);
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
// The avx512-vbmi table's product: avx512-vnni's, with VbmiPairs in the 1-vector CQ2 tiles.
[[maybe_unused]] void cq_matmul_vbmi(const codec::CqMatrix& w, const Int8Codebook& cb, const QuantizedActivations& a,
                                     uint32_t row_begin, uint32_t row_end, float* y, size_t y_stride) {
  cq_matmul_impl<Dot::kAvx512Vnni>(w, cb, a, row_begin, row_end, y, y_stride, true);
}
#endif

}  // namespace x86
}  // namespace
}  // namespace cact::kernels

#endif  // x86-64 with AVX2 + F16C
