// Every kernel table this CPU can run must give bit-identical results to the
// scalar oracle (quantize_activations, cq_matmul, dequantize_row) on random shapes,
// and the scalar CQ-W2A8 matmul must approximate the float dequantised matvec.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cact/codec.h"
#include "cact/half.h"
#include "cact/kernels.h"

namespace {

using cact::kernels::Int8Codebook;
using cact::kernels::KernelTable;
using cact::kernels::QuantizedActivations;
namespace codec = cact::codec;

constexpr uint32_t kWidths[] = {1, 2, 3, 4, codec::kTernary};

std::vector<const KernelTable*> simd_tables() {
  auto all = cact::kernels::available_kernels();
  return {all.begin() + 1, all.end()};
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// A sentinel no kernel writes: a NaN with a recognisable payload.
float sentinel() {
  const uint32_t u = 0x7fc0dead;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct RandomMatrix {
  std::vector<uint8_t> blob;
  codec::CqMatrix m;
};

// Random packed indices (every code, the invalid ternary crumb 2 included: a
// loader rejects it, but the kernels must still agree on it) and random FP16
// norms, some of them zero.
RandomMatrix random_matrix(std::mt19937& rng, uint32_t out, uint32_t in, uint32_t bits) {
  RandomMatrix r;
  r.blob.resize(codec::blob_bytes(out, in, bits, codec::kGroup));
  const uint32_t in_pad = codec::padded_in(in, codec::kGroup);
  const size_t packed = size_t(out) * codec::packed_row_bytes(in_pad, bits);
  std::uniform_int_distribution<int> byte(0, 255);
  for (size_t i = 0; i < packed; ++i) r.blob[i] = uint8_t(byte(rng));
  std::uniform_real_distribution<float> mag(0.0f, 3.0f);
  std::uniform_int_distribution<int> pick(0, 9);
  for (size_t i = packed; i + 1 < r.blob.size(); i += 2) {
    const float n = pick(rng) == 0 ? 0.0f : mag(rng);
    const uint16_t h = cact::float_to_half(n);
    std::memcpy(&r.blob[i], &h, 2);
  }
  r.m = codec::view_matrix(r.blob, out, in, bits);
  return r;
}

Int8Codebook random_codebook(std::mt19937& rng, uint32_t bits) {
  std::uniform_int_distribution<int> pick(0, 3);
  if (pick(rng) == 0) {  // a hand-made int8 table, full range
    Int8Codebook cb;
    std::uniform_int_distribution<int> q(-127, 127);
    for (auto& v : cb.q) v = int8_t(q(rng));
    cb.q[0] = -127;
    cb.scale = std::uniform_real_distribution<float>(1e-3f, 1.0f)(rng);
    cb.bits = bits;
    return cb;
  }
  std::normal_distribution<float> nd(0.0f, 0.2f);
  std::vector<float> entries(codec::levels(bits));
  for (auto& e : entries) e = nd(rng);
  std::sort(entries.begin(), entries.end());
  return cact::kernels::make_int8_codebook(entries, bits);
}

// `count` vectors of `in` floats: mixed magnitudes, zero vectors, zero groups,
// sparse small integers (many exact coincidences and near-ties after rotation).
std::vector<float> random_activations(std::mt19937& rng, uint32_t in, uint32_t count) {
  std::vector<float> x(size_t(in) * count);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 5);
  std::uniform_int_distribution<int> small(-3, 3);
  std::uniform_real_distribution<float> expo(-6.0f, 6.0f);
  for (uint32_t v = 0; v < count; ++v) {
    float* p = x.data() + size_t(v) * in;
    const int k = kind(rng);
    const float scale = std::exp(expo(rng));
    for (uint32_t i = 0; i < in; ++i) {
      switch (k) {
        case 0:
          p[i] = 0.0f;
          break;
        case 1:
          p[i] = (rng() % 7 == 0) ? float(small(rng)) : 0.0f;
          break;
        case 2:
          p[i] = (i / codec::kGroup) % 2 == 0 ? 0.0f : nd(rng) * scale;
          break;
        default:
          p[i] = nd(rng) * scale;
          break;
      }
    }
  }
  return x;
}

// Activations made by hand (no rotation): any int8 including -128, scale 1.
QuantizedActivations raw_activations(std::mt19937& rng, uint32_t in, uint32_t count) {
  QuantizedActivations a;
  a.in = in;
  a.in_pad = codec::padded_in(in, codec::kGroup);
  a.count = count;
  a.q.resize(size_t(a.in_pad) * count);
  a.scale.assign(size_t(a.groups()) * count, 1.0f);
  std::uniform_int_distribution<int> q(-128, 127);
  for (auto& v : a.q) v = int8_t(q(rng));
  return a;
}

std::vector<float> run_matmul(const KernelTable& t, const codec::CqMatrix& m, const Int8Codebook& cb,
                              const QuantizedActivations& a, uint32_t rb, uint32_t re, size_t stride) {
  std::vector<float> y(stride * a.count, sentinel());
  t.cq_matmul(m, cb, a, rb, re, y.data(), stride);
  return y;
}

// Index of the first differing float (bitwise), or -1.
long first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (bits_of(a[i]) != bits_of(b[i])) return long(i);
  }
  return -1;
}

}  // namespace

