// Probe heads: the tiny archive with a confidence head (and an embedding head)
// appended; the engine's streaming pool against MODEL.md computed directly
// from every token's cells in double.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "cact/codec.h"
#include "cact/engine.h"
#include "cact/error.h"
#include "cact/half.h"
#include "cact/writer.h"
#include "support/test_paths.h"

namespace {

struct Blob {
  cact::Record record;
  std::vector<uint8_t> bytes;
};

Blob fp16(std::vector<uint32_t> shape, const std::vector<float>& v) {
  Blob b;
  b.record.dtype = cact::Dtype::FP16;
  b.record.ndim = uint8_t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) b.record.shape[i] = shape[i];
  b.bytes.resize(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = cact::float_to_half(v[i]);
    std::memcpy(b.bytes.data() + 2 * i, &h, 2);
  }
  return b;
}

Blob cq(uint32_t out, uint32_t in, const std::vector<float>& w, const std::vector<float>& codebook) {
  Blob b;
  b.record.dtype = cact::Dtype::CQ;
  b.record.ndim = 2;
  b.record.shape[0] = out;
  b.record.shape[1] = in;
  b.record.group = 128;
  b.record.bits = 4;
  b.bytes = cact::codec::quantize_matrix(w.data(), out, in, 4, codebook);
  return b;
}

std::vector<float> random(std::mt19937& rng, size_t n, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Tiny archive + heads.manifest [2, 1] + a confidence head (k 4, q 2) + an embedding head (k 2, q 3, out 16).
std::vector<uint8_t> archive_with_heads() {
  const auto base = cact::Model::open(cact::test::models_dir() / "license-tiny.cact");
  const cact::Header& h = base.header();
  const uint32_t D = h.d_model, rows = h.num_layers + 1;
  const std::vector<float> cb = base.codebook_for(4);
  std::mt19937 rng(11);
  std::vector<Blob> extra;
  extra.push_back(fp16({2}, {2.0f, 1.0f}));
  struct Spec {
    uint32_t k, q, out;
  };
  for (Spec s : {Spec{4, 2, 1}, Spec{2, 3, 16}}) {
    extra.push_back(cq(rows * s.k, D, random(rng, size_t(rows) * s.k * D, 0.3f), cb));
    extra.push_back(fp16({rows, s.k}, random(rng, size_t(rows) * s.k, 1.0f)));
    extra.push_back(cq(s.q, D, random(rng, size_t(s.q) * D, 0.3f), cb));
    extra.push_back(fp16({s.q, rows, s.k}, random(rng, size_t(s.q) * rows * s.k, 0.5f)));
    extra.push_back(cq(s.out, s.q * D, random(rng, size_t(s.out) * s.q * D, 0.1f), cb));
    extra.push_back(fp16({s.out}, random(rng, s.out, 0.2f)));
  }
  std::vector<cact::TensorData> tensors;
  const size_t n = base.records().size();
  for (size_t i = 0; i + 1 < n; ++i) tensors.push_back({base.record(i), base.blob(i)});
  for (const Blob& b : extra) tensors.push_back({b.record, b.bytes});
  tensors.push_back({base.record(n - 1), base.blob(n - 1)});
  return cact::archive_bytes(h, base.codebooks(), tensors);
}

double dotd(const double* a, const std::vector<float>& b, size_t off, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; ++i) s += a[i] * double(b[off + i]);
  return s;
}

