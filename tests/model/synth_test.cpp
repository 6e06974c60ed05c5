// Synthetic archives: valid, deterministic, and the needle3 preset has the
// shipped file's tensor counts and byte totals.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "cact/model.h"
#include "cact/synth.h"

using namespace cact;

TEST_CASE("needle3 preset reproduces the shipped geometry's counts and bytes") {
  const auto bytes = synth_archive_bytes(synth_preset("needle3"));
  const Model m = Model::from_bytes(bytes);
  std::map<std::string, std::pair<size_t, uint64_t>> kinds;
  for (const Record& r : m.records()) {
    auto& k = kinds[kind_name(r)];
    ++k.first;
    k.second += r.nbytes;
  }
  CHECK(m.records().size() == 581);
  CHECK(kinds["CQ2"] == std::pair<size_t, uint64_t>{115, 29898240});
  CHECK(kinds["CQ4"] == std::pair<size_t, uint64_t>{7, 4040784});
  CHECK(kinds["FP16"] == std::pair<size_t, uint64_t>{456, 1250220});
  CHECK(kinds["FP32"].first == 2);
  CHECK(kinds["RAW"].first == 1);
  CHECK(bytes.size() > 35'000'000);
  CHECK(bytes.size() < 35'400'000);
  CHECK(m.header().num_layers == 20);
}

TEST_CASE("every preset builds a valid archive, and the same seed gives the same bytes") {
  for (const auto& name : synth_preset_names()) {
    if (name == "needle3") continue;
    const SynthSpec spec = synth_preset(name);
    const auto a = synth_archive_bytes(spec);
    CHECK_MESSAGE(check_archive(a).empty(), name);
    CHECK(a == synth_archive_bytes(spec));
    SynthSpec other = spec;
    other.seed = 2;
    CHECK(a != synth_archive_bytes(other));
  }
}

TEST_CASE("synthetic weights are finite and at sensible scales") {
  const auto bytes = synth_archive_bytes(synth_preset("micro"));
  const Model m = Model::from_bytes(bytes);
  for (size_t i = 0; i + 1 < m.records().size(); ++i) {
    for (float v : m.values(i)) REQUIRE_MESSAGE(std::isfinite(v), m.name(i));
  }
  const auto p1 = m.values(m.canon().shared(SharedSlot::hada_p1));
  std::vector<bool> seen(p1.size(), false);
  for (float v : p1) {
    REQUIRE(v >= 0.0f);
    REQUIRE(size_t(v) < seen.size());
    seen[size_t(v)] = true;
  }
  for (bool s : seen) CHECK(s);
}

TEST_CASE("bad synthetic requests are refused with a clear message") {
  CHECK_THROWS_WITH(synth_preset("giant"), doctest::Contains("unknown synthetic preset 'giant'"));
  SynthSpec s = synth_preset("micro");
  s.geometry.num_heads = 3;
  CHECK_THROWS_WITH(synth_archive_bytes(s), doctest::Contains("num_heads 3 is not divisible by num_kv_heads 2"));
  s = synth_preset("micro");
  s.widths = s.widths.with("layer99.q_proj=2");
  CHECK_THROWS_WITH(synth_archive_bytes(s), doctest::Contains("key 'layer99.q_proj' names no CQ tensor"));
  s = synth_preset("micro");
  s.geometry.num_layers = 4000000000u;
  CHECK_THROWS_WITH(synth_archive_bytes(s), doctest::Contains("num_layers 4000000000 is outside 1..64"));
  CHECK_THROWS_WITH(WidthMap::parse("default=7"), doctest::Contains("width must be 1, 2, 3, 4 or ternary"));
}