TEST_CASE("kernel tables: the list and the choice") {
  const auto tables = cact::kernels::available_kernels();
  REQUIRE(!tables.empty());
  CHECK(std::string(tables.front()->name) == "scalar");
  std::string names;
  for (const KernelTable* t : tables) names += std::string(" ") + t->name;
  std::printf("kernel tables on this CPU:%s (best: %s)\n", names.c_str(), cact::kernels::best_kernels().name);
  for (const KernelTable* t : tables) {
    CHECK((t->quantize_activations != nullptr));
    CHECK((t->cq_matmul != nullptr));
    CHECK((t->dequantize_row != nullptr));
  }
}

TEST_CASE("quantize_activations: every table equals scalar bit for bit") {
  std::mt19937 rng(1234);
  const KernelTable& scalar = cact::kernels::scalar_kernels();
  for (const KernelTable* t : simd_tables()) {
    INFO("table " << t->name);
    for (int iter = 0; iter < 150; ++iter) {
      const uint32_t in = iter < 5 ? codec::kGroup * uint32_t(iter + 1) : 1 + uint32_t(rng() % 700);
      const uint32_t count = 1 + uint32_t(rng() % 9);
      const auto x = random_activations(rng, in, count);
      QuantizedActivations want, got;
      scalar.quantize_activations(x.data(), in, count, want);
      t->quantize_activations(x.data(), in, count, got);
      INFO("in " << in << " count " << count);
      REQUIRE(got.in == want.in);
      REQUIRE(got.in_pad == want.in_pad);
      REQUIRE(got.count == want.count);
      const size_t nq = size_t(want.in_pad) * count;
      const size_t ns = size_t(want.groups()) * count;
      CHECK(std::memcmp(got.q.data(), want.q.data(), nq) == 0);
      size_t bad_scale = 0;
      for (size_t i = 0; i < ns; ++i) bad_scale += bits_of(got.scale[i]) != bits_of(want.scale[i]);
      CHECK(bad_scale == 0);
    }
    // Reuse of a larger buffer for fewer vectors must not disturb the result.
    QuantizedActivations big, fresh;
    const auto x = random_activations(rng, 300, 1);
    const auto x9 = random_activations(rng, 700, 9);
    t->quantize_activations(x9.data(), 700, 9, big);
    t->quantize_activations(x.data(), 300, 1, big);
    scalar.quantize_activations(x.data(), 300, 1, fresh);
    CHECK(std::memcmp(big.q.data(), fresh.q.data(), fresh.in_pad) == 0);
  }
}

namespace {
// Every SIMD table quantises x (one vector of whole groups) to the scalar
// table's codes and scales, bit for bit.
void check_tables_quantize_like_scalar(const std::vector<float>& x) {
  const auto in = uint32_t(x.size());
  QuantizedActivations want;
  cact::kernels::scalar_kernels().quantize_activations(x.data(), in, 1, want);
  for (const KernelTable* t : simd_tables()) {
    INFO("table " << t->name);
    QuantizedActivations got;
    t->quantize_activations(x.data(), in, 1, got);
    CHECK(std::memcmp(got.q.data(), want.q.data(), in) == 0);
    CHECK(std::memcmp(got.scale.data(), want.scale.data(), want.groups() * sizeof(float)) == 0);
  }
}
}  // namespace

