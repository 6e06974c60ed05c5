// Replays fuzz/regressions/<target>/ and the seeds fuzz/corpus/<target>/ of the
// safetensors and geometry_json targets through the
// fuzz harness (fuzz/harness.h): each input must be handled cleanly (accepted,
// or refused with a cact::Error), never crash.
#include <doctest/doctest.h>

#include <filesystem>
#include <vector>

#include "../../fuzz/harness.h"

TEST_CASE("fuzz regressions: safetensors") {
  const auto files = cact::fuzz::replay_inputs("safetensors");
  CHECK(files.size() >= 1);
  for (const auto& f : files) {
    CAPTURE(f.string());
    const std::vector<uint8_t> bytes = cact::fuzz::read_all(f);
    CHECK_NOTHROW(cact::fuzz::safetensors(bytes));
  }
}

TEST_CASE("fuzz regressions: geometry_json") {
  const auto files = cact::fuzz::replay_inputs("geometry_json");
  CHECK(files.size() >= 1);
  for (const auto& f : files) {
    CAPTURE(f.string());
    const std::vector<uint8_t> bytes = cact::fuzz::read_all(f);
    CHECK_NOTHROW(cact::fuzz::geometry_json(bytes));
  }
}

TEST_CASE("fuzz regressions: synth") {
  // The synth target shares the geometry_json seeds.
  const auto files = cact::fuzz::replay_inputs("synth", "geometry_json");
  CHECK(files.size() >= 1);
  for (const auto& f : files) {
    CAPTURE(f.string());
    const std::vector<uint8_t> bytes = cact::fuzz::read_all(f);
    CHECK_NOTHROW(cact::fuzz::synth(bytes));
  }
}
