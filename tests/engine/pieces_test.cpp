// White-box checks of the engine's pieces against direct formulas:
// visibility ranges, KV cache formats and ring/pinned storage, Sinkhorn,
// tied vs block-untied Hadamard factors, the causal conv ring, engram hashing,
// the sampler's generator.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "cact/codec.h"
#include "cact/sampler.h"
#include "engine/conv.h"
#include "engine/engram.h"
#include "engine/forward.h"
#include "engine/hadamard_mlp.h"
#include "engine/kv_cache.h"
#include "engine/mhc.h"
#include "random_vector.h"

using namespace cact::engine;
using cact::test::random_vector;

namespace {
// softmax(q·k/sqrt(d)) v over the listed positions, in double.
std::vector<double> brute_attention(const std::vector<float>& q, const std::vector<std::vector<float>>& keys,
                                    const std::vector<std::vector<float>>& values, const std::vector<uint32_t>& pos) {
  const size_t dq = q.size(), dv = values[0].size();
  std::vector<double> s;
  double mx = -1e300;
  for (uint32_t p : pos) {
    double d = 0.0;
    for (size_t i = 0; i < dq; ++i) d += double(q[i]) * keys[p][i];
    s.push_back(d / std::sqrt(double(dq)));
    mx = std::max(mx, s.back());
  }
  double sum = 0.0;
  for (double& x : s) sum += (x = std::exp(x - mx));
  std::vector<double> out(dv, 0.0);
  for (size_t j = 0; j < pos.size(); ++j) {
    for (size_t i = 0; i < dv; ++i) out[i] += s[j] / sum * values[pos[j]][i];
  }
  return out;
}

std::vector<float> dequantized_cq64(const std::vector<float>& x, uint32_t bits, const std::vector<float>& cb) {
  const auto blob = cact::codec::quantize_matrix(x.data(), 1, uint32_t(x.size()), bits, cb, 64);
  const auto m = cact::codec::view_matrix(blob, 1, uint32_t(x.size()), bits, 64);
  std::vector<float> out(x.size());
  cact::codec::dequantize_row(m, 0, cb, out.data());
  return out;
}
}  // namespace

TEST_CASE("visibility: causal, sliding window, span and sinks") {
  Visibility v;
  PosRange r[2];
  v.sliding_window = 4;
  CHECK(v.ranges(10, true, r) == 1);
  CHECK((r[0].first == 0 && r[0].last == 10));
  CHECK(v.ranges(10, false, r) == 1);
  CHECK((r[0].first == 7 && r[0].last == 10));
  CHECK(v.ranges(2, false, r) == 1);
  CHECK((r[0].first == 0 && r[0].last == 2));
  v.span = 6;
  v.sinks = 2;
  CHECK(v.ranges(10, true, r) == 2);  // sinks 0..1, then the last 6
  CHECK((r[0].first == 0 && r[0].last == 1 && r[1].first == 5 && r[1].last == 10));
  CHECK(v.ranges(6, true, r) == 2);
  CHECK((r[0].first == 0 && r[0].last == 0 && r[1].first == 1 && r[1].last == 6));
  CHECK(v.ranges(5, true, r) == 1);  // the span still covers the sinks
  CHECK((r[0].first == 0 && r[0].last == 5));
  CHECK(v.ranges(10, false, r) == 1);  // local: the window (4) is tighter than the span; sinks are out of it
  CHECK((r[0].first == 7 && r[0].last == 10));
  v.sliding_window = 20;
  CHECK(v.ranges(10, false, r) == 2);  // local layer, sinks still inside its window
  CHECK((r[0].first == 0 && r[0].last == 1 && r[1].first == 5 && r[1].last == 10));
}

