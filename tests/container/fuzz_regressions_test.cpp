// Replays, forever, every input in fuzz/regressions/<target>/ and the seed
// corpora fuzz/corpus/<target>/ through the same harness code the libFuzzer
// targets run (fuzz/harness.h). Each must be handled cleanly: accepted, or
// refused with a cact::Error; an invariant failure aborts the test binary,
// any other exception fails it. Targets of other layers are replayed by their
// own suites: tests/text/fuzz_regressions_spm_test.cpp (spm_import),
// tests/interchange/fuzz_regressions_interchange_test.cpp (safetensors,
// geometry_json), tests/engine/fuzz_regressions_engine_test.cpp (engine).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "../../fuzz/harness.h"
#include "container/malformed_cases.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;

namespace {

size_t replay(const std::string& target, const std::function<void(std::span<const uint8_t>)>& harness,
              const std::string& seeds = "") {
  const std::vector<fs::path> files = cact::fuzz::replay_inputs(target, seeds);
  for (const fs::path& f : files) {
    CAPTURE(f.string());
    const std::vector<uint8_t> bytes = cact::fuzz::read_all(f);
    CHECK_NOTHROW(harness(bytes));
  }
  return files.size();
}

}  // namespace

TEST_CASE("fuzz regressions: archive") { CHECK(replay("archive", cact::fuzz::archive) >= 1); }

TEST_CASE("fuzz regressions: archive_layout") { CHECK(replay("archive_layout", cact::fuzz::archive_layout) >= 1); }

TEST_CASE("fuzz regressions: tokenizer_blob") { CHECK(replay("tokenizer_blob", cact::fuzz::tokenizer_blob) >= 1); }

TEST_CASE("fuzz regressions: tokenizer_encode") {
  CHECK(replay("tokenizer_encode", cact::fuzz::tokenizer_encode) >= 1);
}

TEST_CASE("fuzz regressions: slice") { CHECK(replay("slice", cact::fuzz::slice, "archive") >= 1); }

TEST_CASE("fuzz regressions: cli_text") { CHECK(replay("cli_text", cact::fuzz::cli_text) >= 1); }

TEST_CASE("fuzz harness: the malformed table and the pristine archive are handled cleanly") {
  using namespace cact::test::malformed;
  CHECK_NOTHROW(cact::fuzz::archive(tiny()));
  for (const Case& c : all_cases()) {
    CAPTURE(c.name);
    CHECK_NOTHROW(cact::fuzz::archive(c.bytes));
  }
}

TEST_CASE("fuzz harness: round trip of the golden tokenizer on hand-picked text") {
  for (std::string_view s :
       {"", " ", "a", "  x  ", "\xE2\x96\x81", "\xE2\x96", "caf\xC3\xA9", "\xFF\xFE", "<|im_end|>"}) {
    CAPTURE(s);
    CHECK_NOTHROW(cact::fuzz::tokenizer_encode({reinterpret_cast<const uint8_t*>(s.data()), s.size()}));
  }
}

TEST_CASE("fuzz regressions: json_input") { CHECK(replay("json_input", cact::fuzz::json_input) >= 1); }
