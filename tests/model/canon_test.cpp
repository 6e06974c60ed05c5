// The positional canon against the trained archive and the synthetic presets.
#include <doctest/doctest.h>

#include "cact/canon.h"
#include "cact/model.h"
#include "cact/synth.h"
#include "support/test_paths.h"

using namespace cact;

TEST_CASE("the trained archive loads and its canon names every position") {
  const Model m = Model::open(test::models_dir() / "license-tiny.cact");
  const Canon& c = m.canon();
  CHECK(c.size() == 130);
  CHECK(c.has_taps());
  CHECK_FALSE(c.has_heads());
  CHECK(m.name(0) == "embedding");
  CHECK(m.name(c.layer(1, LayerSlot::v_proj)) == "layer01.v_proj");
  CHECK(c.layer(0, LayerSlot::w1a) == 20);
  CHECK(m.name(c.shared(SharedSlot::mhc_phi_res)) == "mhc_phi_res");
  CHECK(m.name(c.site(1, SiteSlot::tables)) == "engram1.tables");
  CHECK(m.name(c.final_norm()) == "final_norm");
  CHECK(c.tokenizer() == 129);
  CHECK(c.find("layer03.cond_u") == c.layer(3, LayerSlot::cond_u));
  CHECK(c.find("nope") == SIZE_MAX);
}

TEST_CASE("without conv taps a layer has 24 tensors and taps slots are refused") {
  SynthSpec s = synth_preset("micro-notaps");
  const Canon c = Canon::make(s.geometry, {}, false);
  CHECK(c.per_layer() == 24);
  CHECK(c[c.layer(0, LayerSlot::q_norm)].name == "layer00.q_norm");
  CHECK_THROWS_WITH(c.layer(0, LayerSlot::q_taps), doctest::Contains("no qkv conv taps"));
  CHECK(c.size() == 1 + 4 * 24 + 11 + 2 * 4 + 1 + 1);
}

TEST_CASE("heads: manifest then each head's tensors in manifest order, router with calibration") {
  SynthSpec s = synth_preset("micro-heads");
  const auto bytes = synth_archive_bytes(s);
  const Model m = Model::from_bytes(bytes);
  const Canon& c = m.canon();
  REQUIRE(c.heads().size() == 3);
  CHECK(m.name(c.manifest()) == "heads.manifest");
  CHECK(c.heads()[0].kind == HeadKind::confidence);
  CHECK(c.heads()[1].kind == HeadKind::router);
  CHECK(m.name(c.heads()[1].at(HeadSlot::calibration)) == "router_head.calibration");
  CHECK(c.heads()[2].out == 64);
  CHECK(m.record(c.heads()[0].at(HeadSlot::probes)).shape[0] == (4 + 1) * 2);
  CHECK(c.tokenizer() == c.heads()[2].at(HeadSlot::bias) + 1);
}

TEST_CASE("block-untied Hadamard factors are recognised by ndim") {
  const auto bytes = synth_archive_bytes(synth_preset("micro-mixed"));
  const Model m = Model::from_bytes(bytes);
  CHECK(m.canon().block_untied());
  const Record& w1a = m.record(m.canon().layer(0, LayerSlot::w1a));
  CHECK(w1a.ndim == 3);
  CHECK(kind_name(m.record(m.canon().layer(0, LayerSlot::q_proj))) == "TERNARY");
  CHECK(kind_name(m.record(m.canon().layer(0, LayerSlot::k_proj))) == "CQ1");
  CHECK(kind_name(m.record(m.canon().layer(0, LayerSlot::gate_proj))) == "CQ3");
}
