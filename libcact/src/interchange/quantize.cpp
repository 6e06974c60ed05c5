// Multithreaded CQ quantiser with grid snapping, dequantiser, error sums.
#include "cact/quantize.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <thread>

#include "cact/error.h"
#include "cact/half.h"

namespace cact {

namespace {

// Tolerances of grid snapping. A group that came out of a dequantisation is
// on its grid to within float rounding of two Hadamard passes (about 1e-6 of
// its largest value); a float group's best fit is off by percents.
constexpr float kSnapElementTolerance = 1e-4f;  // per element, relative to max |r|
constexpr double kSnapEnergyTolerance = 1e-10;  // residual energy, relative to the group's

class GroupCoder {
 public:
  GroupCoder(std::span<const float> codebook, uint32_t group)
      : cb_(codebook), group_(group), snap_idx_(group), best_idx_(group) {
    for (float v : cb_) {
      const float a = std::fabs(v);
      if (a > 0.0f && std::find(magnitudes_.begin(), magnitudes_.end(), a) == magnitudes_.end())
        magnitudes_.push_back(a);
    }
    std::sort(magnitudes_.begin(), magnitudes_.end());
  }

  // `r` is the rotated group. Writes `group` indices and the FP16 norm.
  // Returns true when the group was grid-snapped.
  bool encode(const float* r, uint8_t* idx, uint16_t& half) {
    double sum = 0.0;
    float peak = 0.0f;
    for (uint32_t i = 0; i < group_; ++i) {
      sum += double(r[i]) * r[i];
      peak = std::max(peak, std::fabs(r[i]));
    }
    if (peak > 0.0f && std::isfinite(sum) && snap(r, sum, peak, idx, half)) return true;
    // FORMAT.md: norm = |r|, u = r / max(norm, 1e-12), nearest entry.
    const float norm = float(std::sqrt(sum));
    half = float_to_half(norm);
    const float inv = 1.0f / std::max(norm, 1e-12f);
    for (uint32_t i = 0; i < group_; ++i) idx[i] = codec::nearest_index(r[i] * inv, cb_);
    return false;
  }

 private:
  bool snap(const float* r, double sum, float peak, uint8_t* idx, uint16_t& half) {
    double best_error = 0.0;
    bool found = false;
    const float tolerance = kSnapElementTolerance * peak;
    for (float a : magnitudes_) {
      // Candidate: the largest |r| sits on the entry of magnitude a.
      const float s = peak / a;
      bool on_grid = true;
      for (uint32_t i = 0; i < group_ && on_grid; ++i) {
        const uint8_t j = codec::nearest_index(r[i] / s, cb_);
        snap_idx_[i] = j;
        on_grid = std::fabs(r[i] - s * cb_[j]) <= tolerance;
      }
      if (!on_grid) continue;
      // Least-squares norm for these indices; the group must be reproduced by
      // it (before FP16 rounding: a fake-quantised float export has unrounded norms).
      double num = 0.0, den = 0.0;
      for (uint32_t i = 0; i < group_; ++i) {
        num += double(r[i]) * cb_[snap_idx_[i]];
        den += double(cb_[snap_idx_[i]]) * cb_[snap_idx_[i]];
      }
      if (!(den > 0.0)) continue;
      const double scale = num / den;
      const uint16_t h = float_to_half(float(scale));
      const double hf = half_to_float(h);
      if (!std::isfinite(hf)) continue;
      double fit = 0.0, stored = 0.0;
      for (uint32_t i = 0; i < group_; ++i) {
        const double c = cb_[snap_idx_[i]];
        const double d = double(r[i]) - scale * c, e = double(r[i]) - hf * c;
        fit += d * d;
        stored += e * e;
      }
      if (fit > kSnapEnergyTolerance * sum) continue;
      // Several candidates can fit (a group using one magnitude only); the one
      // whose FP16 norm reproduces the group best is the one it came from.
      if (!found || stored < best_error) {
        best_error = stored;
        found = true;
        half = h;
        best_idx_ = snap_idx_;
      }
    }
    if (found) std::copy(best_idx_.begin(), best_idx_.end(), idx);
    return found;
  }

  std::span<const float> cb_;
  uint32_t group_;
  std::vector<float> magnitudes_;
  std::vector<uint8_t> snap_idx_, best_idx_;
};

}  // namespace

QuantizeResult quantize_matrix_mt(const float* w, uint32_t out, uint32_t in, uint32_t bits,
                                  std::span<const float> codebook, unsigned threads, uint32_t group) {
  const uint64_t total = codec::blob_bytes(out, in, bits, group);
  if (total == 0) {
    fail("cannot quantise a [" + std::to_string(out) + ", " + std::to_string(in) + "] matrix at width " +
         std::to_string(bits));
  }
  if (codebook.size() != codec::levels(bits)) fail("codebook size does not match CQ width " + std::to_string(bits));
  QuantizeResult result;
  result.blob.assign(total, 0);
  const uint32_t in_pad = codec::padded_in(in, group);
  const size_t row_bytes = codec::packed_row_bytes(in_pad, bits);
  const uint32_t groups = in_pad / group;
  uint8_t* blob = result.blob.data();
  uint8_t* norms = blob + size_t(out) * row_bytes;
  std::vector<uint64_t> snapped_per_row(out, 0);
  parallel_for(out, threads, [&](size_t begin, size_t end) {
    GroupCoder coder(codebook, group);
    std::vector<float> rotated(group);
    std::vector<uint8_t> indices(in_pad);
    for (size_t r = begin; r < end; ++r) {
      for (uint32_t g = 0; g < groups; ++g) {
        for (uint32_t i = 0; i < group; ++i) {
          const uint32_t col = g * group + i;
          rotated[i] = col < in ? w[r * in + col] : 0.0f;
        }
        codec::fwht(rotated.data(), group);
        uint16_t half = 0;
        if (coder.encode(rotated.data(), indices.data() + size_t(g) * group, half)) ++snapped_per_row[r];
        // An FP16 norm of inf/NaN would be written silently and decode to
        // garbage: a weight group this large (or not finite) cannot be stored.
        if ((half & 0x7C00u) == 0x7C00u) {
          double sum = 0.0;
          for (float v : rotated) sum += double(v) * v;
          char norm[32];
          std::snprintf(norm, sizeof norm, "%.9g", std::sqrt(sum));
          fail("row " + std::to_string(r) + ", group " + std::to_string(g) + ": the group's norm " + norm +
               " does not fit a CQ norm (FP16, largest 65504)");
        }
        std::memcpy(norms + 2 * (r * groups + g), &half, 2);
      }
      codec::pack_indices(indices.data(), in_pad, bits, blob + r * row_bytes);
    }
  });
  result.groups = uint64_t(out) * groups;
  for (uint64_t s : snapped_per_row) result.snapped += s;
  return result;
}

std::vector<float> dequantize_matrix_mt(const codec::CqMatrix& m, std::span<const float> codebook, unsigned threads) {
  std::vector<float> values(size_t(m.out) * m.in);
  parallel_for(m.out, threads, [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r) codec::dequantize_row(m, uint32_t(r), codebook, values.data() + r * m.in);
  });
  return values;
}

