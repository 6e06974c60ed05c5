// Replays fuzz/regressions/spm_import/ and the seeds fuzz/corpus/spm_import/ through the
// fuzz harness (fuzz/harness.h): each input must be handled cleanly (accepted,
// or refused with a cact::Error), never crash.
#include <doctest/doctest.h>

#include <filesystem>
#include <vector>

#include "../../fuzz/harness.h"

TEST_CASE("fuzz regressions: spm_import") {
  const auto files = cact::fuzz::replay_inputs("spm_import");
  CHECK(files.size() >= 1);
  for (const auto& f : files) {
    CAPTURE(f.string());
    const std::vector<uint8_t> bytes = cact::fuzz::read_all(f);
    CHECK_NOTHROW(cact::fuzz::spm_import(bytes));
  }
}