TEST_CASE("quantize_activations: .5 ties and the floats just below them round as lround in every table") {
  // Two-hot groups x0 = (A+B)/2, x1 = (A-B)/2 rotate to +-A/sqrt(128) and
  // +-B/sqrt(128), so the scaled values are ~127 and ~127*B/A. For each
  // wanted y (every k + 0.5 in [0.5, 126.5] and the float just below it), A
  // steps from 64 and B takes a few values around y*A/127 until the scaled
  // value is exactly y (checked with the scalar's float steps; B's precision
  // is x0's, so a small y is hit only for some A). Round-half-even or round-half-up would quantise the ties wrongly;
  // y + 0.5 rounded to float wrongly takes 0.49999997 to 1; a rounding offset
  // one float below 0.49999997 wrongly takes 0.5 to 0.
  constexpr float kA = 64.0f;
  std::vector<float> groups;
  int ties = 0, below = 0;
  const auto scaled_hits = [](const float* g, float want) {
    float r[codec::kGroup];
    std::copy(g, g + codec::kGroup, r);
    codec::fwht(r, codec::kGroup);
    float absmax = 0.0f;
    for (float v : r) absmax = std::max(absmax, std::fabs(v));
    const float inv = 1.0f / (absmax / 127.0f);
    for (float v : r) {
      if (v * inv == want) return true;
    }
    return false;
  };
  for (int k = 0; k < 127; ++k) {
    for (const bool tie : {true, false}) {
      const float want = tie ? float(k) + 0.5f : std::nextafter(float(k) + 0.5f, 0.0f);
      bool hit = false;
      for (int j = 0; j < 4096 && !hit; ++j) {
        const float a = kA + float(j) / 1024.0f;
        for (int m = -2; m <= 2 && !hit; ++m) {
          const float b = float(double(want) * a / 127.0 + m / 131072.0);
          float g[codec::kGroup] = {};
          g[0] = (a + b) / 2.0f;
          g[1] = (a - b) / 2.0f;
          if (!scaled_hits(g, want)) continue;
          hit = true;
          groups.insert(groups.end(), g, g + codec::kGroup);
          for (float& v : g) v = -v;
          groups.insert(groups.end(), g, g + codec::kGroup);
          (tie ? ties : below) += 1;
        }
      }
    }
  }
  INFO(ties << " ties and " << below << " floats below a tie hit exactly");
  REQUIRE(ties == 127);
  REQUIRE(below == 127);
  check_tables_quantize_like_scalar(groups);
}

TEST_CASE("quantize_activations: groups whose scale's inverse overflows equal scalar in every table") {
  // absmax in [~2e-43, ~4e-37]: the scale absmax/127 is a tiny subnormal whose
  // inverse is +inf, so each value times it is +-inf, or NaN for a 0.
  std::mt19937 rng(99);
  std::vector<float> x(codec::kGroup * 6, 0.0f);
  for (size_t g = 0; g < 6; ++g) {
    const float magnitude = g < 3 ? 1e-38f : 1e-40f;
    for (uint32_t i = 0; i < codec::kGroup; ++i) {
      const uint32_t r = rng() % 4;  // a quarter stays 0
      if (r != 0) x[g * codec::kGroup + i] = (r == 1 ? -1.0f : 1.0f) * magnitude * float(1 + rng() % 8);
    }
  }
  x[5 * codec::kGroup] = 1e-40f;  // and one group with a single nonzero value
  std::fill(x.begin() + 5 * codec::kGroup + 1, x.end(), 0.0f);
  check_tables_quantize_like_scalar(x);
}

TEST_CASE("quantize_activations: int8 range and per-group scale") {
  std::mt19937 rng(77);
  for (const KernelTable* t : cact::kernels::available_kernels()) {
    INFO("table " << t->name);
    const auto x = random_activations(rng, 333, 4);
    QuantizedActivations a;
    t->quantize_activations(x.data(), 333, 4, a);
    CHECK(a.in_pad == 384);
    for (size_t i = 0; i < size_t(a.in_pad) * 4; ++i) {
      CHECK(a.q[i] >= -127);
    }
    for (size_t i = 0; i < size_t(a.groups()) * 4; ++i) CHECK(a.scale[i] >= 0.0f);
  }
}

TEST_CASE("cq_matmul: integer group dots are exact for every table, int8 activations -128..127") {
  // One group per row, norm 1, activation scale 1, codebook scale 1: y is the
  // integer dot itself (|dot| < 2^24 converts exactly).
  std::mt19937 rng(99);
  const KernelTable& scalar = cact::kernels::scalar_kernels();
  for (uint32_t bits : kWidths) {
    INFO("bits " << bits);
    for (int iter = 0; iter < 10; ++iter) {
      const uint32_t out = 1 + uint32_t(rng() % 19);
      auto rm = random_matrix(rng, out, codec::kGroup, bits);
      const uint16_t one = cact::float_to_half(1.0f);
      const size_t norms_at = size_t(rm.m.norms - rm.blob.data());
      for (uint32_t r = 0; r < out; ++r) std::memcpy(rm.blob.data() + norms_at + 2 * r, &one, 2);
      Int8Codebook cb = random_codebook(rng, bits);
      cb.scale = 1.0f;
      const uint32_t count = 1 + uint32_t(rng() % 9);
      const auto a = raw_activations(rng, codec::kGroup, count);
      // Independent integer reference.
      std::vector<uint8_t> idx(codec::kGroup);
      for (uint32_t r = 0; r < out; ++r) {
        codec::unpack_indices(rm.m.row(r), codec::kGroup, bits, idx.data());
        for (uint32_t v = 0; v < count; ++v) {
          int32_t dot = 0;
          for (uint32_t i = 0; i < codec::kGroup; ++i) dot += int32_t(cb.q[idx[i]]) * a.vec(v)[i];
          for (const KernelTable* t : cact::kernels::available_kernels()) {
            INFO("table " << t->name << " row " << r << " vector " << v);
            const auto y = run_matmul(*t, rm.m, cb, a, 0, out, out);
            CHECK(y[size_t(v) * out + r] == float(dot));
          }
        }
      }
      (void)scalar;
    }
  }
}

