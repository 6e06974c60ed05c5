// golden/logits/*.json (written by scripts/regen_golden_logits.sh through
// cact-run --dump-golden; never regenerated here): the top-10 logits of every
// prompt position and 8 greedy steps, float path and int8 (scalar) path.
// Tolerances (docs/ENGINE.md): float |Δ| <= 1e-4·max(1, |logit|) (only libm
// and summation-order noise between machines); int8 with every kernel table
// this CPU has |Δ| <= 2e-3·max(1, |logit|) (integer dots are exact; tables
// differ only in float accumulation order and the rare activation that rounds
// the other way).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cact/engine.h"
#include "support/test_paths.h"

namespace {

double compare(const std::vector<float>& all, size_t V, const nlohmann::json& rows, double tolerance) {
  double worst = 0.0;
  for (size_t t = 0; t < rows.size(); ++t) {
    for (const auto& pair : rows[t]) {
      const size_t id = pair[0].get<size_t>();
      const double want = pair[1].get<double>();
      const double err = std::fabs(all[t * V + id] - want) / std::max(1.0, std::fabs(want));
      worst = std::max(worst, err);
    }
  }
  CHECK(worst <= tolerance);
  return worst;
}

}  // namespace

TEST_CASE("golden logits") {
  const auto dir = cact::test::golden_dir() / "logits";
  REQUIRE(std::filesystem::is_directory(dir));
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const nlohmann::json g = nlohmann::json::parse(in);
    const auto archive = cact::test::source_dir() / g["archive"].get<std::string>();
    if (!std::filesystem::exists(archive)) {
      MESSAGE("skipping " << entry.path().filename().string() << ": " << archive.string() << " is missing");
      continue;
    }
    ++files;
    INFO(entry.path().filename().string());
    const auto model = cact::Model::open(archive);
    const std::vector<int32_t> ids = g["ids"].get<std::vector<int32_t>>();
    const size_t V = model.header().output_rows();
    cact::Engine ref(model, {cact::Numerics::reference, nullptr});
    cact::Session rs(ref);
    const double ef = compare(rs.prefill_all(ids), V, g["float"], 1e-4);
    std::ostringstream line;
    line << entry.path().filename().string() << ": float " << ef;
    for (const cact::kernels::KernelTable* table : cact::kernels::available_kernels()) {
      cact::Engine q8(model, {cact::Numerics::int8, table});
      cact::Session s(q8);
      const double e8 = compare(s.prefill_all(ids), V, g["int8_scalar"], 2e-3);
      line << ", int8/" << table->name << " " << e8;
      if (g.contains("heads")) {
        for (const cact::HeadLayout& h : model.canon().heads()) {
          const char* kind = cact::head_kind_name(h.kind);
          const auto want8 = g["heads"]["int8_scalar"][kind].get<std::vector<double>>();
          const auto got8 = s.head_output(h.kind);
          REQUIRE(got8.size() == want8.size());
          for (size_t i = 0; i < got8.size(); ++i)
            CHECK(std::fabs(got8[i] - want8[i]) <= 2e-3 * std::max(1.0, std::fabs(want8[i])));
        }
      }
    }
    if (g.contains("heads")) {
      for (const cact::HeadLayout& h : model.canon().heads()) {
        const char* kind = cact::head_kind_name(h.kind);
        const auto want = g["heads"]["float"][kind].get<std::vector<double>>();
        const auto got = rs.head_output(h.kind);
        REQUIRE(got.size() == want.size());
        for (size_t i = 0; i < got.size(); ++i)
          CHECK(std::fabs(got[i] - want[i]) <= 1e-4 * std::max(1.0, std::fabs(want[i])));
        line << ", " << kind << " head";
      }
    }
    MESSAGE(line.str());
  }
  CHECK(files >= 1);
}
