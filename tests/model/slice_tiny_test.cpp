// Slicing the bundled trained model (models/license-tiny.cact: 4 layers, conv
// taps, engram sites 0 and 2, global layers 1 and 3, no heads).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "cact/error.h"
#include "cact/model.h"
#include "cact/slice.h"
#include "model/slice_check.h"
#include "support/test_paths.h"

using cact::Model;
using V = std::vector<uint32_t>;

namespace {
const Model& tiny() {
  static const Model m = Model::open(cact::test::models_dir() / "license-tiny.cact");
  return m;
}
std::vector<uint8_t> slice(const Model& m, const V& blocks, uint32_t context = 0) {
  return cact::slice_bytes(m, cact::plan_slice(m, blocks, context));
}
size_t files_in(const std::filesystem::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}
}  // namespace

TEST_CASE("slice: the bundled model is what these tests assume") {
  const cact::Header& h = tiny().header();
  CHECK(h.num_layers == 4);
  CHECK(h.qkv_conv_taps == 3);
  CHECK(h.num_engram_sites == 2);
  CHECK(h.engram_sites[0] == 0);
  CHECK(h.engram_sites[1] == 2);
  CHECK(h.is_global(1));
  CHECK(h.is_global(3));
  CHECK_FALSE(h.is_global(0));
  CHECK_FALSE(tiny().canon().has_heads());
}

TEST_CASE("slice: license-tiny to 2, 3 and 4 layers") {
  for (uint32_t d = 2; d <= 4; ++d) {
    CAPTURE(d);
    const V blocks = cact::rung(4, d);
    const cact::SlicePlan plan = cact::plan_slice(tiny(), blocks);
    const std::vector<uint8_t> bytes = cact::slice_bytes(tiny(), plan);
    CHECK(bytes.size() == plan.output_bytes);
    CHECK(cact::check_archive(bytes).empty());
    // The one-pass builder agrees with the archive writer.
    const cact::SlicedArchive a = cact::slice_archive(tiny(), plan);
    CHECK(cact::test::same_bytes(bytes, cact::archive_bytes(a.header, a.codebooks, a.tensors)));
    const Model out = Model::from_bytes(bytes);
    const size_t verbatim = cact::test::check_slice(tiny(), out, blocks);
    // embedding, 27 per block, hada_p1/p2, 4 per site, final_norm, tokenizer.
    CHECK(verbatim == 1 + 27 * d + 2 + 4 * out.header().num_engram_sites + 1 + 1);
    // The plan says which tensors are copied whole: all but the nine mHC ones.
    size_t whole = 0;
    for (const auto& t : plan.tensors) whole += t.verbatim() ? 1 : 0;
    CHECK(whole == plan.tensors.size() - (d == 4 ? 0 : 9));
  }
}

TEST_CASE("slice: header of rungs and block sets of license-tiny") {
  // Rung 2 keeps 0 and 3: site 0 (layer 0) stays, site layer 2 goes; global 3 -> 1, global 1 dropped.
  cact::SlicePlan p = cact::plan_slice(tiny(), cact::rung(4, 2));
  CHECK(p.blocks == V{0, 3});
  REQUIRE(p.sites.size() == 1);
  CHECK(p.sites[0].old_layer == 0);
  CHECK(p.sites[0].new_layer == 0);
  CHECK(p.dropped_sites == V{2});
  REQUIRE(p.global_layers.size() == 1);
  CHECK(p.global_layers[0].old_layer == 3);
  CHECK(p.global_layers[0].new_layer == 1);
  CHECK(p.dropped_global == V{1});
  CHECK(p.header.global_mask_lo == 0b10);
  CHECK(p.warnings.empty());

  // Explicit blocks 1, 2: both ends dropped (two warnings), site layer 2 -> site 0 at layer 1.
  p = cact::plan_slice(tiny(), V{1, 2});
  CHECK(p.warnings.size() == 2);
  CHECK(p.header.num_layers == 2);
  CHECK(p.header.num_engram_sites == 1);
  CHECK(p.header.engram_sites[0] == 1);
  CHECK(p.header.engram_sites[1] == 0);
  CHECK(p.header.global_mask_lo == 0b01);
  const std::vector<uint8_t> bytes = cact::slice_bytes(tiny(), p);
  const Model out = Model::from_bytes(bytes);
  cact::test::check_slice(tiny(), out, V{1, 2});

  // A single block is a valid archive too.
  const std::vector<uint8_t> one = slice(tiny(), V{2});
  CHECK(cact::check_archive(one).empty());
  cact::test::check_slice(tiny(), Model::from_bytes(one), V{2});

  CHECK_THROWS_AS(cact::plan_slice(tiny(), V{0, 4}), cact::Error);
  CHECK_THROWS_AS(cact::plan_slice(tiny(), V{0, 0, 3}), cact::Error);
}

