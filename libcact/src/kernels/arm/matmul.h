#pragma once
// cq_matmul of the NEON tables: activations permuted and scales transposed
// once per input and thread, norms per call, then the tiles (tiles.h) driven
// over the rows.
#include "kernels/arm/tiles.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

namespace cact::kernels {
namespace {
namespace neon {

// The input in the unpackers' column order and its scales transposed, kept
// per thread between calls while its key holds (see x86/matmul.h).
thread_local MatmulScratch tls_scratch;

inline const PreparedInput& prepare_input(const QuantizedActivations& a, const PreparedInputKey& key) {
  return keep_prepared(tls_scratch.input, key, [&](PreparedInput& p) {
    const uint32_t groups = key.in_pad / kG;
    const size_t act_bytes = size_t(key.count) * key.in_pad;
    const size_t scale_bytes = size_t(groups) * scale_stride(key.count) * sizeof(float);
    auto* base = static_cast<uint8_t*>(p.memory.get(round_up64(act_bytes) + scale_bytes));
    p.act = reinterpret_cast<int8_t*>(base);
    p.scales = reinterpret_cast<float*>(base + round_up64(act_bytes));
    const PermuteIndices& pi = indices_for(key.bits_per_index);
    for (size_t off = 0; off < act_bytes; off += kG) permute_group(pi, activation_q(a) + off, p.act + off);
    transpose_scales(a, p.scales);
  });
}

template <bool kDotprod, class U>
void cq_matmul_width(CqMatmulJob& job, const int8_t table[16], uint32_t row_begin, uint32_t row_end, uint32_t count) {
  tables_for(U::kBits, table, job.tables);
  // L2 budget 64 KiB: each vector keeps its int8 activations.
  tile_matmul(Tiles<kDotprod, U>{job}, row_begin, row_end, count, uint32_t(64 * 1024 / (1 * size_t(job.in_pad))));
}

template <bool kDotprod>
void cq_matmul(const codec::CqMatrix& w, const Int8Codebook& cb, const QuantizedActivations& a, uint32_t row_begin,
               uint32_t row_end, float* y, size_t y_stride) {
  if (row_begin >= row_end || a.count == 0) return;
  if (!simd_matmul_ok(w, cb, a, /*no_minus128=*/!kDotprod)) {
    scalar_kernels().cq_matmul(w, cb, a, row_begin, row_end, y, y_stride);
    return;
  }
  const uint32_t bits_per_index = codec::index_bits(w.bits);
  const uint32_t groups = w.in_pad / kG;
  const PreparedInput& input = prepare_input(a, prepared_input_key(a, bits_per_index));
  auto* norms =
      static_cast<float*>(tls_scratch.call.get(blocked_norm_count(row_end - row_begin, groups) * sizeof(float)));
  blocked_norms(w.norms + 2 * size_t(row_begin) * groups, row_end - row_begin, groups, norms);

  alignas(16) int8_t table[16];
  code_table(cb, w.bits, table);
  CqMatmulJob job{};
  job.packed = w.packed;
  job.row_bytes = w.row_bytes;
  job.groups = groups;
  job.in_pad = w.in_pad;
  job.act = input.act;
  job.norms = norms;
  job.row_begin = row_begin;
  job.scales = input.scales;
  job.scale_stride = scale_stride(a.count);
  job.cb_scale = cb.scale;
  job.y = y;
  job.y_stride = y_stride;
  with_unpacker<Unpack1, Unpack2, Unpack3, Unpack4>(bits_per_index, [&](auto unpack) {
    cq_matmul_width<kDotprod, decltype(unpack)>(job, table, row_begin, row_end, a.count);
  });
}

}  // namespace neon
}  // namespace
}  // namespace cact::kernels

#endif  // aarch64 NEON