TEST_CASE("KV cache: every format against direct attention, through the ring and the pinned rows") {
  std::mt19937 rng(7);
  const uint32_t K = 2, dq = 32, dv = 48, pinned = 3, ring = 6, total = 40;
  std::vector<float> cb4 = cact::codec::codebook_for(4, cact::codec::standard_codebooks(), 64);
  for (KvFormat format : {KvFormat::f32, KvFormat::int8, KvFormat::cq}) {
    KvCache cache;
    cache.init(format, K, dq, dv, pinned, ring, 4, cb4, &cact::kernels::scalar_kernels());
    AttendScratch scratch;
    scratch.reserve(cache.rows(), dq, dv);
    std::vector<std::vector<float>> keys(total * K), values(total * K);
    double worst = 0.0;
    for (uint32_t p = 0; p < total; ++p) {
      std::vector<float> k = random_vector(rng, K * dq), v = random_vector(rng, K * dv);
      cache.write(p, k.data(), v.data());
      for (uint32_t h = 0; h < K; ++h) {
        std::vector<float> kh(k.begin() + h * dq, k.begin() + (h + 1) * dq);
        std::vector<float> vh(v.begin() + h * dv, v.begin() + (h + 1) * dv);
        if (format == KvFormat::cq) {
          kh = dequantized_cq64(kh, 4, cb4);
          vh = dequantized_cq64(vh, 4, cb4);
        }
        keys[h * total + p] = kh;
        values[h * total + p] = vh;
      }
      if (p < 8) continue;
      const PosRange ranges[2] = {{0, 2}, {p - 5, p}};  // pinned sinks + the ring's last 6
      for (uint32_t h = 0; h < K; ++h) {
        const std::vector<float> q = random_vector(rng, dq, 2.0f);
        std::vector<float> out(dv);
        cache.attend(q.data(), h, ranges, out.data(), scratch);
        std::vector<uint32_t> pos{0, 1, 2};
        for (uint32_t s = p - 5; s <= p; ++s) pos.push_back(s);
        std::vector<std::vector<float>> kk(keys.begin() + h * total, keys.begin() + (h + 1) * total);
        std::vector<std::vector<float>> vv(values.begin() + h * total, values.begin() + (h + 1) * total);
        const auto want = brute_attention(q, kk, vv, pos);
        for (uint32_t i = 0; i < dv; ++i) worst = std::max(worst, std::fabs(out[i] - want[i]));
      }
    }
    // f32 and cq (against dequantised vectors) are exact up to rounding; int8
    // carries its quantisation error.
    INFO("format " << int(format) << " worst " << worst);
    CHECK(worst < (format == KvFormat::int8 ? 0.05 : 1e-4));
  }
}

TEST_CASE("sinkhorn gives a doubly stochastic matrix") {
  double m[16] = {0.3, -1.2, 2.0, 0.1, 1.5, 0.2, -0.7, 0.0, -2.0, 0.9, 0.4, 1.1, 0.6, 0.6, -0.3, 2.2};
  sinkhorn(m, 4);
  for (int i = 0; i < 4; ++i) {
    double row = 0.0, col = 0.0;
    for (int j = 0; j < 4; ++j) {
      row += m[i * 4 + j];
      col += m[j * 4 + i];
    }
    CHECK(col == doctest::Approx(1.0).epsilon(1e-12));  // columns were normalised last
    CHECK(row == doctest::Approx(1.0).epsilon(1e-3));
  }
}

TEST_CASE("block-untied factors with equal blocks equal the tied factors; F is Aᵀ W B") {
  std::mt19937 rng(3);
  const uint32_t ba = 4, bb = 8;
  const auto w = random_vector(rng, ba * bb), A = random_vector(rng, ba * ba), B = random_vector(rng, bb * bb);
  std::vector<float> Au, Bu;
  for (uint32_t j = 0; j < bb; ++j) Au.insert(Au.end(), A.begin(), A.end());
  for (uint32_t k = 0; k < ba; ++k) Bu.insert(Bu.end(), B.begin(), B.end());
  std::vector<float> tied(ba * bb), untied(ba * bb), tmp(ba * bb);
  hada_factor(w.data(), A.data(), B.data(), ba, bb, false, tied.data(), tmp.data());
  hada_factor(w.data(), Au.data(), Bu.data(), ba, bb, true, untied.data(), tmp.data());
  for (uint32_t k = 0; k < ba; ++k) {
    for (uint32_t l = 0; l < bb; ++l) {
      double want = 0.0;
      for (uint32_t i = 0; i < ba; ++i) {
        for (uint32_t j = 0; j < bb; ++j) want += double(w[i * bb + j]) * A[i * ba + k] * B[j * bb + l];
      }
      CHECK(tied[k * bb + l] == doctest::Approx(want).epsilon(1e-5));
      CHECK(untied[k * bb + l] == doctest::Approx(want).epsilon(1e-5));
    }
  }
}

