// The float reference path against models/reference-logits.json (an
// independent float64 implementation of MODEL.md on the dequantised weights).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cact/engine.h"
#include "support/test_paths.h"

namespace {

nlohmann::json load_reference() {
  std::ifstream in(cact::test::models_dir() / "reference-logits.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("float path reproduces reference-logits.json") {
  const auto model = cact::Model::open(cact::test::models_dir() / "license-tiny.cact");
  cact::Engine engine(model, {cact::Numerics::reference, nullptr});
  const nlohmann::json ref = load_reference();
  const uint32_t V = engine.output_rows();
  const uint32_t D = engine.header().d_model, rows = engine.header().num_layers + 1;
  for (const auto& c : ref["cases"]) {
    const std::vector<int32_t> ids = c["ids"].get<std::vector<int32_t>>();
    cact::SessionOptions so;
    so.keep_cells = true;
    cact::Session s(engine, so);
    const std::vector<float> all = s.prefill_all(ids);
    double worst_top = 0.0, worst_last = 0.0;
    for (size_t t = 0; t < ids.size(); ++t) {
      for (const auto& pair : c["logits_top10"][t]) {
        const int id = pair[0].get<int>();
        const double want = pair[1].get<double>();
        worst_top = std::max(worst_top, std::fabs(all[t * V + id] - want) / std::max(1.0, std::fabs(want)));
      }
    }
    const auto& last = c["last_logits"];
    REQUIRE(last.size() == V);
    for (uint32_t i = 0; i < V; ++i) {
      const double want = last[i].get<double>();
      worst_last =
          std::max(worst_last, std::fabs(all[(ids.size() - 1) * V + i] - want) / std::max(1.0, std::fabs(want)));
    }
    MESSAGE(c["prompt"].get<std::string>()
            << ": top-10 rel err " << worst_top << ", last-position rel err " << worst_last);
    CHECK(worst_top < 1e-4);
    CHECK(worst_last < 1e-4);
    if (c.contains("cells")) {
      const auto cells = s.cells();
      for (uint32_t r = 0; r < rows; ++r) {
        double worst = 0.0;
        for (size_t t = 0; t < ids.size(); ++t) {
          const auto& want = c["cells"][t][r];
          for (uint32_t d = 0; d < D; ++d) {
            const double w = want[d].get<double>();
            worst = std::max(worst, std::fabs(cells[(t * rows + r) * D + d] - w) / std::max(1.0, std::fabs(w)));
          }
        }
        MESSAGE("cell row " << r << " max rel err " << worst);
        CHECK(worst < 1e-4);
      }
    }
  }
}
