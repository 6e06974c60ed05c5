// cact-golden: dump, check, tolerance, update, and byte-identical dumps.
// GCC 12 warns inside libstdc++'s <regex> and <functional> under the
// sanitizers (a false maybe-uninitialized in regex NFA states, reported where
// std::function is defined); the warning is not about this file.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include "support/run_app.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;
using cact::test::run_app;
using cact::test::slurp;

namespace {

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// A directory with the bundled tool model, its tool list and a case file of
// two chat cases and a text continuation.
fs::path golden_dir_with_cases(const std::string& tag) {
  const fs::path dir = cact::test::scratch_dir(tag);
  fs::create_directories(dir / "model");
  fs::copy_file(cact::test::models_dir() / "tools" / "tools-tiny.cact", dir / "model" / "m.cact");
  fs::copy_file(cact::test::models_dir() / "tools" / "tools.json", dir / "tools.json");
  write(dir / "cases.json", R"({
  "archive": "model/m.cact",
  "tools": "tools.json",
  "max_tokens": 64,
  "cases": [
    {"name": "timer", "chat": "set a timer for 10 minutes"},
    {"name": "weather twice", "chat": ["weather in Paris please", "and in Rome?"]},
    {"name": "license", "prompt": "Permission is hereby granted", "max_tokens": 12}
  ]
})");
  return dir;
}

}  // namespace

TEST_CASE("cact-golden: dump then check passes; the golden file holds the answers and no paths") {
  const fs::path dir = golden_dir_with_cases("golden-pass");
  const auto d = run_app("cact-golden", {"dump", "cases.json"}, dir);
  REQUIRE_MESSAGE(d.code == 0, d.err);
  CHECK(d.out.empty());
  CHECK(d.err == "wrote cases.golden.json: 3 cases of cases.json\n");
  const std::string golden = slurp(dir / "cases.golden.json");
  CHECK(golden.find("\"schema\": \"cact-golden/1\"") != std::string::npos);
  CHECK(golden.find("set_timer") != std::string::npos);
  CHECK(golden.find("\"numerics\": \"int8\"") != std::string::npos);
  CHECK(golden.find(dir.string()) == std::string::npos);  // nothing machine-specific
  CHECK(golden.find("m.cact") == std::string::npos);      // the archive by its digest only

  const auto c = run_app("cact-golden", {"check", "cases.json"}, dir);
  CHECK_MESSAGE(c.code == 0, (c.out + c.err));
  CHECK(c.out == "ok    timer\nok    weather twice\nok    license\n3 passed, 0 failed\n");

  const auto j = run_app("cact-golden", {"check", "cases.json", "--json"}, dir);
  CHECK(j.code == 0);
  CHECK(j.out.find("\"schema\": \"cact-golden-check/1\"") != std::string::npos);
  CHECK(j.out.find("\"passed\": 3") != std::string::npos);

  // dump does not replace a golden file; update does.
  const auto again = run_app("cact-golden", {"dump", "cases.json"}, dir);
  CHECK(again.code == 1);
  CHECK(again.err.find("the golden file exists (cact-golden update rewrites it)") != std::string::npos);
}

TEST_CASE("cact-golden: one re-encoded tensor fails the check at the first differing token; update accepts it") {
  const fs::path dir = golden_dir_with_cases("golden-requant");
  REQUIRE(run_app("cact-golden", {"dump", "cases.json"}, dir).code == 0);
  const std::string before = slurp(dir / "cases.golden.json");
  // The embedding matrix from 4 to 2 bits: one tensor re-encoded.
  const auto q = run_app("cact-quant",
                         {"requantize", "model/m.cact", "model/m2.cact", "--bits", "embedding=2", "--requantize"}, dir);
  REQUIRE_MESSAGE(q.code == 0, q.err);
  fs::rename(dir / "model" / "m2.cact", dir / "model" / "m.cact");

  const auto c = run_app("cact-golden", {"check", "cases.json"}, dir);
  CHECK(c.code == 1);
  CHECK(c.out.find("note: the archive (xxh64 ") != std::string::npos);
  const std::regex first_token(
      R"(FAIL  (timer|weather twice|license): (turn \d, )?token \d+: expected \d+ ".*", got \d+ ".*"\n)");
  CHECK_MESSAGE(std::regex_search(c.out, first_token), c.out);
  CHECK(c.out.find(" failed\n") != std::string::npos);
  CHECK(c.out.find(", 0 failed") == std::string::npos);

  const auto u = run_app("cact-golden", {"update", "cases.json"}, dir);
  REQUIRE_MESSAGE(u.code == 0, u.err);
  CHECK(u.out.find("changed ") != std::string::npos);
  CHECK(u.err.find("wrote cases.golden.json: 3 cases of cases.json, ") != std::string::npos);
  CHECK(slurp(dir / "cases.golden.json") != before);
  const auto after = run_app("cact-golden", {"check", "cases.json"}, dir);
  CHECK_MESSAGE(after.code == 0, after.out);
  // An update with nothing new changes nothing.
  const auto same = run_app("cact-golden", {"update", "cases.json"}, dir);
  CHECK(same.out == "same  timer\nsame  weather twice\nsame  license\n");
}