TEST_CASE("cq_matmul: every table equals scalar bit for bit on random shapes") {
  std::mt19937 rng(4321);
  const KernelTable& scalar = cact::kernels::scalar_kernels();
  const auto tables = simd_tables();
  for (uint32_t bits : kWidths) {
    for (int iter = 0; iter < 40; ++iter) {
      const uint32_t out = 1 + uint32_t(rng() % 41);
      const uint32_t in = iter % 8 == 0 ? codec::kGroup * (1 + uint32_t(rng() % 4)) : 1 + uint32_t(rng() % 900);
      const uint32_t count = 1 + uint32_t(iter % 9);
      auto rm = random_matrix(rng, out, in, bits);
      const Int8Codebook cb = random_codebook(rng, bits);
      const auto x = random_activations(rng, in, count);
      QuantizedActivations a;
      scalar.quantize_activations(x.data(), in, count, a);
      const uint32_t rb = iter % 3 == 0 ? 0 : uint32_t(rng() % out);
      const uint32_t re = rb + 1 + uint32_t(rng() % (out - rb));
      const size_t stride = out + rng() % 5;
      const auto want = run_matmul(scalar, rm.m, cb, a, rb, re, stride);
      for (const KernelTable* t : tables) {
        const auto got = run_matmul(*t, rm.m, cb, a, rb, re, stride);
        const long d = first_difference(got, want);
        INFO("table " << t->name << " bits " << bits << " out " << out << " in " << in << " count " << count
                      << " rows [" << rb << ", " << re << ") stride " << stride << " first diff " << d);
        CHECK(d == -1);
      }
    }
  }
}

TEST_CASE("cq_matmul: one input against several matrices, then changed in place") {
  // How the engine calls it (q/k/v/gate read one input, the three Φ another):
  // matrices of several widths and row counts in turn on the same activations,
  // each in row ranges (pool tasks); then the activations change in place (one
  // byte, one scale, each announced by mark_written) and are quantised again
  // into the same buffers. The tables that keep the input prepared between
  // calls must see every change.
  std::mt19937 rng(99);
  const KernelTable& scalar = cact::kernels::scalar_kernels();
  for (const uint32_t in : {768u, 640u, 3072u}) {
    for (const uint32_t count : {1u, 9u, 48u}) {
      QuantizedActivations a;
      scalar.quantize_activations(random_activations(rng, in, count).data(), in, count, a);
      std::vector<RandomMatrix> ms;
      std::vector<Int8Codebook> cbs;
      for (const uint32_t bits : {2u, 4u, 2u, codec::kTernary, 1u, 2u}) {
        // 4-16 rows as the Φ products, 16 or more as the row-lane tiles take
        // (halves of 16-40 rows: one whole 16-row tile, several, and a partial last one)
        const uint32_t out = ms.size() % 2 == 0 ? 33 + uint32_t(rng() % 48) : 1 + uint32_t(rng() % 16);
        ms.push_back(random_matrix(rng, out, in, bits));
        cbs.push_back(random_codebook(rng, bits));
      }
      for (int round = 0; round < 4; ++round) {
        if (round == 1) a.q[size_t(rng() % (size_t(in) * count))] ^= 0x15;  // one activation byte
        if (round == 2) a.scale[a.scale.size() - 1] *= 1.5f;                // one scale
        if (round == 1 || round == 2) a.mark_written();
        if (round == 3) scalar.quantize_activations(random_activations(rng, in, count).data(), in, count, a);
        for (size_t i = 0; i < ms.size(); ++i) {
          const uint32_t out = ms[i].m.out, split = out / 2;
          const auto want = run_matmul(scalar, ms[i].m, cbs[i], a, 0, out, out);
          for (const KernelTable* t : simd_tables()) {
            INFO("table " << t->name << " in " << in << " count " << count << " round " << round << " matrix " << i);
            std::vector<float> got(size_t(out) * count, sentinel());
            t->cq_matmul(ms[i].m, cbs[i], a, split, out, got.data(), out);
            t->cq_matmul(ms[i].m, cbs[i], a, 0, split, got.data(), out);
            CHECK(first_difference(got, want) == -1);
          }
        }
      }
    }
  }
}

