// The multithreaded quantiser: FORMAT.md bytes on float data (equal to
// codec::quantize_matrix), independent of the thread count, and grid
// snapping: quantise(dequantise(blob)) == blob at every width.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "cact/codec.h"
#include "cact/half.h"
#include "cact/model.h"
#include "cact/quantize.h"
#include "support/test_paths.h"

using namespace cact;

namespace {

std::vector<float> random_matrix(uint32_t out, uint32_t in, uint64_t seed, float scale = 0.05f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> w(size_t(out) * in);
  for (auto& x : w) x = normal(rng);
  return w;
}

std::vector<float> codebook(uint32_t bits) { return codec::codebook_for(bits, codec::standard_codebooks()); }

}  // namespace

TEST_CASE("quantize: float data gives codec::quantize_matrix's bytes, for any thread count") {
  for (uint32_t bits : {1u, 2u, 3u, 4u, 5u}) {
    for (uint32_t in : {128u, 200u, 384u}) {
      const auto w = random_matrix(37, in, bits * 1000 + in);
      const auto cb = codebook(bits);
      const auto reference = codec::quantize_matrix(w.data(), 37, in, bits, cb);
      for (unsigned threads : {1u, 2u, 5u, 64u}) {
        const QuantizeResult q = quantize_matrix_mt(w.data(), 37, in, bits, cb, threads);
        CHECK(q.blob == reference);
        CHECK(q.snapped == 0);
        CHECK(q.groups == 37u * ((in + 127) / 128));
      }
    }
  }
}

TEST_CASE("quantize: dequantised CQ groups are re-encoded to the same indices and norms at every width") {
  for (uint32_t bits : {1u, 2u, 3u, 4u, 5u}) {
    const auto cb = codebook(bits);
    const auto w = random_matrix(64, 256, 77 + bits);
    const auto blob = quantize_matrix_mt(w.data(), 64, 256, bits, cb, 2).blob;
    const auto m = codec::view_matrix(blob, 64, 256, bits);
    const auto values = dequantize_matrix_mt(m, cb, 3);
    const QuantizeResult again = quantize_matrix_mt(values.data(), 64, 256, bits, cb, 2);
    CHECK(again.snapped == again.groups);
    CHECK(again.blob == blob);
    // The FORMAT.md rule alone does not survive the round trip: the norm of a
    // dequantised group is norm x |c|, not norm (which is why snapping exists).
    if (bits >= 2 && bits <= 4) CHECK(codec::quantize_matrix(values.data(), 64, 256, bits, cb) != blob);
  }
}

TEST_CASE("quantize: a fake-quantised export (unrounded float norms) snaps to the same indices") {
  const uint32_t bits = 4;
  const auto cb = codebook(bits);
  const auto w = random_matrix(16, 128, 5);
  const auto blob = codec::quantize_matrix(w.data(), 16, 128, bits, cb);
  const auto m = codec::view_matrix(blob, 16, 128, bits);
  // Rebuild each group with its exact float norm instead of the FP16 one.
  std::vector<float> fake(16 * 128);
  for (uint32_t r = 0; r < 16; ++r) {
    std::vector<float> g(w.begin() + r * 128, w.begin() + (r + 1) * 128);
    codec::fwht(g.data(), 128);
    double sum = 0;
    for (float v : g) sum += double(v) * v;
    const float norm = float(std::sqrt(sum));
    for (uint32_t i = 0; i < 128; ++i) g[i] = cb[codec::index_at(m, r, i)] * norm;
    codec::fwht(g.data(), 128);
    std::copy(g.begin(), g.end(), fake.begin() + r * 128);
  }
  const QuantizeResult q = quantize_matrix_mt(fake.data(), 16, 128, bits, cb, 2);
  CHECK(q.snapped == 16);
  CHECK(q.blob == blob);
}

TEST_CASE("quantize: padded rows round trip when in divides the group (64, 32), not otherwise (96, 200)") {
  // H_128 [w; 0] repeats H_64 w twice, so the indices repeat and the
  // dequantised padding columns are zero: nothing is lost by dropping them.
  // With in = 96 they are not zero, and dropping them moves the group off its grid.
  const auto cb = codebook(4);
  for (uint32_t in : {64u, 32u, 96u, 200u}) {
    CAPTURE(in);
    const auto w = random_matrix(8, in, 9);
    const auto blob = quantize_matrix_mt(w.data(), 8, in, 4, cb, 1).blob;
    const auto values = dequantize_matrix_mt(codec::view_matrix(blob, 8, in, 4), cb, 1);
    const QuantizeResult again = quantize_matrix_mt(values.data(), 8, in, 4, cb, 1);
    if (in == 64 || in == 32) {
      CHECK(again.snapped == again.groups);
      CHECK(again.blob == blob);
    } else if (in == 96) {
      CHECK(again.snapped == 0);
    } else {
      CHECK(again.snapped == 8);  // the first, full group of each row
    }
  }
}