TEST_CASE("slice: full depth is byte-identical to the input") {
  const std::vector<uint8_t> bytes = slice(tiny(), V{0, 1, 2, 3});
  CHECK(cact::test::same_bytes(bytes, tiny().bytes()));
  const cact::SlicePlan p = cact::plan_slice(tiny(), V{0, 1, 2, 3});
  for (const auto& t : p.tensors) CHECK(t.verbatim());
  CHECK(p.output_bytes == p.source_bytes);
}

TEST_CASE("slice: a slice of a slice equals the slice of the original") {
  // For L = 4 every rung of a rung is a rung of the original (see slice_ladder_test.cpp).
  for (uint32_t d1 = 2; d1 <= 4; ++d1) {
    const std::vector<uint8_t> outer_bytes = slice(tiny(), cact::rung(4, d1));
    const Model outer = Model::from_bytes(outer_bytes);
    for (uint32_t d2 = 2; d2 <= d1; ++d2) {
      CAPTURE(d1);
      CAPTURE(d2);
      CHECK(cact::test::same_bytes(slice(outer, cact::rung(d1, d2)), slice(tiny(), cact::rung(4, d2))));
    }
  }
  // Explicit sets compose the same way: {0, 2, 3} then its {0, 2} = {0, 3}.
  const std::vector<uint8_t> a = slice(tiny(), V{0, 2, 3});
  CHECK(cact::test::same_bytes(slice(Model::from_bytes(a), V{0, 2}), slice(tiny(), V{0, 3})));
}

TEST_CASE("slice: --context caps the context fields") {
  const cact::Header& h = tiny().header();
  REQUIRE(h.max_seq_len == 512);
  REQUIRE(h.sliding_window == 64);
  REQUIRE(h.kv_window == 0);
  cact::SlicePlan p = cact::plan_slice(tiny(), V{0, 3}, 32);
  CHECK(p.header.max_seq_len == 32);
  CHECK(p.header.sliding_window == 32);
  CHECK(p.header.kv_window == 0);  // 0 (size from memory) is not larger than the cap
  p = cact::plan_slice(tiny(), V{0, 3}, 256);
  CHECK(p.header.max_seq_len == 256);
  CHECK(p.header.sliding_window == 64);
  p = cact::plan_slice(tiny(), V{0, 1, 2, 3}, 4096);
  CHECK(p.header.max_seq_len == 512);
  // Only the header differs from the input.
  const std::vector<uint8_t> capped = slice(tiny(), V{0, 1, 2, 3}, 100);
  REQUIRE(capped.size() == tiny().bytes().size());
  CHECK(std::equal(capped.begin() + cact::kHeaderBytes, capped.end(), tiny().bytes().begin() + cact::kHeaderBytes));
  CHECK(Model::from_bytes(capped).header().max_seq_len == 100);
}

TEST_CASE("slice: write_slice writes a checked file and refuses its input") {
  const auto dir = cact::test::scratch_dir("slice-write");
  const auto in = dir / "in.cact";
  std::filesystem::copy_file(cact::test::models_dir() / "license-tiny.cact", in);
  const Model src = Model::open(in);
  const cact::SlicePlan plan = cact::plan_slice(src, cact::rung(4, 2));
  const std::filesystem::path inputs[] = {in};
  cact::write_slice(dir / "out.cact", src, plan, inputs);
  const Model out = Model::open(dir / "out.cact");
  CHECK(std::filesystem::file_size(dir / "out.cact") == plan.output_bytes);
  cact::test::check_slice(src, out, cact::rung(4, 2));
  CHECK(files_in(dir) == 2);

  CHECK_THROWS_WITH_AS(cact::write_slice(in, src, plan, inputs), doctest::Contains("input"), cact::Error);
  CHECK(std::filesystem::file_size(in) == tiny().bytes().size());
  CHECK(files_in(dir) == 2);  // no temporary left behind
}