TEST_CASE("cq_matmul: matvec and prefill shapes with a shared weight pass") {
  // Larger matrices through every tile path: 8-row tiles, 2x4 / 4x2 / 2x3
  // vector tiles, leftovers; activations from each table's own quantiser.
  std::mt19937 rng(555);
  const KernelTable& scalar = cact::kernels::scalar_kernels();
  for (uint32_t bits : kWidths) {
    const uint32_t out = 45 + bits, in = 520;
    auto rm = random_matrix(rng, out, in, bits);
    const Int8Codebook cb = random_codebook(rng, bits);
    for (uint32_t count : {1u, 2u, 3u, 4u, 5u, 7u, 9u, 16u}) {
      const auto x = random_activations(rng, in, count);
      QuantizedActivations a;
      scalar.quantize_activations(x.data(), in, count, a);
      const auto want = run_matmul(scalar, rm.m, cb, a, 3, out, out);
      for (const KernelTable* t : simd_tables()) {
        QuantizedActivations own;
        t->quantize_activations(x.data(), in, count, own);
        const auto got = run_matmul(*t, rm.m, cb, own, 3, out, out);
        INFO("table " << t->name << " bits " << bits << " count " << count);
        CHECK(first_difference(got, want) == -1);
      }
    }
  }
}

TEST_CASE("cq_matmul: wide rows split the vectors into several cache chunks") {
  // in = 8000 (in_pad 8064): the SIMD tables take 4 (x86) or 8 (NEON) vectors
  // per chunk, so 13 vectors cross chunk boundaries with a ragged tail.
  std::mt19937 rng(13);
  const KernelTable& scalar = cact::kernels::scalar_kernels();
  for (uint32_t bits : {2u, 4u}) {
    const uint32_t out = 11, in = 8000, count = 13;
    auto rm = random_matrix(rng, out, in, bits);
    const Int8Codebook cb = random_codebook(rng, bits);
    const auto x = random_activations(rng, in, count);
    QuantizedActivations a;
    scalar.quantize_activations(x.data(), in, count, a);
    const auto want = run_matmul(scalar, rm.m, cb, a, 1, out, out + 2);
    for (const KernelTable* t : simd_tables()) {
      INFO("table " << t->name << " bits " << bits);
      CHECK(first_difference(run_matmul(*t, rm.m, cb, a, 1, out, out + 2), want) == -1);
    }
  }
}

TEST_CASE("cq_matmul: a codebook holding -128 still matches (avx2 / neon fall back, VNNI / dotprod compute it)") {
  std::mt19937 rng(8);
  const KernelTable& scalar = cact::kernels::scalar_kernels();
  auto rm = random_matrix(rng, 9, 200, 2);
  Int8Codebook cb = random_codebook(rng, 2);
  cb.q[0] = -128;
  const auto x = random_activations(rng, 200, 3);
  QuantizedActivations a;
  scalar.quantize_activations(x.data(), 200, 3, a);
  const auto want = run_matmul(scalar, rm.m, cb, a, 0, 9, 9);
  for (const KernelTable* t : simd_tables()) {
    INFO("table " << t->name);
    CHECK(first_difference(run_matmul(*t, rm.m, cb, a, 0, 9, 9), want) == -1);
  }
}

TEST_CASE("cq_matmul: extreme int8 entries and activations, large bias corrections") {
  // Norms 1, scales 1, codebook scale 1 and 3 groups: y is the exact integer
  // dot (|dot| <= 3 * 128^3 < 2^24). Every table against an integer
  // reference: codebooks at +-127 and -128 (the +128 bias of the VNNI tables
  // maps -128 to 0 and 127 to 255), activations all +127 / -127 / -128 (the
  // VNNI correction 128 * sum(a) at its largest, both signs) or alternating.
  std::mt19937 rng(2024);
  const uint32_t in = 3 * codec::kGroup;
  const int8_t entry_sets[][2] = {{127, 127}, {-127, -127}, {-128, -128}, {127, -128}, {-128, 127}};
  const int8_t act_sets[][2] = {{127, 127}, {-127, -127}, {-128, -128}, {127, -128}, {0, 0}};
  for (uint32_t bits : kWidths) {
    const uint32_t out = 37;
    auto rm = random_matrix(rng, out, in, bits);
    const uint16_t one = cact::float_to_half(1.0f);
    const size_t norms_at = size_t(rm.m.norms - rm.blob.data());
    for (uint32_t i = 0; i < out * 3; ++i) std::memcpy(rm.blob.data() + norms_at + 2 * i, &one, 2);
    std::vector<uint8_t> idx(in);
    for (const auto& es : entry_sets) {
      Int8Codebook cb;
      for (int e = 0; e < 16; ++e) cb.q[e] = es[e % 2];
      cb.scale = 1.0f;
      cb.bits = bits;
      for (const auto& as : act_sets) {
        const uint32_t count = 1 + uint32_t(rng() % 6);
        QuantizedActivations a;
        a.in = in;
        a.in_pad = in;
        a.count = count;
        a.q.resize(size_t(in) * count);
        a.scale.assign(size_t(a.groups()) * count, 1.0f);
        for (size_t i = 0; i < a.q.size(); ++i) a.q[i] = as[i % 2];
        // Integer reference (ternary: the scalar oracle's own crumb mapping).
        std::vector<float> want = run_matmul(cact::kernels::scalar_kernels(), rm.m, cb, a, 0, out, out);
        if (bits != codec::kTernary) {
          for (uint32_t r = 0; r < out; ++r) {
            codec::unpack_indices(rm.m.row(r), in, bits, idx.data());
            for (uint32_t v = 0; v < count; ++v) {
              int32_t dot = 0;
              for (uint32_t i = 0; i < in; ++i) dot += int32_t(cb.q[idx[i]]) * a.vec(v)[i];
              want[size_t(v) * out + r] = float(dot);
            }
          }
        }
        for (const KernelTable* t : cact::kernels::available_kernels()) {
          INFO("table " << t->name << " bits " << bits << " entries " << int(es[0]) << "/" << int(es[1])
                        << " activations " << int(as[0]) << "/" << int(as[1]) << " count " << count);
          CHECK(first_difference(run_matmul(*t, rm.m, cb, a, 0, out, out), want) == -1);
        }
      }
    }
  }
}

