#pragma once
// Multithreaded CQ quantisation and dequantisation of whole matrices, error
// measurement, and the per-tensor error report of cact-build / cact-quant.
//
// The quantiser is FORMAT.md's rule (rotate each 128-group, FP16 norm, nearest
// unit-codebook entry, ties to the lower entry), byte for byte what
// codec::quantize_matrix produces, with one addition, "grid snapping": a
// group whose rotated values are already, to float precision, norm x codebook
// entries with an FP16 norm (i.e. the dequantisation of some CQ group, as a
// checkpoint exported from an archive is) is encoded as exactly those indices
// and that norm. Without it such a group would not survive a round trip: its
// norm is norm x |c| (|c|, the length of the chosen entries, is not 1), so
// the FORMAT.md rule rescales it and flips indices near decision boundaries.
// Float checkpoints are never on the grid, so for them nothing changes.
// docs/INTERCHANGE.md "Round trips" has the details and the limits.
//
// Rows are split over threads; every row is computed independently, so the
// bytes do not depend on the thread count. Error sums are accumulated per row
// in double and added in row order, so they do not either.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "cact/codec.h"
#include "cact/parallel.h"

namespace cact {

struct QuantizeResult {
  std::vector<uint8_t> blob;  // FORMAT.md CQ blob: packed rows, then FP16 norms
  uint64_t groups = 0;        // groups encoded
  uint64_t snapped = 0;       // of which were grid-snapped
};

// Quantise a row-major [out, in] float matrix at width `bits` with the
// unit codebook `codebook` (codec::codebook_for). Throws cact::Error for an
// unsupported width / shape. Inputs must be finite.
QuantizeResult quantize_matrix_mt(const float* w, uint32_t out, uint32_t in, uint32_t bits,
                                  std::span<const float> codebook, unsigned threads, uint32_t group = codec::kGroup);

// Every value of a CQ matrix, row-major [out, in].
std::vector<float> dequantize_matrix_mt(const codec::CqMatrix& m, std::span<const float> codebook, unsigned threads);
// The same values as little-endian F32 bytes into out (m.out · m.in · 4 bytes),
// e.g. a safetensors writer's buffer, without a float copy in between.
void dequantize_rows_into(const codec::CqMatrix& m, std::span<const float> codebook, uint8_t* out, unsigned threads);

// Signal and error energy of an approximation of a reference.
struct ErrorStats {
  double signal = 0.0;  // sum of reference^2
  double error = 0.0;   // sum of (reference - approximation)^2
  uint64_t count = 0;   // elements
  void add(const ErrorStats& o) {
    signal += o.signal;
    error += o.error;
    count += o.count;
  }
  // error / signal; 0 when both are 0; +inf when only the signal is 0.
  double relative_mse() const;
  // 10 log10(signal / error); +inf when the error is 0, -inf when the signal is 0.
  double snr_db() const;
};

// Compares element by element (sizes must match). Rows of `row_length`
// elements are summed in double, then the rows in order, over `threads`.
ErrorStats measure_error(std::span<const float> reference, std::span<const float> approximation, size_t row_length,
                         unsigned threads);
// The same for a CQ matrix against its [out, in] reference, one row
// dequantised at a time (no copy of the whole matrix's values); equal to
// measure_error of dequantize_matrix_mt's values with row_length `in`.
ErrorStats measure_cq_error(std::span<const float> reference, const codec::CqMatrix& m, std::span<const float> codebook,
                            unsigned threads);
// measure_cq_error a chunk of rows at a time: per_row[k] = the error of row
// row_begin + k against reference[k·m.in, (k+1)·m.in), for per_row.size() rows.
// sum_in_order(all rows' errors) equals measure_cq_error.
void measure_cq_rows(std::span<const float> reference, const codec::CqMatrix& m, std::span<const float> codebook,
                     uint32_t row_begin, std::span<ErrorStats> per_row, unsigned threads);
// The rows' errors added in row order (as measure_error and measure_cq_error do).
ErrorStats sum_in_order(std::span<const ErrorStats> per_row);

// One line of an error report.
struct TensorReport {
  size_t index = 0;
  std::string name;
  std::string kind;         // "CQ2", "FP16", ...
  std::string kind_before;  // for requantize: the source's kind ("" when not applicable)
  std::vector<uint32_t> shape;
  uint64_t weights = 0;       // elements
  uint64_t bytes = 0;         // blob bytes
  uint64_t bytes_before = 0;  // requantize: the source blob's bytes (0 when not applicable)
  bool measured = false;      // error is meaningful
  bool changed = true;        // requantize: false = copied byte for byte
  ErrorStats error;
  double bits_per_weight() const { return weights ? 8.0 * double(bytes) / double(weights) : 0.0; }
};

struct Report {
  std::string title;      // e.g. "needle.cact vs checkpoint.safetensors"
  std::string reference;  // what the error is measured against
  std::vector<TensorReport> tensors;
  uint64_t file_bytes_before = 0;  // 0 = not applicable
  uint64_t file_bytes_after = 0;

  // Totals over the measured CQ tensors (energy-weighted, not a mean of ratios).
  ErrorStats cq_error() const;
  uint64_t cq_weights() const;
  uint64_t cq_bytes() const;
};

// Human table (aligned columns, totals, sizes) and JSON (docs/QUANT.md).
std::string format_report_text(const Report& r, bool all_tensors = true);
std::string format_report_json(const Report& r);

}  // namespace cact
