// Replays fuzz/regressions/spm_import/ and the seed corpus fuzz/corpus/spm_import/
// through the SentencePiece-import fuzz harness (fuzz/harness.h): each input
// must be imported or refused with a cact::Error, never crash.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "../../fuzz/harness.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;

TEST_CASE("fuzz regressions: spm_import") {
  std::vector<fs::path> files;
  for (const char* kind : {"regressions", "corpus"}) {
    const fs::path dir = cact::test::source_dir() / "fuzz" / kind / "spm_import";
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.is_regular_file()) files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  CHECK(files.size() >= 1);
  for (const fs::path& f : files) {
    CAPTURE(f.string());
    const std::vector<uint8_t> bytes = cact::fuzz::read_all(f);
    CHECK_NOTHROW(cact::fuzz::spm_import(bytes));
  }
}
