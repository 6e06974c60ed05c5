// Checkpoint -> archive -> checkpoint: what round trips exactly, and one test
// per refusal, each checking its message.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cact/checkpoint.h"
#include "cact/error.h"
#include "cact/geometry_json.h"
#include "cact/half.h"
#include "cact/model.h"
#include "cact/spm_import.h"
#include "cact/synth.h"
#include "interchange/fixtures.h"
#include "support/test_paths.h"

using namespace cact;
using namespace cact::test;
using safetensors::OwnedTensor;

namespace {

struct Ckpt {
  std::vector<uint8_t> bytes;  // must outlive file
  safetensors::File file = safetensors::File::from_bytes(empty(), "empty");
  static std::vector<uint8_t>& empty() {
    static std::vector<uint8_t> e = safetensors::serialize(std::vector<OwnedTensor>{});
    return e;
  }
};

std::unique_ptr<Ckpt> load(const std::vector<OwnedTensor>& tensors,
                           const std::map<std::string, std::string>& metadata = {}) {
  auto c = std::make_unique<Ckpt>();
  c->bytes = safetensors::serialize(tensors, metadata);
  c->file = safetensors::File::from_bytes(c->bytes, "x.safetensors");
  return c;
}

const TokenizerBlob& tiny_tokenizer() {
  static const TokenizerBlob t = tokenizer_from_archive(license_tiny());
  return t;
}

std::string build_error(const std::vector<OwnedTensor>& tensors, const Header& g, const BuildOptions& o = {},
                        const TokenizerBlob& tok = tiny_tokenizer()) {
  auto c = load(tensors);
  return error_of([&] { build_archive_bytes(c->file, g, tok, o); });
}

// Tensors of a canon with heads, for the head tests.
Canon tiny_canon(const Header& g, std::vector<Canon::HeadRequest> heads = {}, bool untied = false) {
  return Canon::make(g, heads, untied);
}

}  // namespace

TEST_CASE("checkpoint: random checkpoint -> archive -> checkpoint -> archive is byte-identical") {
  struct Case {
    const char* name;
    Header g;
    std::vector<Canon::HeadRequest> heads;
    bool untied;
  };
  const Case cases[] = {
      {"taps, no heads", tiny_geometry(true), {}, false},
      {"no taps, untied factors", tiny_geometry(false), {}, true},
      {"three heads",
       tiny_geometry(true),
       {{HeadKind::router, 2, 3, 3}, {HeadKind::confidence, 4, 2, 1}, {HeadKind::embedding, 2, 2, 128}},
       false},
  };
  for (const Case& k : cases) {
    CAPTURE(k.name);
    const Canon canon = tiny_canon(k.g, k.heads, k.untied);
    auto ckpt = load(random_checkpoint(canon, 11));
    BuildOptions o;
    o.threads = 2;
    BuildResult first_result;
    const auto first = build_archive_bytes(ckpt->file, k.g, tiny_tokenizer(), o, &first_result);
    CHECK(first_result.snapped_groups == 0);  // float weights: the FORMAT.md rule throughout
    const Model m = Model::from_bytes(first);
    CHECK(m.canon().size() == canon.size());
    CHECK(m.canon().block_untied() == k.untied);
    // Default widths: the shipped map.
    CHECK(m.record(0).bits == 4);
    CHECK(m.record(m.canon().layer(0, LayerSlot::q_proj)).bits == 2);
    CHECK(m.record(m.canon().shared(SharedSlot::mhc_phi_res)).bits == 4);
    for (const auto& h : m.canon().heads()) CHECK(m.record(h.at(HeadSlot::query)).bits == 4);

    const auto dir = scratch_dir("ckpt-roundtrip");
    ExportOptions eo;
    eo.threads = 3;
    eo.source = "first.cact";
    const ExportResult er = export_checkpoint(m, dir / "x.safetensors", dir / "x.json", eo);
    CHECK(er.tensors == canon.size() - 1);
    const auto exported = safetensors::File::open(dir / "x.safetensors");
    CHECK(exported.metadata().at("cact.source") == "first.cact");
    for (const auto& t : exported.tensors()) CHECK(t.dtype == safetensors::DType::F32);
    BuildOptions again;
    again.widths = widths_from_checkpoint(exported);
    again.codebooks = codebooks_from_checkpoint(exported);
    again.threads = 1;
    BuildResult second_result;
    const auto second =
        build_archive_bytes(exported, read_geometry_file(dir / "x.json"), tiny_tokenizer(), again, &second_result);
    CHECK(second_result.snapped_groups == second_result.groups);
    CHECK(second == first);
  }
}

