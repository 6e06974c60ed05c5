#include "engine/linear.h"

#include <algorithm>
#include <cstring>

#include "cact/error.h"

namespace cact::engine {

Linear::Linear(const Weights& w, Numerics numerics, const kernels::KernelTable& kernels)
    : w_(&w), numerics_(numerics), kernels_(&kernels) {}

void Linear::reserve(LinearInput& input, uint32_t max_in, uint32_t max_count, bool prologue) {
  if (numerics_ == Numerics::int8) {
    const uint32_t in_pad = codec::padded_in(max_in, codec::kGroup);
    input.q.q.resize(size_t(in_pad) * max_count);
    input.q.scale.resize(size_t(in_pad / codec::kGroup) * max_count);
    // Per-thread parts of a split load (load): at most ceil(max_count / threads) vectors each.
    const uint32_t per = (max_count + uint32_t(parts_.size()) - 1) / uint32_t(parts_.size());
    // A block of vectors up to max_in wide is at most this many floats (streamed_block).
    const size_t floats = std::max(kStreamedFloats, max_in);
    for (std::vector<float>& scratch : prep_scratch_) {
      if (prologue && scratch.size() < floats) scratch.resize(floats);
    }
    for (kernels::QuantizedActivations& part : parts_) {
      if (part.q.size() < size_t(in_pad) * per) part.q.resize(size_t(in_pad) * per);
      if (part.scale.size() < size_t(in_pad / codec::kGroup) * per)
        part.scale.resize(size_t(in_pad / codec::kGroup) * per);
    }
  } else {
    reserve_dense_row(max_in);  // the int8 numerics never use it (rows go through the kernel table)
    if (prologue && input.floats.size() < size_t(max_in) * max_count) input.floats.resize(size_t(max_in) * max_count);
  }
}

void Linear::set_pool(ThreadPool* pool) {
  pool_ = pool;
  parts_.resize(pool != nullptr ? pool->size() : 1);
  prep_scratch_.resize(parts_.size());
}

void Linear::reserve_dense_row(uint32_t max_in) {
  const uint32_t in_pad = codec::padded_in(max_in, codec::kGroup);
  if (dense_.size() < in_pad) dense_.resize(in_pad);
}

// Vectors are quantised independently: a batch splits by vectors over the
// pool (each part into its thread's scratch, then copied into place), so the
// bits do not depend on the split. Small batches stay on the caller.
Linear::Split Linear::split(uint32_t in, uint32_t count) const {
  // Several parts per thread: the pool hands them out as threads free up, so a
  // thread that starts late or runs slower does not hold the other one up.
  const bool one = pool_ == nullptr || pool_->size() == 1 || uint64_t(count) * in < 8192;
  const uint32_t parts = one ? 1 : std::min(pool_->size() * kPartsPerThread, count);
  return {parts, (count + parts - 1) / parts, count};
}

void Linear::prepare_split(LinearInput& input, const float* x, uint32_t in, uint32_t count) {
  input.in = in;
  input.count = count;
  input.x = x;
  if (numerics_ != Numerics::int8) return;  // reference: the prologue alone splits
  kernels::QuantizedActivations& q = input.q;
  q.in = in;
  q.group = codec::kGroup;
  q.in_pad = codec::padded_in(in, q.group);
  q.count = count;
  if (q.q.size() < size_t(q.in_pad) * count) q.q.resize(size_t(q.in_pad) * count);
  if (q.scale.size() < size_t(q.groups()) * count) q.scale.resize(size_t(q.groups()) * count);
  q.mark_written();  // (the parts are all written before a product reads them)
}

void Linear::load_part(LinearInput& input, const float* first, uint32_t v0, uint32_t v1, uint32_t thread) {
  if (v0 >= v1 || numerics_ != Numerics::int8) return;
  kernels::QuantizedActivations& q = input.q;
  if (v0 == 0 && v1 == q.count) {  // the whole input (a decode step): no copy
    kernels_->quantize_activations(first, input.in, v1, q);
    return;
  }
  const size_t in_pad = q.in_pad, groups = q.groups();
  kernels::QuantizedActivations& part = parts_[thread];
  kernels_->quantize_activations(first, input.in, v1 - v0, part);
  std::memcpy(q.q.data() + v0 * in_pad, part.q.data(), (v1 - v0) * in_pad);
  std::memcpy(q.scale.data() + v0 * groups, part.scale.data(), (v1 - v0) * groups * sizeof(float));
}

void Linear::load_with_prologue(LinearInput& input, uint32_t in, uint32_t count, const void* fn, Prologue call) {
  const bool streamed = numerics_ == Numerics::int8;
  float* const x = streamed ? nullptr : input.floats.data();
  const size_t need = streamed ? size_t(streamed_block(in)) * in : size_t(in) * count;
  const bool reserved = streamed ? std::all_of(prep_scratch_.begin(), prep_scratch_.end(),
                                               [&](const std::vector<float>& s) { return s.size() >= need; })
                                 : input.floats.size() >= need;
  if (!reserved) fail("internal: a load with a prologue wider than its reserve (reserve with `prologue`)");
  prepare_split(input, x, in, count);
  const Split s = split(in, count);
  const auto part = [&](uint32_t p, uint32_t t) {
    const uint32_t v0 = s.begin(p), v1 = s.end(p);
    const uint32_t block = streamed ? streamed_block(in) : v1 - v0;
    for (uint32_t b0 = v0; b0 < v1; b0 += block) {
      const uint32_t b1 = std::min(v1, b0 + block);
      float* const first = streamed ? prep_scratch_[t].data() : x + size_t(b0) * in;
      for (uint32_t v = b0; v < b1; ++v) call(fn, v, t, first + size_t(v - b0) * in);
      load_part(input, first, b0, b1, t);  // (the reference numerics: nothing to quantise)
    }
  };
  if (s.parts <= 1) {
    part(0, 0);
  } else {
    pool_->run(s.parts, part);
  }
}

void Linear::load(LinearInput& input, const float* x, uint32_t in, uint32_t count) {
  const Split s = split(in, count);
  if (s.parts <= 1) return load_here(input, x, in, count);
  prepare_split(input, x, in, count);
  pool_->run(s.parts,
             [&](uint32_t p, uint32_t t) { load_part(input, x + size_t(s.begin(p)) * in, s.begin(p), s.end(p), t); });
}

void Linear::load_here(LinearInput& input, const float* x, uint32_t in, uint32_t count) {
  input.in = in;
  input.count = count;
  input.x = x;
  if (numerics_ == Numerics::int8) kernels_->quantize_activations(x, in, count, input.q);
}

void Linear::row(const codec::CqMatrix& m, uint32_t r, float* out) const {
  // The same bits from every table; the reference numerics keep the scalar oracle.
  const kernels::KernelTable& k = numerics_ == Numerics::int8 ? *kernels_ : kernels::scalar_kernels();
  k.dequantize_row(m, w_->codebook_of(m).data(), r, out);
}

void Linear::apply(const LinearInput& input, const codec::CqMatrix& m, uint32_t row_begin, uint32_t row_end, float* y,
                   size_t y_stride) {
  apply_many(input, {{&m, row_begin, row_end, y, y_stride}});
}

void Linear::apply_here(const LinearInput& input, const codec::CqMatrix& m, uint32_t row_begin, uint32_t row_end,
                        float* y, size_t y_stride) {
  if (input.in != m.in) fail("internal: matrix input width does not match the prepared activations");
  if (numerics_ == Numerics::int8) {
    kernels_->cq_matmul(m, w_->int8_codebook_of(m), input.q, row_begin, row_end, y, y_stride);
    return;
  }
  reserve_dense_row(m.in);
  float* dense = dense_.data();
  for (uint32_t r = row_begin; r < row_end; ++r) {
    row(m, r, dense);
    for (uint32_t v = 0; v < input.count; ++v) {
      const float* x = input.x + size_t(v) * input.in;
      double sum = 0.0;
      for (uint32_t i = 0; i < m.in; ++i) sum += double(dense[i]) * double(x[i]);
      y[size_t(v) * y_stride + r] = float(sum);
    }
  }
}

void Linear::apply_small(const LinearInput& input, std::initializer_list<LinearJob> jobs) {
  constexpr uint32_t kRows = 8;  // the kernels' row tile
  uint32_t tasks = 0, rows = 0;
  for (const LinearJob& j : jobs) {
    tasks += (j.row_end - j.row_begin + kRows - 1) / kRows;
    rows += j.row_end - j.row_begin;
  }
  // Not worth a pool job below ~1 M MACs (each task would be a few µs).
  const uint64_t macs = uint64_t(rows) * input.count * input.in;
  if (numerics_ != Numerics::int8 || pool_ == nullptr || pool_->size() == 1 || tasks < 2 || macs < (1u << 20)) {
    for (const LinearJob& j : jobs) apply(input, *j.m, j.row_begin, j.row_end, j.y, j.y_stride);
    return;
  }
  for (const LinearJob& j : jobs) {
    if (input.in != j.m->in) fail("internal: matrix input width does not match the prepared activations");
  }
  pool_->run(tasks, [&](uint32_t task, uint32_t) {
    for (const LinearJob& j : jobs) {
      const uint32_t n = (j.row_end - j.row_begin + kRows - 1) / kRows;
      if (task >= n) {
        task -= n;
        continue;
      }
      const uint32_t b = j.row_begin + task * kRows;
      kernels_->cq_matmul(*j.m, w_->int8_codebook_of(*j.m), input.q, b, std::min(j.row_end, b + kRows), j.y,
                          j.y_stride);
      return;
    }
  });
}

// Rows are independent: any split gives the same bits. Parts are multiples of
// 16 rows (the kernels' AVX-512 tile; two AVX2 tiles of 8) and hold at least
// ~128 row-vectors each.
void Linear::apply_many(const LinearInput& input, std::initializer_list<LinearJob> jobs) {
  uint32_t rows = 0;
  for (const LinearJob& j : jobs) rows += j.row_end - j.row_begin;
  const uint32_t threads = pool_ != nullptr && numerics_ == Numerics::int8 ? pool_->size() : 1;
  // A batch (prefill) splits into several parts per thread, handed out as
  // threads free up (rows of different matrices cost differently); one vector
  // (decode) into one part per thread.
  const uint32_t parts = input.count > 1 ? threads * kPartsPerThread : threads;
  const uint32_t step = (rows / parts + 15) / 16 * 16;
  if (threads <= 1 || uint64_t(rows) * input.count < 128 * uint64_t(threads) || step >= rows) {
    for (const LinearJob& j : jobs) apply_here(input, *j.m, j.row_begin, j.row_end, j.y, j.y_stride);
    return;
  }
  const uint32_t tasks = (rows + step - 1) / step;
  pool_->run(tasks, [&](uint32_t part, uint32_t) {
    // Part covers [lo, hi) of the concatenated rows.
    const uint32_t lo = part * step, hi = std::min(rows, lo + step);
    uint32_t offset = 0;
    for (const LinearJob& j : jobs) {
      const uint32_t n = j.row_end - j.row_begin;
      const uint32_t b = std::max(lo, offset), e = std::min(hi, offset + n);
      if (b < e) apply_here(input, *j.m, j.row_begin + (b - offset), j.row_begin + (e - offset), j.y, j.y_stride);
      offset += n;
    }
  });
}

size_t Linear::bytes() const {
  size_t b = dense_.capacity() * sizeof(float);
  for (const kernels::QuantizedActivations& p : parts_) b += p.q.capacity() + p.scale.capacity() * sizeof(float);
  return b;
}

}  // namespace cact::engine