TEST_CASE("cq_matmul: every tile shape, rows and vectors not multiples of the tile") {
  // 16-row (512-bit) and 8-row tiles, 4x4 / 4x3 / 8x2 and 2x4 / 2x3 / 4x2
  // vector tiles, 2-row and 1-row leftovers, row ranges starting mid-tile.
  std::mt19937 rng(1616);
  const KernelTable& scalar = cact::kernels::scalar_kernels();
  for (uint32_t bits : kWidths) {
    for (uint32_t out : {15u, 16u, 17u, 33u, 47u}) {
      auto rm = random_matrix(rng, out, 300, bits);
      const Int8Codebook cb = random_codebook(rng, bits);
      for (uint32_t count : {1u, 2u, 3u, 5u, 6u, 11u, 17u}) {
        const auto x = random_activations(rng, 300, count);
        QuantizedActivations a;
        scalar.quantize_activations(x.data(), 300, count, a);
        const uint32_t rb = out % 2;
        const auto want = run_matmul(scalar, rm.m, cb, a, rb, out, out);
        for (const KernelTable* t : simd_tables()) {
          INFO("table " << t->name << " bits " << bits << " out " << out << " count " << count);
          CHECK(first_difference(run_matmul(*t, rm.m, cb, a, rb, out, out), want) == -1);
        }
      }
    }
  }
}

namespace {

// The table of that name, or nullptr where this CPU/OS does not offer it.
const KernelTable* table_named(const char* name) {
  for (const KernelTable* t : cact::kernels::available_kernels()) {
    if (std::string(t->name) == name) return t;
  }
  return nullptr;
}

// One randomised product of `table` against the scalar oracle, case `iter` of
// a series: a random shape (whole groups every 4th case, 9 to 24 groups —
// wider than the tiles' group spans — every 7th), codebook (an entry -128
// every 5th), activations (raw -128..127 every 3rd), row range (a tail every
// 2nd) and output stride.
void check_random_product(const KernelTable& table, std::mt19937& rng, uint32_t bits, int iter, uint32_t count) {
  const KernelTable& scalar = cact::kernels::scalar_kernels();
  const uint32_t out = 1 + uint32_t(rng() % 70);
  const uint32_t in = iter % 7 == 3   ? codec::kGroup * (9 + uint32_t(rng() % 16)) - uint32_t(rng() % 2) * 37
                      : iter % 4 == 0 ? codec::kGroup * (1 + uint32_t(rng() % 5))
                                      : 1 + uint32_t(rng() % 700);
  auto rm = random_matrix(rng, out, in, bits);
  Int8Codebook cb = random_codebook(rng, bits);
  if (iter % 5 == 1) cb.q[rng() % 4] = -128;
  QuantizedActivations a;
  if (iter % 3 == 2) {
    a = raw_activations(rng, in, count);  // -128..127, scales 1
  } else {
    const auto x = random_activations(rng, in, count);
    scalar.quantize_activations(x.data(), in, count, a);
  }
  const uint32_t rb = iter % 2 == 0 ? 0 : uint32_t(rng() % out);
  const uint32_t re = rb + 1 + uint32_t(rng() % (out - rb));
  const size_t stride = out + rng() % 3;
  const auto want = run_matmul(scalar, rm.m, cb, a, rb, re, stride);
  const long d = first_difference(run_matmul(table, rm.m, cb, a, rb, re, stride), want);
  INFO("table " << table.name << " bits " << bits << " out " << out << " in " << in << " count " << count << " rows ["
                << rb << ", " << re << ") stride " << stride << " first diff " << d);
  CHECK(d == -1);
}

}  // namespace