TEST_CASE("checkpoint: heads are inferred from tensor names when heads.manifest is absent") {
  const Header g = tiny_geometry();
  // Inferred order is code order: embedding, confidence, router.
  const Canon canon = tiny_canon(g, {{HeadKind::embedding, 2, 2, 128}, {HeadKind::confidence, 3, 2, 1}}, false);
  auto with = load(random_checkpoint(canon, 3, true));
  auto without = load(random_checkpoint(canon, 3, false));
  CHECK(without->file.find("heads.manifest") == nullptr);
  BuildResult a, b;
  const auto x = build_archive_bytes(with->file, g, tiny_tokenizer(), {}, &a);
  const auto y = build_archive_bytes(without->file, g, tiny_tokenizer(), {}, &b);
  CHECK(x == y);
  CHECK(a.heads_from_manifest);
  CHECK(!b.heads_from_manifest);
  CHECK(b.heads == std::vector<std::string>{"embedding", "confidence"});
}

TEST_CASE("checkpoint: a manifest fixes the head order; a bad one is named") {
  const Header g = tiny_geometry();
  const Canon canon = tiny_canon(g, {{HeadKind::router, 2, 2, 3}, {HeadKind::confidence, 2, 2, 1}}, false);
  auto tensors = random_checkpoint(canon, 4);
  {
    auto c = load(tensors);
    BuildResult r;
    build_archive_bytes(c->file, g, tiny_tokenizer(), {}, &r);
    CHECK(r.heads == std::vector<std::string>{"router", "confidence"});
  }
  set_tensor(tensors, safetensors::f32_tensor("heads.manifest", {2}, std::vector<float>{3, 7}));
  CHECK(
      build_error(tensors, g) ==
      "x.safetensors: tensor heads.manifest: element [1] = 7 is not a head code (1 embedding, 2 confidence, 3 router)");
  set_tensor(tensors, safetensors::f32_tensor("heads.manifest", {2}, std::vector<float>{2, 2}));
  CHECK(build_error(tensors, g) ==
        "x.safetensors: tensor heads.manifest lists the confidence head twice (their tensor names would collide)");
  drop_tensor(tensors, "heads.manifest");
  drop_tensor(tensors, "router_head.gain");
  CHECK(build_error(tensors, g) == "x.safetensors: missing tensor router_head.gain (it sizes the router head's k)");
}

TEST_CASE("checkpoint: license-tiny -> checkpoint -> archive is byte-identical") {
  const Model m = Model::open(license_tiny());
  const auto dir = scratch_dir("ckpt-tiny");
  const ExportResult er = export_checkpoint(m, dir / "t.safetensors", dir / "t.json", {});
  CHECK(er.bits == "default=4");
  const auto ckpt = safetensors::File::open(dir / "t.safetensors");
  CHECK(ckpt.metadata().at("cact.bits") == "default=4");

  // Exported values: FP16 widened exactly, FP32 as is, CQ dequantised.
  for (size_t i = 0; i + 1 < m.records().size(); ++i) {
    const auto* t = ckpt.find(m.name(i));
    REQUIRE(t != nullptr);
    CHECK(safetensors::to_float(*t) == m.values(i));
  }

  BuildOptions o;
  o.widths = widths_from_checkpoint(ckpt);
  o.codebooks = codebooks_from_checkpoint(ckpt);
  REQUIRE(o.codebooks.has_value());
  CHECK(std::equal(o.codebooks->begin(), o.codebooks->end(), m.codebooks().begin(), m.codebooks().end()));
  o.report = true;
  BuildResult r;
  const auto bytes =
      build_archive_bytes(ckpt, read_geometry_file(dir / "t.json"), tokenizer_from_archive(license_tiny()), o, &r);
  // Every CQ group snaps back to its indices and FP16 norm, including the
  // engram tables ([2048, 64]: half a group, see docs/INTERCHANGE.md).
  CHECK(r.snapped_groups == r.groups);
  CHECK(bytes.size() == m.bytes().size());
  CHECK(std::equal(bytes.begin(), bytes.end(), m.bytes().begin(), m.bytes().end()));
  for (const auto& t : r.report.tensors) {
    CAPTURE(t.name);
    CHECK(t.error.error == 0.0);
  }
}

