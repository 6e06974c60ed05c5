// Slicing synthetic archives (cact::synth): the shipped needle3 geometry with
// its confidence head, micro models with three heads, without conv taps, with
// block-untied factors and mixed CQ widths (binary, CQ3, ternary rows).
#include <doctest/doctest.h>

#include "cact/model.h"
#include "cact/slice.h"
#include "cact/synth.h"
#include "model/slice_check.h"

using cact::Model;
using V = std::vector<uint32_t>;

namespace {

struct Archive {
  std::vector<uint8_t> bytes;
  Model model;
  explicit Archive(const cact::SynthSpec& spec)
      : bytes(cact::synth_archive_bytes(spec)), model(Model::from_bytes(bytes)) {}
  explicit Archive(std::vector<uint8_t> b) : bytes(std::move(b)), model(Model::from_bytes(bytes)) {}
  Archive(const Archive&) = delete;
};

const Model& needle3() {
  static const Archive a(cact::synth_preset("needle3"));
  return a.model;
}

std::vector<uint8_t> slice(const Model& m, const V& blocks, uint32_t context = 0) {
  return cact::slice_bytes(m, cact::plan_slice(m, blocks, context));
}

// Every rung of `m`: passes the archive check and the independent slice check;
// full depth is byte-identical.
void check_all_rungs(const Model& m) {
  const uint32_t L = m.header().num_layers;
  for (uint32_t d = 2; d <= L; ++d) {
    CAPTURE(d);
    const V blocks = cact::rung(L, d);
    const cact::SlicePlan plan = cact::plan_slice(m, blocks);
    const std::vector<uint8_t> bytes = cact::slice_bytes(m, plan);
    const cact::SlicedArchive a = cact::slice_archive(m, plan);
    CHECK(cact::test::same_bytes(bytes, cact::archive_bytes(a.header, a.codebooks, a.tensors)));
    const std::vector<std::string> problems = cact::check_archive(bytes);
    CHECK_MESSAGE(problems.empty(), (problems.empty() ? "" : problems.front()));
    const Archive out(bytes);
    cact::test::check_slice(m, out.model, blocks);
    if (d == L) CHECK(cact::test::same_bytes(bytes, m.bytes()));
  }
}

}  // namespace

TEST_CASE("slice: needle3 --layers 8") {
  const Model& src = needle3();
  REQUIRE(src.records().size() == 581);
  const cact::SlicePlan p = cact::plan_slice(src, cact::rung(20, 8));
  CHECK(p.blocks == V{0, 4, 6, 9, 11, 14, 16, 19});
  REQUIRE(p.sites.size() == 2);
  CHECK(p.sites[0].old_site == 2);
  CHECK(p.sites[0].old_layer == 11);
  CHECK(p.sites[0].new_site == 0);
  CHECK(p.sites[0].new_layer == 4);
  CHECK(p.sites[1].old_site == 4);
  CHECK(p.sites[1].old_layer == 19);
  CHECK(p.sites[1].new_site == 1);
  CHECK(p.sites[1].new_layer == 7);
  CHECK(p.dropped_sites == V{3, 7, 15});
  // All four global layers survive: 4 -> 1, 9 -> 3, 14 -> 5, 19 -> 7.
  REQUIRE(p.global_layers.size() == 4);
  const uint32_t expect[4][2] = {{4, 1}, {9, 3}, {14, 5}, {19, 7}};
  for (size_t i = 0; i < 4; ++i) {
    CHECK(p.global_layers[i].old_layer == expect[i][0]);
    CHECK(p.global_layers[i].new_layer == expect[i][1]);
  }
  CHECK(p.dropped_global.empty());
  CHECK(p.header.global_mask_lo == ((1u << 1) | (1u << 3) | (1u << 5) | (1u << 7)));
  CHECK(p.header.num_engram_sites == 2);
  CHECK(p.header.engram_sites[0] == 4);
  CHECK(p.header.engram_sites[1] == 7);
  // 1 + 8 x 27 + 11 + 2 x 4 + 1 + 7 (manifest and the confidence head) + 1.
  CHECK(p.header.num_tensors == 245);
  CHECK(p.warnings.empty());

  const std::vector<uint8_t> bytes = cact::slice_bytes(src, p);
  CHECK(bytes.size() == p.output_bytes);
  CHECK(cact::check_archive(bytes).empty());
  const Archive out(bytes);
  const size_t verbatim = cact::test::check_slice(src, out.model, p.blocks);
  // embedding, 8 x 27, hada_p1/p2, 2 x 4 site tensors, final_norm, tokenizer,
  // manifest, query, proj, bias.
  CHECK(verbatim == 1 + 216 + 2 + 8 + 1 + 1 + 1 + 3);
  // The confidence head keeps cell rows 0, 1, 5, 7, 10, 12, 15, 17, 20 (k = 4 probes each).
  const cact::HeadLayout& head = out.model.canon().heads().at(0);
  CHECK(out.model.record(head.at(cact::HeadSlot::probes)).shape[0] == 9 * 4);
  CHECK(out.model.record(head.at(cact::HeadSlot::gain)).shape[0] == 9);
  CHECK(out.model.record(head.at(cact::HeadSlot::row_bias)).shape[1] == 9);
  MESSAGE("needle3 rung 8: " << bytes.size() << " of " << src.bytes().size() << " bytes");
}