TEST_CASE("cact-golden: logits within the tolerance pass, beyond it fail; --tolerance and the case file set it") {
  const fs::path dir = golden_dir_with_cases("golden-tolerance");
  REQUIRE(run_app("cact-golden", {"dump", "cases.json"}, dir).code == 0);
  // Move the first recorded logit of the file by 0.05 (scaled: 0.05 / |logit| for |logit| > 1).
  std::string golden = slurp(dir / "cases.golden.json");
  const std::regex first_logit(R"(\[\[(\d+), (-?[0-9.e+-]+)\])");
  std::smatch m;
  REQUIRE(std::regex_search(golden, m, first_logit));
  const double logit = std::stod(m[2].str());
  char moved[64];
  std::snprintf(moved, sizeof moved, "[[%s, %.9g]", m[1].str().c_str(), logit + 0.05);
  golden.replace(size_t(m.position(0)), size_t(m.length(0)), moved);
  write(dir / "cases.golden.json", golden);
  const double scaled = 0.05 / std::max(1.0, std::fabs(logit + 0.05));

  const auto c = run_app("cact-golden", {"check", "cases.json"}, dir);  // int8 default 2e-3
  CHECK(c.code == 1);
  CHECK(c.out.find("FAIL  timer: logits differ by ") != std::string::npos);
  CHECK(c.out.find("more than the tolerance 0.002 at token 1, id " + m[1].str()) != std::string::npos);
  CHECK(c.out.find("2 passed, 1 failed") != std::string::npos);

  const auto loose =
      run_app("cact-golden", {"check", "cases.json", "--tolerance", std::to_string(scaled * 1.5), "-v"}, dir);
  CHECK_MESSAGE(loose.code == 0, loose.out);
  CHECK(loose.out.find("ok    timer (worst logit difference ") != std::string::npos);
  const auto tight = run_app("cact-golden", {"check", "cases.json", "--tolerance", std::to_string(scaled * 0.5)}, dir);
  CHECK(tight.code == 1);

  // The case file's own tolerance (top level: every case) applies when no flag is given.
  std::string cases = slurp(dir / "cases.json");
  cases.replace(cases.find("\"max_tokens\": 64"), 16,
                "\"max_tokens\": 64, \"tolerance\": " + std::to_string(scaled * 1.5));
  write(dir / "cases.json", cases);
  const auto from_file = run_app("cact-golden", {"check", "cases.json"}, dir);
  CHECK_MESSAGE(from_file.code == 0, from_file.out);
  CHECK(run_app("cact-golden", {"check", "cases.json", "--tolerance", "-1"}, dir).code == 2);
}

TEST_CASE("cact-golden: changed inputs, missing files and unknown keys are named") {
  const fs::path dir = golden_dir_with_cases("golden-inputs");
  REQUIRE(run_app("cact-golden", {"dump", "cases.json"}, dir).code == 0);
  std::string cases = slurp(dir / "cases.json");
  cases.replace(cases.find("\"max_tokens\": 12"), 16, "\"max_tokens\": 10");
  write(dir / "cases.json", cases);
  const auto c = run_app("cact-golden", {"check", "cases.json"}, dir);
  CHECK(c.code == 1);
  CHECK(
      c.out.find(
          "FAIL  license: the case's inputs changed since the golden file was written (max_tokens); cact-golden update "
          "rewrites it\n") != std::string::npos);

  fs::remove(dir / "tools.json");
  const auto missing = run_app("cact-golden", {"check", "cases.json"}, dir);
  CHECK(missing.code == 1);
  CHECK(missing.err_lines() == 1);
  CHECK(missing.err.find("cases.json: case 1 (\"timer\"): tools tools.json") != std::string::npos);

  write(dir / "typo.json", R"({"archive": "model/m.cact", "cases": [{"name": "a", "promt": "hi"}]})");
  const auto typo = run_app("cact-golden", {"dump", "typo.json"}, dir);
  CHECK(typo.code == 1);
  CHECK(typo.err == "cact-golden: typo.json: case 1: unknown key \"promt\" (did you mean \"prompt\"?)\n");
  CHECK(run_app("cact-golden", {"check", "typo.json"}, dir).code == 1);
  CHECK(run_app("cact-golden", {"dump", "-"}, dir).code == 2);  // stdin needs -o
}

TEST_CASE("cact-golden: two dumps of the same inputs from different directories are byte-identical") {
  const fs::path dir = golden_dir_with_cases("golden-identical");
  const auto here = run_app("cact-golden", {"dump", "cases.json", "-o", "-"}, dir);
  REQUIRE_MESSAGE(here.code == 0, here.err);
  CHECK(here.err.empty());  // stdout carries the file; nothing "wrote"
  const auto above =
      run_app("cact-golden", {"dump", (dir.filename() / "cases.json").string(), "-o", "-"}, dir.parent_path());
  REQUIRE_MESSAGE(above.code == 0, above.err);
  CHECK(here.out == above.out);
  // A copy of the whole directory elsewhere, run by absolute path.
  const fs::path copy = cact::test::scratch_dir("golden-identical-copy");
  fs::copy(dir, copy, fs::copy_options::recursive);
  const auto moved = run_app("cact-golden", {"dump", (copy / "cases.json").string(), "-o", "-"});
  REQUIRE_MESSAGE(moved.code == 0, moved.err);
  CHECK(moved.out == here.out);
}