TEST_CASE(
    "checkpoint: license-tiny's stored codebooks are not the computed ones; with those the CQ blobs still round trip") {
  const Model m = Model::open(license_tiny());
  // Some entries differ in the last bit (the computed ones are the correctly
  // rounded Lloyd-Max levels); a reader always uses the stored values.
  const auto standard = codec::standard_codebooks();
  CHECK(!std::equal(standard.begin(), standard.end(), m.codebooks().begin()));
  const auto dir = scratch_dir("ckpt-tiny-std");
  export_checkpoint(m, dir / "t.safetensors", dir / "t.json", {});
  const auto ckpt = safetensors::File::open(dir / "t.safetensors");
  BuildOptions o;
  o.widths = widths_from_checkpoint(ckpt);
  BuildResult r;
  const auto bytes =
      build_archive_bytes(ckpt, read_geometry_file(dir / "t.json"), tokenizer_from_archive(license_tiny()), o, &r);
  const Model b = Model::from_bytes(bytes);  // views `bytes`
  CHECK(std::equal(standard.begin(), standard.end(), b.codebooks().begin()));
  CHECK(r.snapped_groups == r.groups);
  for (size_t i = 0; i < m.records().size(); ++i) {
    const auto x = m.blob(i), y = b.blob(i);
    CHECK(std::equal(x.begin(), x.end(), y.begin(), y.end()));
  }
}

TEST_CASE("checkpoint: F16 and BF16 checkpoints; F16 values are stored bit for bit") {
  const Header g = tiny_geometry();
  const Canon canon = tiny_canon(g);
  for (auto dtype : {safetensors::DType::F16, safetensors::DType::BF16}) {
    auto c = load(random_checkpoint(canon, 5, true, dtype));
    const auto bytes = build_archive_bytes(c->file, g, tiny_tokenizer(), {});
    const Model m = Model::from_bytes(bytes);
    if (dtype == safetensors::DType::F16) {
      const size_t i = m.canon().layer(1, LayerSlot::norm_in);
      const auto blob = m.blob(i);
      const auto& src = c->file.find(m.name(i))->data;
      CHECK(std::equal(blob.begin(), blob.end(), src.begin(), src.end()));
    }
  }
}

TEST_CASE("checkpoint: the output does not depend on the thread count") {
  const Header g = tiny_geometry();
  auto c = load(random_checkpoint(tiny_canon(g), 6));
  BuildOptions one, many;
  one.threads = 1;
  many.threads = 4;
  CHECK(build_archive_bytes(c->file, g, tiny_tokenizer(), one) ==
        build_archive_bytes(c->file, g, tiny_tokenizer(), many));
}

