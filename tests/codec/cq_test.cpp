// Quantise/dequantise: the transform, round trips and Lloyd-Max error theory.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cact/codec.h"
#include "cact/half.h"

using namespace cact::codec;

namespace {
std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

double relative_mse(uint32_t bits, uint32_t out, uint32_t in) {
  const auto w = gaussian(size_t(out) * in, 7 + bits);
  const auto cb = codebook_for(bits, standard_codebooks());
  const auto blob = quantize_matrix(w.data(), out, in, bits, cb);
  const CqMatrix m = view_matrix(blob, out, in, bits);
  std::vector<float> row(in);
  double err = 0, power = 0;
  for (uint32_t r = 0; r < out; ++r) {
    dequantize_row(m, r, cb, row.data());
    for (uint32_t i = 0; i < in; ++i) {
      const double d = double(row[i]) - w[size_t(r) * in + i];
      err += d * d;
      power += double(w[size_t(r) * in + i]) * w[size_t(r) * in + i];
    }
  }
  return err / power;
}
}  // namespace

TEST_CASE("normalised WHT is orthogonal and its own inverse") {
  auto x = gaussian(128, 1);
  const auto original = x;
  double before = 0, after = 0;
  for (float v : x) before += double(v) * v;
  fwht(x.data(), x.size());
  for (float v : x) after += double(v) * v;
  CHECK(after == doctest::Approx(before).epsilon(1e-5));
  fwht(x.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) CHECK(x[i] == doctest::Approx(original[i]).epsilon(1e-4));
  std::vector<float> e(8, 0.0f);
  e[0] = 1.0f;
  fwht(e.data(), 8);
  for (float v : e) CHECK(v == doctest::Approx(1.0 / std::sqrt(8.0)));
}

TEST_CASE("relative MSE on Gaussian data is near Lloyd-Max theory") {
  CHECK(relative_mse(2, 64, 1024) == doctest::Approx(0.1175).epsilon(0.06));
  CHECK(relative_mse(3, 64, 1024) == doctest::Approx(0.03454).epsilon(0.08));
  CHECK(relative_mse(4, 64, 1024) == doctest::Approx(0.009497).epsilon(0.1));
  // Ternary and binary are coarser but still well below the signal.
  CHECK(relative_mse(kTernary, 64, 1024) < 0.25);
  CHECK(relative_mse(1, 64, 1024) < 0.40);
}

TEST_CASE("ragged in: padding columns are quantised as zeros and dropped on dequantise") {
  const uint32_t out = 5, in = 200;  // in_pad 256
  const auto w = gaussian(size_t(out) * in, 3);
  const auto cb = codebook_for(4, standard_codebooks());
  const auto blob = quantize_matrix(w.data(), out, in, 4, cb);
  CHECK(blob.size() == blob_bytes(out, in, 4, kGroup));
  const CqMatrix m = view_matrix(blob, out, in, 4);
  CHECK(m.in_pad == 256);
  std::vector<float> row(in);
  double err = 0, power = 0;
  for (uint32_t r = 0; r < out; ++r) {
    dequantize_row(m, r, cb, row.data());
    for (uint32_t i = 0; i < in; ++i) {
      err += std::pow(row[i] - w[size_t(r) * in + i], 2);
      power += std::pow(w[size_t(r) * in + i], 2);
    }
  }
  CHECK(err / power < 0.02);
}

TEST_CASE("quantising a dequantised matrix reproduces its indices") {
  const uint32_t out = 16, in = 256;
  for (uint32_t bits : {1u, 2u, 3u, 4u, kTernary}) {
    const auto w = gaussian(size_t(out) * in, 11 + bits);
    const auto cb = codebook_for(bits, standard_codebooks());
    const auto blob = quantize_matrix(w.data(), out, in, bits, cb);
    const CqMatrix m = view_matrix(blob, out, in, bits);
    std::vector<float> deq(size_t(out) * in);
    for (uint32_t r = 0; r < out; ++r) dequantize_row(m, r, cb, deq.data() + size_t(r) * in);
    const auto again = quantize_matrix(deq.data(), out, in, bits, cb);
    const CqMatrix m2 = view_matrix(again, out, in, bits);
    size_t same = 0;
    for (uint32_t r = 0; r < out; ++r) {
      for (uint32_t k = 0; k < in; ++k) same += index_at(m, r, k) == index_at(m2, r, k);
    }
    CHECK_MESSAGE(same == size_t(out) * in, "width " << bits);
  }
}

TEST_CASE("zero groups quantise without dividing by zero") {
  std::vector<float> w(128, 0.0f);
  const auto cb = codebook_for(2, standard_codebooks());
  const auto blob = quantize_matrix(w.data(), 1, 128, 2, cb);
  const CqMatrix m = view_matrix(blob, 1, 128, 2);
  CHECK(m.norm(0, 0) == 0.0f);
  std::vector<float> row(128, 1.0f);
  dequantize_row(m, 0, cb, row.data());
  for (float v : row) CHECK(v == 0.0f);
}

TEST_CASE("half precision conversion rounds to nearest even and keeps specials") {
  CHECK(cact::float_to_half(1.0f) == 0x3C00);
  CHECK(cact::float_to_half(-2.0f) == 0xC000);
  CHECK(cact::float_to_half(65504.0f) == 0x7BFF);
  CHECK(cact::float_to_half(1e6f) == 0x7C00);
  CHECK(cact::float_to_half(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(cact::float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);  // tie to even
  for (uint32_t h = 0; h < 0x7C00; ++h) CHECK(cact::float_to_half(cact::half_to_float(uint16_t(h))) == h);
  CHECK(std::isnan(cact::half_to_float(0x7E00)));
}

TEST_CASE("halves_to_floats equals half_to_float bit for bit on all 65536 inputs, at any alignment") {
  std::vector<uint8_t> bytes(2 * 65536 + 1);
  for (uint32_t h = 0; h < 65536; ++h) {  // from offset 1: an odd address
    bytes[1 + 2 * h] = uint8_t(h & 0xFF);
    bytes[2 + 2 * h] = uint8_t(h >> 8);
  }
  std::vector<float> got(65536);
  cact::halves_to_floats(bytes.data() + 1, got.size(), got.data());
  uint32_t mismatches = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const float want = cact::half_to_float(uint16_t(h));
    mismatches += std::memcmp(&want, &got[h], 4) != 0 ? 1u : 0u;
  }
  CHECK(mismatches == 0);
}