TEST_CASE("quantize: a zero group, and a spike (exactly representable, so snapped: far better than the FORMAT rule)") {
  const auto cb = codebook(2);
  std::vector<float> w(2 * 128, 0.0f);
  w[128 + 5] = 1.0f;  // rotated: every coordinate is +-1/sqrt(128), one magnitude
  const QuantizeResult q = quantize_matrix_mt(w.data(), 2, 128, 2, cb, 2);
  CHECK(q.snapped == 1);
  const auto m = codec::view_matrix(q.blob, 2, 128, 2);
  CHECK(m.norm(0, 0) == 0.0f);
  const auto mine = dequantize_matrix_mt(m, cb, 1);
  const auto format_blob = codec::quantize_matrix(w.data(), 2, 128, 2, cb);
  const auto theirs = dequantize_matrix_mt(codec::view_matrix(format_blob, 2, 128, 2), cb, 1);
  const ErrorStats snapped = measure_error(w, mine, 128, 1), format = measure_error(w, theirs, 128, 1);
  CHECK(snapped.relative_mse() < 1e-6);
  CHECK(format.relative_mse() > 0.1);
}

TEST_CASE("quantize: error statistics") {
  const std::vector<float> x{1, 2, 3, 4}, y{1, 2, 3, 5};
  const ErrorStats e = measure_error(x, y, 2, 4);
  CHECK(e.signal == 30.0);
  CHECK(e.error == 1.0);
  CHECK(e.count == 4);
  CHECK(e.relative_mse() == doctest::Approx(1.0 / 30.0));
  CHECK(e.snr_db() == doctest::Approx(10.0 * std::log10(30.0)));
  CHECK(std::isinf(measure_error(x, x, 4, 1).snr_db()));
  CHECK(measure_error(x, x, 4, 1).relative_mse() == 0.0);
  // Sums do not depend on the thread count.
  const auto a = random_matrix(100, 300, 1), b = random_matrix(100, 300, 2);
  const ErrorStats one = measure_error(a, b, 300, 1), many = measure_error(a, b, 300, 7);
  CHECK(one.signal == many.signal);
  CHECK(one.error == many.error);
}

TEST_CASE("quantize: the row-at-a-time CQ error equals the error of the whole dequantised matrix") {
  for (uint32_t in : {128u, 200u}) {
    const auto w = random_matrix(41, in, in);
    const auto cb = codebook(2);
    const QuantizeResult q = quantize_matrix_mt(w.data(), 41, in, 2, cb, 1);
    const codec::CqMatrix m = codec::view_matrix(q.blob, 41, in, 2);
    const ErrorStats whole = measure_error(w, dequantize_matrix_mt(m, cb, 1), in, 1);
    for (unsigned threads : {1u, 3u}) {
      const ErrorStats rows = measure_cq_error(w, m, cb, threads);
      CHECK(rows.signal == whole.signal);
      CHECK(rows.error == whole.error);
      CHECK(rows.count == whole.count);
    }
  }
}

TEST_CASE("quantize: parallel_for covers every index once and rethrows") {
  std::vector<int> hits(1000, 0);
  parallel_for(hits.size(), 4, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) ++hits[i];
  });
  for (int h : hits) CHECK(h == 1);
  CHECK_THROWS_WITH(parallel_for(10, 3,
                                 [](size_t b, size_t) {
                                   if (b > 0) throw std::runtime_error("boom");
                                 }),
                    "boom");
  CHECK(resolve_threads(0) >= 1);
  CHECK(resolve_threads(3) == 3);
  CHECK(resolve_threads(100000) == 256);
}

TEST_CASE("quantize: why snapping: on license-tiny the FORMAT.md rule alone moves norms and even indices") {
  // A dequantised group is norm x c (c the chosen unit-codebook entries), and
  // |c| != 1: quantising a unit vector changes its length (clipped outliers
  // shorten it most). Re-quantising computes the norm norm x |c|, rescales
  // by 1/|c|, and entries that land past a decision boundary flip.
  const Model m = Model::open(cact::test::models_dir() / "license-tiny.cact");
  uint64_t flips = 0, moved_norms = 0, groups = 0, snapped = 0;
  for (size_t i = 0; i < m.records().size(); ++i) {
    const Record& r = m.record(i);
    if (r.dtype != Dtype::CQ) continue;
    const auto values = m.values(i);
    const auto cb = m.codebook_for(r.bits);
    const auto plain = codec::quantize_matrix(values.data(), r.shape[0], r.shape[1], r.bits, cb, r.group);
    const QuantizeResult mine = quantize_matrix_mt(values.data(), r.shape[0], r.shape[1], r.bits, cb, 2, r.group);
    const auto blob = m.blob(i);
    CHECK(std::equal(mine.blob.begin(), mine.blob.end(), blob.begin(), blob.end()));
    snapped += mine.snapped;
    groups += mine.groups;
    const auto a = m.matrix(i), b = codec::view_matrix(plain, r.shape[0], r.shape[1], r.bits, r.group);
    for (uint32_t row = 0; row < a.out; ++row) {
      for (uint32_t k = 0; k < a.in_pad; ++k) flips += codec::index_at(a, row, k) != codec::index_at(b, row, k);
      for (uint32_t g = 0; g < a.groups_per_row(); ++g) moved_norms += a.norm(row, g) != b.norm(row, g);
    }
  }
  CHECK(snapped == groups);
  CHECK(groups == 8064);
  CHECK(flips == 40);          // of 1,032,192 indices
  CHECK(moved_norms == 7931);  // of 8,064 norms
}