TEST_CASE("checkpoint: width maps") {
  const Header g = tiny_geometry();
  auto c = load(random_checkpoint(tiny_canon(g), 7));
  BuildOptions o;
  o.widths = WidthMap().with("default=3,q_proj=1,layer01.k_proj=ternary,engram=4");
  const auto bytes = build_archive_bytes(c->file, g, tiny_tokenizer(), o);
  const Model m = Model::from_bytes(bytes);
  CHECK(m.record(0).bits == 3);  // default=3 is laid over the shipped map's embedding=4
  CHECK(m.record(m.canon().layer(0, LayerSlot::q_proj)).bits == 1);
  CHECK(m.record(m.canon().layer(1, LayerSlot::q_proj)).bits == 1);
  CHECK(m.record(m.canon().layer(0, LayerSlot::k_proj)).bits == 3);
  CHECK(m.record(m.canon().layer(1, LayerSlot::k_proj)).bits == 5);
  CHECK(m.record(m.canon().site(0, SiteSlot::tables)).bits == 4);
  // A key that matches nothing of a tensor leaves the shipped width underneath.
  o.widths = WidthMap().with("q_proj=1");
  const Model q = Model::from_bytes(build_archive_bytes(c->file, g, tiny_tokenizer(), o));
  CHECK(q.record(0).bits == 4);
  CHECK(q.record(q.canon().layer(0, LayerSlot::q_proj)).bits == 1);
  CHECK(q.record(q.canon().layer(0, LayerSlot::k_proj)).bits == 2);

  // A bad width, and a key that names nothing, are refused before any work.
  CHECK(error_of([] { WidthMap().with("q_proj=8"); }) ==
        "bits map: 'q_proj=8': width must be 1, 2, 3, 4 or ternary (the widths the format carries)");
  CHECK(error_of([] { WidthMap().with("q_proj"); }) == "bits map: 'q_proj' is not key=width");
  o.widths = WidthMap().with("qproj=2");
  CHECK(build_error(random_checkpoint(tiny_canon(g), 7), g, o) ==
        "bits map: key 'qproj' names no CQ tensor of this archive");
  o.widths = WidthMap().with("layer07.q_proj=2");
  CHECK(build_error(random_checkpoint(tiny_canon(g), 7), g, o) ==
        "bits map: key 'layer07.q_proj' names no CQ tensor of this archive");
  o.widths = WidthMap().with("layer00.norm_in=2");  // an FP16 tensor: the canon fixes its dtype
  CHECK(build_error(random_checkpoint(tiny_canon(g), 7), g, o) ==
        "bits map: key 'layer00.norm_in' names no CQ tensor of this archive");
}

TEST_CASE("checkpoint: missing, unexpected, misshapen and non-float tensors are each named, all in one message") {
  const Header g = tiny_geometry();
  auto t = random_checkpoint(tiny_canon(g), 8);
  drop_tensor(t, "layer01.q_proj");
  CHECK(build_error(t, g) ==
        "x.safetensors: 1 problem: missing tensor layer01.q_proj (the geometry needs CQ [128, 128])");
  set_tensor(t, safetensors::f32_tensor("layer01.q_proj", {128, 64}, std::vector<float>(128 * 64, 0.0f)));
  CHECK(build_error(t, g) ==
        "x.safetensors: 1 problem: tensor layer01.q_proj has shape [128, 64], the geometry needs [128, 128]");
  set_tensor(t, safetensors::f32_tensor("layer01.q_proj", {128, 128}, std::vector<float>(128 * 128, 0.0f)));
  set_tensor(t, safetensors::f32_tensor("layer02.q_proj", {1}, std::vector<float>{0}));
  CHECK(build_error(t, g) ==
        "x.safetensors: 1 problem: unexpected tensor layer02.q_proj (not in the canon of this geometry)");
  drop_tensor(t, "layer02.q_proj");
  OwnedTensor ids;
  ids.spec = {"final_norm", safetensors::DType::I64, {128}};
  ids.bytes.assign(128 * 8, 0);
  set_tensor(t, ids);
  CHECK(build_error(t, g) ==
        "x.safetensors: 1 problem: tensor final_norm has dtype I64; weights must be F32, F16 or BF16");
  set_tensor(t, safetensors::f32_tensor("tokenizer", {1}, std::vector<float>{0}));
  drop_tensor(t, "mhc_a_pre");
  CHECK(build_error(t, g) ==
        "x.safetensors: 3 problems: missing tensor mhc_a_pre (the geometry needs FP16 [2]); tensor final_norm has "
        "dtype I64; weights "
        "must be F32, F16 or BF16; unexpected tensor tokenizer (the tokenizer comes from --tokenizer)");
}