TEST_CASE("cq_matmul: the avx512-vbmi row-lane tiles (CQ2, 8 or more vectors) equal scalar bit for bit") {
  // avx512-vbmi runs CQ2 and ternary products of >= 8 vectors with one row per
  // int32 lane: 16-row tiles decoded once (rows past the range repeat row 0),
  // whole blocks of 8 vectors, the other tiles for the leftover vectors.
  const KernelTable* vbmi = table_named("avx512-vbmi");
  if (vbmi == nullptr) {
    MESSAGE("skipped: no avx512-vbmi table on this CPU/OS");
    return;
  }
  std::mt19937 rng(8080);
  for (uint32_t bits : {2u, codec::kTernary}) {
    for (int iter = 0; iter < 24; ++iter) {
      const uint32_t counts[] = {8, 9, 15, 16, 23, 24, 64, 8 + uint32_t(rng() % 60)};
      check_random_product(*vbmi, rng, bits, iter, counts[iter % 8]);
    }
  }
}

TEST_CASE("cq_matmul: the AMX-INT8 tiles (6 or more vectors) equal scalar bit for bit") {
  // avx512-amx runs products of >= 6 vectors on the tile unit: 16-row weight
  // blocks (leftover rows zero-padded), 16-vector blocks (leftover vectors
  // zero-padded), signed x signed dots (TDPBSSD, any int8 on both sides).
  const KernelTable* amx = table_named("avx512-amx");
  if (amx == nullptr) {
    MESSAGE(
        "skipped: no avx512-amx table on this CPU/OS (needs AMX-INT8, AVX512-VBMI, tile data granted; "
        "CACT_ISA=avx512-vbmi leaves it out)");
    return;
  }
  std::mt19937 rng(6464);
  for (uint32_t bits : kWidths) {
    for (int iter = 0; iter < 16; ++iter) {
      const uint32_t counts[] = {16, 17, 31, 32, 64, 6 + uint32_t(rng() % 60), 5, 6, 7, 15};
      check_random_product(*amx, rng, bits, iter, counts[iter % 10]);
    }
  }
  // Slices of 1 to 7 rows: the tile unit from 32 vectors, the vbmi tiles below.
  for (uint32_t bits : kWidths) {
    for (uint32_t rows = 1; rows < 8; ++rows) {
      const uint32_t out = rows + 3 + uint32_t(rng() % 20), in = 1 + uint32_t(rng() % 600);
      const uint32_t count = rows % 2 == 0 ? 32 + uint32_t(rng() % 40) : 6 + uint32_t(rng() % 26);
      auto rm = random_matrix(rng, out, in, bits);
      const Int8Codebook cb = random_codebook(rng, bits);
      QuantizedActivations a;
      const auto x = random_activations(rng, in, count);
      cact::kernels::scalar_kernels().quantize_activations(x.data(), in, count, a);
      const uint32_t rb = uint32_t(rng() % (out - rows + 1));
      INFO("bits " << bits << " rows [" << rb << ", " << rb + rows << ") of " << out << " in " << in << " count "
                   << count);
      CHECK(first_difference(run_matmul(*amx, rm.m, cb, a, rb, rb + rows, out),
                             run_matmul(cact::kernels::scalar_kernels(), rm.m, cb, a, rb, rb + rows, out)) == -1);
    }
  }
  // Extremes against an integer reference: every product +-127*127 or 128*128,
  // 3 groups (|dot| <= 3 * 128^3 < 2^24 converts exactly).
  const uint32_t in = 3 * codec::kGroup, out = 19, count = 33;
  for (uint32_t bits : {1u, 2u, 4u}) {
    auto rm = random_matrix(rng, out, in, bits);
    const uint16_t one = cact::float_to_half(1.0f);
    const size_t norms_at = size_t(rm.m.norms - rm.blob.data());
    for (uint32_t i = 0; i < out * 3; ++i) std::memcpy(rm.blob.data() + norms_at + 2 * i, &one, 2);
    for (int8_t e : {int8_t(-128), int8_t(127), int8_t(-127)}) {
      for (int8_t q : {int8_t(-128), int8_t(127)}) {
        Int8Codebook cb;
        for (auto& v : cb.q) v = e;
        cb.scale = 1.0f;
        cb.bits = bits;
        QuantizedActivations a;
        a.in = a.in_pad = in;
        a.count = count;
        a.q.assign(size_t(in) * count, q);
        a.scale.assign(size_t(a.groups()) * count, 1.0f);
        const auto got = run_matmul(*amx, rm.m, cb, a, 0, out, out);
        INFO("bits " << bits << " entry " << int(e) << " activation " << int(q));
        CHECK(got[0] == float(int32_t(in) * e * q));
        CHECK(first_difference(got, run_matmul(cact::kernels::scalar_kernels(), rm.m, cb, a, 0, out, out)) == -1);
      }
    }
  }
}