// MODEL.md "Probe heads", straight, in double, over cells [T][rows][D].
std::vector<double> direct_head(const cact::Model& m, const cact::HeadLayout& hl, std::span<const float> cells,
                                size_t T) {
  const uint32_t D = m.header().d_model, rows = m.header().num_layers + 1, k = hl.k, q = hl.q;
  const auto P = m.values(hl.at(cact::HeadSlot::probes));
  const auto gain = m.values(hl.at(cact::HeadSlot::gain));
  const auto Q = m.values(hl.at(cact::HeadSlot::query));
  const auto rb = m.values(hl.at(cact::HeadSlot::row_bias));
  const auto proj = m.values(hl.at(cact::HeadSlot::proj));
  const auto bias = m.values(hl.at(cact::HeadSlot::bias));
  const double sq = std::sqrt(double(D));
  std::vector<double> rho(size_t(rows) * k * D, 0.0);
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t i = 0; i < k; ++i) {
      std::vector<double> s(T);
      double mx = -1e300;
      for (size_t t = 0; t < T; ++t) {
        std::vector<double> c(cells.begin() + long((t * rows + r) * D), cells.begin() + long((t * rows + r + 1) * D));
        s[t] = dotd(c.data(), P, size_t(r * k + i) * D, D) / sq;
        mx = std::max(mx, s[t]);
      }
      double sum = 0.0;
      for (double& x : s) sum += (x = std::exp(x - mx));
      double* out = rho.data() + (size_t(r) * k + i) * D;
      for (size_t t = 0; t < T; ++t) {
        for (uint32_t d = 0; d < D; ++d) out[d] += s[t] / sum * cells[(t * rows + r) * D + d];
      }
      double ms = 0.0;
      for (uint32_t d = 0; d < D; ++d) ms += out[d] * out[d];
      const double inv = 1.0 / std::sqrt(ms / D + 1e-6);
      for (uint32_t d = 0; d < D; ++d) out[d] *= inv * gain[r * k + i];
    }
  }
  std::vector<double> pooled(size_t(q) * D, 0.0);
  const size_t PK = size_t(rows) * k;
  for (uint32_t j = 0; j < q; ++j) {
    std::vector<double> w(PK);
    double mx = -1e300;
    for (size_t p = 0; p < PK; ++p) {
      w[p] = dotd(rho.data() + p * D, Q, size_t(j) * D, D) / sq + rb[j * PK + p];
      mx = std::max(mx, w[p]);
    }
    double sum = 0.0;
    for (double& x : w) sum += (x = std::exp(x - mx));
    for (size_t p = 0; p < PK; ++p) {
      for (uint32_t d = 0; d < D; ++d) pooled[size_t(j) * D + d] += w[p] / sum * rho[p * D + d];
    }
  }
  std::vector<double> out(hl.out);
  for (uint32_t o = 0; o < hl.out; ++o) out[o] = dotd(pooled.data(), proj, size_t(o) * q * D, size_t(q) * D) + bias[o];
  return out;
}

}  // namespace

TEST_CASE("probe heads: streaming pool equals MODEL.md over all cells") {
  const std::vector<uint8_t> bytes = archive_with_heads();
  const auto model = cact::Model::from_bytes(bytes);
  REQUIRE(model.canon().heads().size() == 2);
  // 37 tokens: decode steps fold in batches of 16 (Forward's backlog), so the
  // steps below cross two batch boundaries and end inside a third batch.
  std::vector<int32_t> ids{2, 716, 502, 341, 552, 478, 300, 301, 302, 17, 99, 5};
  for (int32_t i = 0; ids.size() < 37; ++i) ids.push_back(4 + (i * 37 + 11) % 700);
  cact::Engine ref(model, {cact::Numerics::reference, nullptr});
  CHECK(ref.has_head(cact::HeadKind::confidence));
  CHECK(ref.has_head(cact::HeadKind::embedding));
  CHECK_FALSE(ref.has_head(cact::HeadKind::router));
  cact::SessionOptions so;
  so.keep_cells = true;
  so.max_chunk = 5;
  cact::Session s(ref, so);
  CHECK_THROWS_AS(s.confidence(), cact::Error);  // no token yet
  s.prefill(ids);
  for (const cact::HeadLayout& hl : model.canon().heads()) {
    const auto want = direct_head(model, hl, s.cells(), ids.size());
    const auto got = s.head_output(hl.kind);
    REQUIRE(got.size() == want.size());
    for (size_t o = 0; o < got.size(); ++o) CHECK(got[o] == doctest::Approx(want[o]).epsilon(1e-4));
  }
  const double conf = 1.0 / (1.0 + std::exp(-direct_head(model, model.canon().heads()[0], s.cells(), ids.size())[0]));
  CHECK(s.confidence() == doctest::Approx(conf).epsilon(1e-5));
  CHECK_THROWS_WITH_AS(s.head_output(cact::HeadKind::router), doctest::Contains("no router head"), cact::Error);

  // Token by token gives the same pooled state, bit for bit (each probe folds
  // the tokens in order whatever the chunk); the int8 path stays close.
  cact::Session one(ref, {.max_chunk = 1});
  for (int32_t id : ids) one.step(id);
  for (const cact::HeadLayout& hl : model.canon().heads()) CHECK(one.head_output(hl.kind) == s.head_output(hl.kind));
  CHECK(one.confidence() == s.confidence());
  cact::Engine q8(model, {cact::Numerics::int8, nullptr});
  cact::Session b(q8);
  b.prefill(ids);
  // int8: token-by-token steps, read mid-way, give the bits of the prefill's
  // chunk (each probe folds the tokens in order either way).
  cact::Session steps(q8);
  for (size_t i = 0; i < ids.size(); ++i) {
    steps.step(ids[i]);
    // Reading does not change the state: in a batch, at its end, just after.
    if (i == 2 || i == 15 || i == 16 || i == 31) CHECK(steps.confidence() > 0.0f);
  }
  for (const cact::HeadLayout& hl : model.canon().heads()) CHECK(steps.head_output(hl.kind) == b.head_output(hl.kind));
  MESSAGE("confidence float " << s.confidence() << ", int8 " << b.confidence());
  CHECK(std::fabs(b.confidence() - s.confidence()) < 0.02);
}