TEST_CASE("checkpoint: non-finite weights, FP16 overflow and broken permutations are refused naming the element") {
  const Header g = tiny_geometry();
  auto t = random_checkpoint(tiny_canon(g), 9);
  auto patch = [&](const std::string& name, size_t k, float v) {
    auto copy = t;
    for (auto& x : copy) {
      if (x.spec.name == name) std::memcpy(x.bytes.data() + 4 * k, &v, 4);
    }
    return build_error(copy, g);
  };
  CHECK(patch("layer00.q_proj", 3 * 128 + 17, std::nanf("")) ==
        "x.safetensors: tensor layer00.q_proj: element [3, 17] is NaN (weights must be finite)");
  CHECK(patch("final_norm", 5, std::numeric_limits<float>::infinity()) ==
        "x.safetensors: tensor final_norm: element [5] is infinite (weights must be finite)");
  CHECK(patch("layer01.d1", 2, 1e6f) ==
        "x.safetensors: tensor layer01.d1: element [2] = 1e+06 overflows FP16 (largest 65504)");
  CHECK(patch("hada_p1", 0, 0.5f) ==
        "x.safetensors: tensor hada_p1: element [0] = 0.5 is not an index 0..127 (a permutation)");
  const std::string dup = [&] {
    auto copy = t;
    for (auto& x : copy) {
      if (x.spec.name == "hada_p2") {
        const float zero = 0.0f;
        std::vector<float> v = floats_of(x);
        const size_t at = size_t(std::find(v.begin(), v.end(), 0.0f) - v.begin());
        const size_t other = at == 0 ? 1 : 0;
        std::memcpy(x.bytes.data() + 4 * other, &zero, 4);
      }
    }
    return build_error(copy, g);
  }();
  CHECK(dup == "x.safetensors: tensor hada_p2: value 0 appears twice (not a permutation)");
}

TEST_CASE("checkpoint: tokenizers: from a .model, from another archive; larger than the vocab is refused") {
  const Header g = tiny_geometry();
  const auto t = random_checkpoint(tiny_canon(g), 10);
  // tok.model is what license-tiny's attachment was made from.
  const TokenizerBlob from_model = tokenizer_from_model(import_sentencepiece(tok_model()), tok_model().string());
  auto c = load(t);
  BuildResult r;
  const auto bytes = build_archive_bytes(c->file, g, from_model, {}, &r);
  const Model m = Model::from_bytes(bytes);
  CHECK(r.tokenizer_pieces == 1024);
  const auto blob = m.tokenizer_blob();
  CHECK(std::equal(blob.begin(), blob.end(), tiny_tokenizer().bytes.begin(), tiny_tokenizer().bytes.end()));
  // golden.model has 2000 pieces; the geometry's vocab is 1024.
  const TokenizerBlob big = tokenizer_from_model(import_sentencepiece(golden_model()), "golden.model");
  CHECK(build_error(t, g, {}, big) ==
        "tokenizer golden.model has 2000 pieces, more than the geometry's vocab 1024 (its ids would index past the "
        "embedding)");
  TokenizerBlob junk{{1, 2, 3}, "junk.bin"};
  CHECK(build_error(t, g, {}, junk) ==
        "tokenizer junk.bin: tokenizer blob: 3 bytes is shorter than the 24-byte header");
}

TEST_CASE("checkpoint: every synthetic micro preset exports and rebuilds byte for byte") {
  // micro: d_model 64, so most CQ rows are half a group (padded): they snap
  // too (docs/INTERCHANGE.md). micro-heads: three probe heads. micro-mixed:
  // CQ1/CQ3/CQ4/ternary and block-untied factors.
  for (const char* preset : {"micro", "micro-notaps", "micro-heads", "micro-mixed"}) {
    CAPTURE(preset);
    const std::vector<uint8_t> source = synth_archive_bytes(synth_preset(preset));
    const Model m = Model::from_bytes(source);
    const auto dir = scratch_dir("ckpt-synth");
    export_checkpoint(m, dir / "s.safetensors", dir / "s.json", {});
    const auto ckpt = safetensors::File::open(dir / "s.safetensors");
    BuildOptions o;
    o.widths = widths_from_checkpoint(ckpt);
    o.codebooks = codebooks_from_checkpoint(ckpt);
    const TokenizerBlob tok{std::vector<uint8_t>(m.tokenizer_blob().begin(), m.tokenizer_blob().end()), "synth"};
    BuildResult r;
    CHECK(build_archive_bytes(ckpt, read_geometry_file(dir / "s.json"), tok, o, &r) == source);
    CHECK(r.snapped_groups == r.groups);
  }
}