TEST_CASE("dequantize_row: every table equals codec::dequantize_row bit for bit") {
  // Every width, ragged widths (a last group shorter than 128 goes through a
  // buffer: nothing past `in` may be written), zero norms, the standard
  // codebooks and random ones (any sign and size: the lookup must not assume
  // an ascending or symmetric table).
  std::mt19937 rng(77);
  const auto stored = codec::standard_codebooks();
  std::uniform_real_distribution<float> entry(-4.0f, 4.0f);
  for (int iter = 0; iter < 200; ++iter) {
    const uint32_t bits = kWidths[iter % 5];
    const uint32_t in = iter < 10 ? codec::kGroup * (1 + uint32_t(iter) % 6) : 1 + uint32_t(rng() % 700);
    const uint32_t out = 1 + uint32_t(rng() % 9);
    auto rm = random_matrix(rng, out, in, bits);
    std::vector<float> codebook = codec::codebook_for(bits, stored);
    if (iter % 3 == 0) {
      for (float& e : codebook) e = entry(rng);
    }
    REQUIRE(codebook.size() == codec::levels(bits));
    const uint32_t r = uint32_t(rng() % out);
    std::vector<float> want(in + 16, sentinel());
    codec::dequantize_row(rm.m, r, codebook, want.data());
    for (const KernelTable* t : cact::kernels::available_kernels()) {
      std::vector<float> got(in + 16, sentinel());
      t->dequantize_row(rm.m, codebook.data(), r, got.data());
      INFO("table " << t->name << " bits " << bits << " in " << in << " row " << r);
      CHECK(first_difference(got, want) == -1);
    }
  }
}

TEST_CASE("scalar cq_matmul approximates the float dequantised matvec") {
  // Error model: with codebook entries c = q*sc + e (|e| <= sc/2) and rotated
  // activations u = a*sa + d (|d| <= sa/2), group g of row r contributes
  //   n * sum(c*u) - n * sum(q*sc * a*sa) = n * sum(e*u + q*sc*d),
  // so |y - y_float| <= sum_g n_g * (sc/2 * |u_g|_1 + sa_g/2 * |q_g*sc|_1)
  // (plus float rounding, allowed as 1e-4 of sum n*|c*u|). On Gaussian data the
  // relative L2 error stays under 2% at every width (int8 resolution).
  std::mt19937 rng(2024);
  const auto stored = codec::standard_codebooks();
  const KernelTable& scalar = cact::kernels::scalar_kernels();
  for (uint32_t bits : kWidths) {
    const uint32_t out = 33, in = 300;
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> w(size_t(out) * in), x(in);
    for (auto& v : w) v = nd(rng);
    for (auto& v : x) v = nd(rng);
    const auto codebook = codec::codebook_for(bits, stored);
    const auto blob = codec::quantize_matrix(w.data(), out, in, bits, codebook);
    const auto m = codec::view_matrix(blob, out, in, bits);
    const auto cb = cact::kernels::make_int8_codebook(codebook, bits);
    QuantizedActivations a;
    scalar.quantize_activations(x.data(), in, 1, a);
    std::vector<float> y(out);
    scalar.cq_matmul(m, cb, a, 0, out, y.data(), out);

    // Rotated float activations, for the bound.
    std::vector<float> u(a.in_pad, 0.0f);
    std::copy(x.begin(), x.end(), u.begin());
    for (uint32_t g = 0; g < a.groups(); ++g) codec::fwht(u.data() + g * codec::kGroup, codec::kGroup);

    double err2 = 0.0, ref2 = 0.0;
    std::vector<float> row(in);
    std::vector<uint8_t> idx(m.in_pad);
    for (uint32_t r = 0; r < out; ++r) {
      codec::dequantize_row(m, r, codebook, row.data());
      double ref = 0.0;
      for (uint32_t i = 0; i < in; ++i) ref += double(row[i]) * x[i];
      codec::unpack_indices(m.row(r), m.in_pad, bits, idx.data());
      double bound = 0.0, mag = 0.0;
      for (uint32_t g = 0; g < m.groups_per_row(); ++g) {
        double u1 = 0.0, c1 = 0.0, cu = 0.0;
        for (uint32_t i = 0; i < codec::kGroup; ++i) {
          const double c = double(cb.q[idx[g * codec::kGroup + i]]) * cb.scale;
          u1 += std::fabs(u[g * codec::kGroup + i]);
          c1 += std::fabs(c);
          cu += std::fabs(c * u[g * codec::kGroup + i]);
        }
        const double n = m.norm(r, g);
        bound += n * (cb.scale / 2 * u1 + a.scale[g] / 2 * c1);
        mag += n * cu;
      }
      INFO("bits " << bits << " row " << r << " y " << y[r] << " ref " << ref << " bound " << bound);
      CHECK(std::fabs(y[r] - ref) <= bound + 1e-4 * mag + 1e-6);
      err2 += (y[r] - ref) * (y[r] - ref);
      ref2 += ref * ref;
    }
    const double rel = std::sqrt(err2 / ref2);
    MESSAGE("CQ-W2A8 vs float dequantised matvec, bits " << bits << ": relative L2 error " << rel);
    CHECK(rel < 0.02);
  }
}