TEST_CASE("causal conv ring equals the direct sum across chunks") {
  std::mt19937 rng(5);
  const uint32_t dim = 3, taps = 4, dil = 3, total = 30;
  const auto w = random_vector(rng, taps * dim);
  const auto x = random_vector(rng, total * dim);
  CausalConv conv;
  conv.init(dim, taps, dil, 5);
  std::vector<float> out(5 * dim), window(conv.spill_floats());
  uint32_t t = 0;
  for (uint32_t chunk : {1u, 5u, 2u, 5u, 3u, 5u, 4u, 5u}) {
    std::copy(x.begin() + t * dim, x.begin() + (t + chunk) * dim, conv.input(chunk, window.data()));
    conv.run(w.data(), chunk, out.data());
    for (uint32_t c = 0; c < chunk; ++c) {
      for (uint32_t i = 0; i < dim; ++i) {
        double want = 0.0;
        for (uint32_t j = 0; j < taps; ++j) {
          if (t + c >= j * dil) want += double(w[j * dim + i]) * x[(t + c - j * dil) * dim + i];
        }
        CHECK(out[c * dim + i] == doctest::Approx(want).epsilon(1e-5));
      }
    }
    t += chunk;
  }
}

TEST_CASE("causal conv: decode rows in place, chunks in the lent window, the bits of one whole chunk") {
  std::mt19937 rng(11);
  const uint32_t dim = 20, taps = 3, max_chunk = 24, total = 200;
  const auto w = random_vector(rng, taps * dim);
  const auto x = random_vector(rng, total * dim);
  // The reference: all positions as one chunk.
  CausalConv whole;
  whole.init(dim, taps, 1, total);
  std::vector<float> whole_window(whole.spill_floats()), want(total * dim);
  std::copy_n(x.begin(), total * dim, whole.input(total, whole_window.data()));
  whole.run(w.data(), total, want.data());

  CausalConv conv;
  conv.init(dim, taps, 1, max_chunk);
  CHECK(conv.bytes() < size_t(max_chunk) * dim * sizeof(float));  // the state holds no chunk
  std::vector<float> window(conv.spill_floats()), got(max_chunk * dim);
  uint32_t t = 0;
  // Single rows slide through the slack in place, longer chunks spill: the
  // history must cross between the two in both directions.
  for (uint32_t chunk : {1u, 24u, 1u, 1u, 9u, 8u, 24u, 3u, 1u, 1u, 1u, 1u, 1u, 1u, 1u, 17u, 24u, 2u, 24u, 8u}) {
    if (t + chunk > total) break;
    std::copy_n(x.begin() + t * dim, chunk * dim, conv.input(chunk, window.data()));
    // rows() over two column ranges, then slide(): what attention does.
    for (uint32_t c = 0; c < chunk; ++c) {
      conv.rows(w.data(), c, 0, 7, got.data() + c * dim);
      conv.rows(w.data(), c, 7, dim, got.data() + c * dim);
    }
    conv.slide(chunk);
    CHECK(std::equal(got.begin(), got.begin() + chunk * dim, want.begin() + t * dim));
    t += chunk;
  }
  CHECK(t > 150);
}

TEST_CASE("engram slots: exact uint32 hashing, n-grams before position 0 switched off") {
  Geometry g;
  g.orders = 2;
  g.order = {2, 3, 0, 0};
  g.heads_per_order = 1;
  g.seed_stride = 1;
  g.E = 2;
  g.Z = 1024;
  const int32_t toks[] = {2, 716, 502};
  int32_t slots[2];
  engram_slots(g, toks + 2, 2, slots);
  CHECK(slots[1] == 363);  // order 3 over 502, 716, 2 (values from a Python transcription of MODEL.md)
  engram_slots(g, toks + 1, 1, slots);
  CHECK(slots[0] == 213);  // order 2 over 716, 2
  CHECK(slots[1] == -1);   // order 3 would reach position -1
  g.heads_per_order = 3;
  g.seed_stride = 3;
  g.E = 6;
  g.Z = 18432;
  int32_t six[6];
  engram_slots(g, toks + 2, 2, six);
  CHECK(six[5] == 18213);  // oi 1, head 2
}

TEST_CASE("sampler generator: splitmix64-seeded xoshiro256**") {
  cact::Rng rng(42);
  CHECK(rng.next() == 0x15780b2e0c2ec716ull);
  CHECK(rng.next() == 0x6104d9866d113a7eull);
  CHECK(rng.next() == 0xae17533239e499a1ull);
}