TEST_CASE("checkpoint: metadata: widths are required when asked for, codebooks are checked") {
  const auto t = random_checkpoint(tiny_canon(tiny_geometry()), 12);
  auto c = load(t);
  CHECK(error_of([&] { widths_from_checkpoint(c->file); }) ==
        "x.safetensors: no \"cact.bits\" metadata (only checkpoints exported by cact-quant dequantize carry one)");
  CHECK(!codebooks_from_checkpoint(c->file).has_value());
  c = load(t, {{"cact.bits", "default=9"}});
  CHECK(error_of([&] { widths_from_checkpoint(c->file); }) ==
        "x.safetensors: metadata cact.bits: bits map: 'default=9': width must be 1, 2, 3, 4 or ternary (the widths the "
        "format carries)");
  c = load(t, {{"cact.codebooks", "1,2,3"}});
  CHECK(error_of([&] { codebooks_from_checkpoint(c->file); }) ==
        "x.safetensors: metadata cact.codebooks: 3 values, expected 28");
  c = load(t, {{"cact.codebooks", "1,x"}});
  CHECK(error_of([&] { codebooks_from_checkpoint(c->file); }) ==
        "x.safetensors: metadata cact.codebooks: 'x' is not a number");
  std::string descending;
  for (int i = 0; i < 28; ++i) {
    if (i) descending += ',';
    descending += std::to_string(28 - i);
  }
  c = load(t, {{"cact.codebooks", descending}});
  CHECK(error_of([&] {
          codebooks_from_checkpoint(c->file);
        }).starts_with("x.safetensors: metadata cact.codebooks: codebooks: entry 1 "));
}

TEST_CASE("checkpoint: the output file is written atomically and never over an input") {
  const Header g = tiny_geometry();
  const auto dir = scratch_dir("ckpt-out");
  write_bytes(dir / "c.safetensors", safetensors::serialize(random_checkpoint(tiny_canon(g), 13)));
  const auto ckpt = safetensors::File::open(dir / "c.safetensors");
  const std::filesystem::path inputs[] = {dir / "c.safetensors"};
  CHECK(error_of([&] {
          build_archive(ckpt, g, tiny_tokenizer(), dir / "c.safetensors", {}, inputs);
        }).find("output path is the input file") != std::string::npos);
  const BuildResult r = build_archive(ckpt, g, tiny_tokenizer(), dir / "out.cact", {}, inputs);
  CHECK(r.file_bytes == std::filesystem::file_size(dir / "out.cact"));
  CHECK(Model::open(dir / "out.cact").records().size() == r.canon->size());
}

TEST_CASE("checkpoint: the streamed build writes the in-memory bytes, and a failure leaves nothing") {
  const Header g = tiny_geometry();
  const Canon canon = tiny_canon(g, {{HeadKind::confidence, 4, 2, 1}});
  const auto dir = scratch_dir("ckpt-stream");
  auto tensors = random_checkpoint(canon, 21);
  write_bytes(dir / "c.safetensors", safetensors::serialize(tensors));
  // Mapped, so the build drops each tensor's pages behind it; a second build
  // reads them from the file again.
  const auto ckpt = safetensors::File::open(dir / "c.safetensors");
  const BuildResult r = build_archive(ckpt, g, tiny_tokenizer(), dir / "out.cact", {});
  const auto bytes = build_archive_bytes(ckpt, g, tiny_tokenizer(), {});
  CHECK(read_bytes(dir / "out.cact") == bytes);
  CHECK(r.file_bytes == bytes.size());

  // A value problem in the last tensor is found after the rest was written:
  // the target keeps its old bytes and no temporary is left.
  std::string last;
  for (size_t i = 0; i < canon.size(); ++i) {
    if (canon[i].dtype == Dtype::CQ) last = canon[i].name;
  }
  const auto it = std::find_if(tensors.begin(), tensors.end(), [&](const auto& t) { return t.spec.name == last; });
  REQUIRE(it != tensors.end());
  const std::vector<uint64_t> shape = it->spec.shape;
  std::vector<float> v = floats_of(*it);
  v.back() = std::numeric_limits<float>::quiet_NaN();
  set_tensor(tensors, safetensors::f32_tensor(last, shape, v));
  write_bytes(dir / "bad.safetensors", safetensors::serialize(tensors));
  const auto bad = safetensors::File::open(dir / "bad.safetensors");
  CHECK(error_of([&] {
          build_archive(bad, g, tiny_tokenizer(), dir / "out.cact", {});
        }).find("tensor " + last + ": element") != std::string::npos);
  CHECK(read_bytes(dir / "out.cact") == bytes);
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    CHECK_MESSAGE(e.path().filename().string().find(".tmp-") == std::string::npos, e.path());
  }
}
