// Replays fuzz/regressions/<target>/ and the seeds fuzz/corpus/<target>/ of the
// chat layer's fuzz targets through their harness (fuzz/harness.h): each input
// must be accepted or refused with a cact::Error, never crash or throw anything else.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../../fuzz/harness.h"

namespace {

template <typename Target>
void replay(const std::string& target, Target&& run) {
  const auto files = cact::fuzz::replay_inputs(target);
  CHECK(files.size() >= 1);
  for (const auto& f : files) {
    CAPTURE(f.string());
    const std::vector<uint8_t> bytes = cact::fuzz::read_all(f);
    CHECK_NOTHROW(run(bytes));
  }
}

}  // namespace

TEST_CASE("fuzz regressions: tool_list") {
  replay("tool_list", [](const auto& b) { cact::fuzz::tool_list(b); });
}

TEST_CASE("fuzz regressions: chat_request") {
  replay("chat_request", [](const auto& b) { cact::fuzz::chat_request(b); });
}

TEST_CASE("fuzz regressions: transcript") {
  replay("transcript", [](const auto& b) { cact::fuzz::transcript(b); });
}
