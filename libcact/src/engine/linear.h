#pragma once
// y = W x for CQ matrices, in either numerics, with the input prepared once
// and shared by every matrix that reads it (q/k/v/gate read one normed vector):
//   reference: the input stays float; each weight row is dequantised on the fly
//              (indices -> codebook × norm -> inverse rotation) into scratch and
//              dotted in double. Never a dequantised copy of a whole matrix.
//   int8:      the input is rotated per 128-group and quantised to int8 once
//              (KernelTable::quantize_activations); cq_matmul does the rest.
// Output indexing follows the kernel table: y[v * y_stride + r] with the
// absolute row r, for rows [row_begin, row_end).
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "cact/codec.h"
#include "cact/engine.h"
#include "cact/kernels.h"
#include "engine/pool.h"
#include "engine/weights.h"

namespace cact::engine {

// One prepared input batch: `count` vectors of `in` floats.
struct LinearInput {
  kernels::QuantizedActivations q;  // int8 numerics
  const float* x = nullptr;         // reference numerics (caller keeps it alive)
  uint32_t in = 0, count = 0;
  size_t bytes() const { return q.q.capacity() + q.scale.capacity() * sizeof(float); }
};

// One product of a batch: rows [row_begin, row_end) of m into y (see apply).
struct LinearJob {
  const codec::CqMatrix* m;
  uint32_t row_begin, row_end;
  float* y;
  size_t y_stride;
};

class Linear {
 public:
  Linear(const Weights& w, Numerics numerics, const kernels::KernelTable& kernels);
  // Split int8 products by row range over this pool (nullptr: one thread).
  void set_pool(ThreadPool* pool);
  // Size scratch so that inputs up to max_in wide and max_count vectors never allocate.
  void reserve(LinearInput& input, uint32_t max_in, uint32_t max_count);
  void load(LinearInput& input, const float* x, uint32_t in, uint32_t count) {
    load(input, x, in, count, [](uint32_t, uint32_t) {});
  }
  // load() with a per-vector prologue: prep(v, thread) writes vector v of x
  // (on any pool thread, before that vector is quantised), so a per-token
  // stage and the quantisation of its output share one pool job.
  template <typename F>
  void load(LinearInput& input, const float* x, uint32_t in, uint32_t count, F&& prep) {
    const uint32_t parts = split_parts(in, count);
    if (parts <= 1) {
      for (uint32_t v = 0; v < count; ++v) prep(v, 0u);
      load_here(input, x, in, count);
      return;
    }
    prepare_split(input, x, in, count);
    const uint32_t per = (count + parts - 1) / parts;
    pool_->run(parts, [&](uint32_t p, uint32_t t) {
      const uint32_t v0 = p * per, v1 = std::min(count, v0 + per);
      for (uint32_t v = v0; v < v1; ++v) prep(v, t);
      load_part(input, v0, v1, t);
    });
  }
  // load / apply on the calling thread only (for use inside a pool task; the
  // reference numerics' apply_here shares one row scratch: one thread only).
  void load_here(LinearInput& input, const float* x, uint32_t in, uint32_t count);
  void apply_here(const LinearInput& input, const codec::CqMatrix& m, uint32_t row_begin, uint32_t row_end, float* y,
                  size_t y_stride);
  void apply(const LinearInput& input, const codec::CqMatrix& m, uint32_t row_begin, uint32_t row_end, float* y,
             size_t y_stride);
  void apply(const LinearInput& input, const codec::CqMatrix& m, float* y, size_t y_stride) {
    apply(input, m, 0, m.out, y, y_stride);
  }
  // Several small products of one input (e.g. the three Φ of a layer, 4–16
  // rows each) as one pool job of at most 8 rows per task; results as apply().
  void apply_small(const LinearInput& input, std::initializer_list<LinearJob> jobs);
  // Several large products of one input (q/k/v/gate) as one pool job: their
  // rows, concatenated, split into one contiguous part per thread (16-row
  // multiples); results as apply(), which is this with one job.
  void apply_many(const LinearInput& input, std::initializer_list<LinearJob> jobs);
  // Dequantise one row exactly (embedding / engram table lookups, both
  // numerics; KernelTable::dequantize_row, no scratch: any thread may call it).
  void row(const codec::CqMatrix& m, uint32_t r, float* out) const;
  size_t bytes() const;

 private:
  static constexpr uint32_t kPartsPerThread = 2;  // parts of a split batch per pool thread
  // Parts of a load split over the pool (1: on the caller).
  uint32_t split_parts(uint32_t in, uint32_t count) const;
  void prepare_split(LinearInput& input, const float* x, uint32_t in, uint32_t count);
  void load_part(LinearInput& input, uint32_t v0, uint32_t v1, uint32_t thread);
  // Size the reference numerics' dense row (apply_here) for inputs up to max_in wide.
  void reserve_dense_row(uint32_t max_in);
  const Weights* w_;
  Numerics numerics_;
  const kernels::KernelTable* kernels_;
  ThreadPool* pool_ = nullptr;
  std::vector<float> dense_;                             // one dequantised row (reference apply)
  std::vector<kernels::QuantizedActivations> parts_{1};  // per pool thread: one part of a split load
};

}  // namespace cact::engine