namespace {

// use(k, values) for rows row_begin + k, k < rows, of m, each dequantised into
// a per-thread row buffer, over `threads` threads.
template <typename Use>
void for_each_dequantized_row(const codec::CqMatrix& m, std::span<const float> codebook, uint32_t row_begin,
                              size_t rows, unsigned threads, const Use& use) {
  parallel_for(rows, threads, [&](size_t begin, size_t end) {
    std::vector<float> row(m.in);
    for (size_t k = begin; k < end; ++k) {
      codec::dequantize_row(m, uint32_t(row_begin + k), codebook, row.data());
      use(k, row.data());
    }
  });
}

}  // namespace

void dequantize_rows_into(const codec::CqMatrix& m, std::span<const float> codebook, uint8_t* out, unsigned threads) {
  static_assert(std::endian::native == std::endian::little, "F32 bytes are written in the host's order");
  for_each_dequantized_row(m, codebook, 0, m.out, threads, [&](size_t r, const float* row) {
    std::memcpy(out + r * m.in * sizeof(float), row, m.in * sizeof(float));
  });
}

double ErrorStats::relative_mse() const {
  if (signal > 0.0) return error / signal;
  return error > 0.0 ? INFINITY : 0.0;
}

double ErrorStats::snr_db() const {
  if (error == 0.0) return INFINITY;
  if (signal == 0.0) return -INFINITY;
  return 10.0 * std::log10(signal / error);
}

namespace {

ErrorStats row_error(const float* reference, const float* approximation, size_t n) {
  ErrorStats s;
  for (size_t i = 0; i < n; ++i) {
    const double x = reference[i], d = x - double(approximation[i]);
    s.signal += x * x;
    s.error += d * d;
  }
  s.count = n;
  return s;
}

}  // namespace

ErrorStats sum_in_order(std::span<const ErrorStats> per_row) {
  ErrorStats total;
  for (const auto& s : per_row) total.add(s);
  return total;
}

ErrorStats measure_error(std::span<const float> reference, std::span<const float> approximation, size_t row_length,
                         unsigned threads) {
  if (reference.size() != approximation.size()) {
    fail("measure_error: " + std::to_string(reference.size()) + " reference values, " +
         std::to_string(approximation.size()) + " approximations");
  }
  if (row_length == 0) row_length = std::max<size_t>(reference.size(), 1);
  const size_t rows = (reference.size() + row_length - 1) / row_length;
  std::vector<ErrorStats> per_row(rows);
  parallel_for(rows, threads, [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r) {
      const size_t first = r * row_length, last = std::min(reference.size(), first + row_length);
      per_row[r] = row_error(reference.data() + first, approximation.data() + first, last - first);
    }
  });
  return sum_in_order(per_row);
}

void measure_cq_rows(std::span<const float> reference, const codec::CqMatrix& m, std::span<const float> codebook,
                     uint32_t row_begin, std::span<ErrorStats> per_row, unsigned threads) {
  if (reference.size() != per_row.size() * m.in || row_begin + per_row.size() > m.out) {
    fail("measure_cq_rows: " + std::to_string(reference.size()) + " reference values for rows [" +
         std::to_string(row_begin) + ", " + std::to_string(row_begin + per_row.size()) + ") of a [" +
         std::to_string(m.out) + ", " + std::to_string(m.in) + "] matrix");
  }
  for_each_dequantized_row(m, codebook, row_begin, per_row.size(), threads, [&](size_t k, const float* row) {
    per_row[k] = row_error(reference.data() + k * m.in, row, m.in);
  });
}

ErrorStats measure_cq_error(std::span<const float> reference, const codec::CqMatrix& m, std::span<const float> codebook,
                            unsigned threads) {
  if (reference.size() != size_t(m.out) * m.in) {
    fail("measure_cq_error: " + std::to_string(reference.size()) + " reference values for a [" + std::to_string(m.out) +
         ", " + std::to_string(m.in) + "] matrix");
  }
  std::vector<ErrorStats> per_row(m.out);
  measure_cq_rows(reference, m, codebook, 0, per_row, threads);
  return sum_in_order(per_row);
}

}  // namespace cact
