// Replays fuzz/regressions/engine/ and the seeds fuzz/corpus/engine/ through the
// fuzz harness (fuzz/harness.h): each input must be handled cleanly (accepted,
// or refused with a cact::Error), never crash.
#include <doctest/doctest.h>

#include <filesystem>
#include <vector>

#include "../../fuzz/harness.h"

TEST_CASE("fuzz regressions: engine") {
  const auto files = cact::fuzz::replay_inputs("engine");
  CHECK(files.size() >= 1);
  for (const auto& f : files) {
    CAPTURE(f.string());
    const std::vector<uint8_t> bytes = cact::fuzz::read_all(f);
    CHECK_NOTHROW(cact::fuzz::engine(bytes));
  }
}