TEST_CASE("slice: needle3 rungs of rungs") {
  const Model& src = needle3();
  // Rungs 8 and 12 of the 20-layer ladder are closed: every smaller rung of
  // them is the original's rung, down to the bytes.
  for (uint32_t d1 : {8u, 12u}) {
    const Archive outer(slice(src, cact::rung(20, d1)));
    for (uint32_t d2 = 2; d2 < d1; ++d2) {
      CAPTURE(d1);
      CAPTURE(d2);
      CHECK(cact::test::same_bytes(slice(outer.model, cact::rung(d1, d2)), slice(src, cact::rung(20, d2))));
    }
  }
  // Rung 6 is not: its own rung 4 keeps 0 6 9 19, the original's rung 4 is 0 9 14 19.
  // The file is still exactly the original sliced to those blocks.
  const Archive six(slice(src, cact::rung(20, 6)));
  CHECK(cact::test::same_bytes(slice(six.model, cact::rung(6, 4)), slice(src, V{0, 6, 9, 19})));
  CHECK_FALSE(cact::test::same_bytes(slice(six.model, cact::rung(6, 4)), slice(src, cact::rung(20, 4))));
}

TEST_CASE("slice: needle3 full depth and --context") {
  const Model& src = needle3();
  V all(20);
  for (uint32_t i = 0; i < 20; ++i) all[i] = i;
  CHECK(cact::test::same_bytes(slice(src, all), src.bytes()));
  const cact::SlicePlan p = cact::plan_slice(src, cact::rung(20, 8), 512);
  CHECK(p.header.max_seq_len == 512);
  CHECK(p.header.sliding_window == 512);
  CHECK(p.header.kv_window == 256);
  const cact::SlicePlan q = cact::plan_slice(src, cact::rung(20, 8), 200);
  CHECK(q.header.kv_window == 200);
  CHECK(cact::check_archive(cact::slice_bytes(src, q)).empty());
}

TEST_CASE("slice: micro presets, every rung") {
  for (const char* name : {"micro", "micro-notaps", "micro-heads", "micro-mixed"}) {
    CAPTURE(name);
    const Archive a(cact::synth_preset(name));
    check_all_rungs(a.model);
    // Explicit sets, including ones without the end blocks.
    for (const V& blocks : {V{1}, V{1, 2}, V{0, 2}, V{2, 3}}) {
      CAPTURE(blocks.size());
      const std::vector<uint8_t> bytes = slice(a.model, blocks);
      CHECK(cact::check_archive(bytes).empty());
      const Archive out(bytes);
      cact::test::check_slice(a.model, out.model, blocks);
    }
  }
}

TEST_CASE("slice: heads keep the right probe, gain and row_bias rows") {
  const Archive a(cact::synth_preset("micro-heads"));
  const cact::Canon& c = a.model.canon();
  REQUIRE(c.heads().size() == 3);
  CHECK(c.heads()[1].kind == cact::HeadKind::router);
  const Archive out(slice(a.model, V{1, 3}));
  // Cell rows 0, 2, 4: decode values and compare with the source rows directly.
  const V cells{0, 2, 4};
  for (size_t h = 0; h < 3; ++h) {
    const cact::HeadLayout& hs = c.heads()[h];
    const cact::HeadLayout& ho = out.model.canon().heads()[h];
    const uint32_t k = hs.k, D = a.model.header().d_model;
    const std::vector<float> ps = a.model.values(hs.at(cact::HeadSlot::probes));
    const std::vector<float> po = out.model.values(ho.at(cact::HeadSlot::probes));
    const std::vector<float> gs = a.model.values(hs.at(cact::HeadSlot::gain));
    const std::vector<float> go = out.model.values(ho.at(cact::HeadSlot::gain));
    const std::vector<float> bs = a.model.values(hs.at(cact::HeadSlot::row_bias));
    const std::vector<float> bo = out.model.values(ho.at(cact::HeadSlot::row_bias));
    REQUIRE(po.size() == size_t(3) * k * D);
    REQUIRE(go.size() == size_t(3) * k);
    REQUIRE(bo.size() == size_t(hs.q) * 3 * k);
    for (size_t r = 0; r < 3; ++r) {
      for (uint32_t i = 0; i < k; ++i) {
        for (uint32_t x = 0; x < D; ++x) CHECK(po[(r * k + i) * D + x] == ps[(cells[r] * k + i) * D + x]);
        CHECK(go[r * k + i] == gs[cells[r] * k + i]);
        for (uint32_t j = 0; j < hs.q; ++j) CHECK(bo[(j * 3 + r) * k + i] == bs[(j * 5 + cells[r]) * k + i]);
      }
    }
  }
}

TEST_CASE("slice: row selection at every CQ width") {
  // Binary, CQ3, ternary and CQ4 rows in the mHC and head matrices.
  for (const char* widths :
       {"default=2,mhc_phi=1,probes=3", "default=3,mhc_phi=5,probes=5", "default=4,mhc_phi=3,probes=1"}) {
    CAPTURE(widths);
    cact::SynthSpec spec = cact::synth_preset("micro-heads");
    spec.widths = cact::WidthMap::parse(widths);
    const Archive a(spec);
    check_all_rungs(a.model);
    const std::vector<uint8_t> bytes = slice(a.model, V{0, 2});
    CHECK(cact::check_archive(bytes).empty());  // includes the ternary crumb scan
    const Archive out(bytes);
    cact::test::check_slice(a.model, out.model, V{0, 2});
    // Rows decode to the same floats as the source's rows of layer 2.
    const size_t phi = a.model.canon().shared(cact::SharedSlot::mhc_phi_res);
    const std::vector<float> vs = a.model.values(phi);
    const std::vector<float> vo = out.model.values(out.model.canon().shared(cact::SharedSlot::mhc_phi_res));
    const uint32_t n = a.model.header().mhc_lanes, cols = a.model.record(phi).shape[1];
    for (uint32_t m = 0; m < n * n; ++m) {
      for (uint32_t x = 0; x < cols; ++x) CHECK(vo[(n * n + m) * cols + x] == vs[(2 * n * n + m) * cols + x]);
    }
  }
}
