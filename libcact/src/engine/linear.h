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
#include <type_traits>
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
  std::vector<float> floats;        // reference numerics: a prologue's vectors (x then points here)
  uint32_t in = 0, count = 0;
  size_t bytes() const { return q.q.capacity() + (q.scale.capacity() + floats.capacity()) * sizeof(float); }
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
  // Size scratch so that inputs up to max_in wide and max_count vectors never
  // allocate (`prologue`: also the loads that take one, below).
  void reserve(LinearInput& input, uint32_t max_in, uint32_t max_count, bool prologue = false);
  void load(LinearInput& input, const float* x, uint32_t in, uint32_t count);
  // load() of vectors that a per-vector prologue writes: prep(v, thread, dst)
  // writes vector v to dst (on any pool thread), so a per-token stage and the
  // quantisation of its output share one pool job. In the int8 numerics dst
  // is the thread's small scratch, quantised while it is still in L1: a
  // chunk's floats never go out to L2 and back. In the reference numerics it
  // is vector v of input.floats (reserved with `prologue`), which the
  // products then read.
  template <typename F>
  void load(LinearInput& input, uint32_t in, uint32_t count, F&& prep) {
    using Fn = std::remove_reference_t<F>;
    load_with_prologue(input, in, count, &prep, [](const void* fn, uint32_t v, uint32_t thread, float* dst) {
      (*static_cast<const Fn*>(fn))(v, thread, dst);
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
  // A load's vectors cut into `parts` runs of `per` (the last one shorter).
  struct Split {
    uint32_t parts, per, count;
    uint32_t begin(uint32_t p) const { return p * per; }
    uint32_t end(uint32_t p) const { return std::min(count, p * per + per); }
  };
  // How a load splits over the pool (one part: on the caller).
  Split split(uint32_t in, uint32_t count) const;
  void prepare_split(LinearInput& input, const float* x, uint32_t in, uint32_t count);
  // load() with a prologue, compiled once: `call(fn, v, thread, dst)` runs it.
  using Prologue = void (*)(const void* fn, uint32_t v, uint32_t thread, float* dst);
  void load_with_prologue(LinearInput& input, uint32_t in, uint32_t count, const void* fn, Prologue call);
  // Quantises v1 − v0 vectors from `first` into input's vectors [v0, v1).
  void load_part(LinearInput& input, const float* first, uint32_t v0, uint32_t v1, uint32_t thread);
  // Vectors of `in` floats that a thread's prologue writes before they are quantised.
  static uint32_t streamed_block(uint32_t in) { return std::max(1u, kStreamedFloats / in); }
  static constexpr uint32_t kStreamedFloats = 4096;  // 16 KiB: stays in a 32 or 48 KiB L1 with its int8 output
  // Size the reference numerics' dense row (apply_here) for inputs up to max_in wide.
  void reserve_dense_row(uint32_t max_in);
  const Weights* w_;
  Numerics numerics_;
  const kernels::KernelTable* kernels_;
  ThreadPool* pool_ = nullptr;
  std::vector<float> dense_;                             // one dequantised row (reference apply)
  std::vector<kernels::QuantizedActivations> parts_{1};  // per pool thread: one part of a split load
  std::vector<std::vector<float>> prep_scratch_{1};      // per pool thread: a streamed load's prologue output
};

}  // namespace cact::engine
