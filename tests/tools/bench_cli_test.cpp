// bench_engine's command line: usage and bad flags write nothing (e.g. no
// "--help" taken for the archive path, no "--help" or "--help.l8.cact" written).
#include <doctest/doctest.h>

#include <filesystem>

#include "support/run_app.h"
#include "support/test_paths.h"

using cact::test::run_app;

TEST_CASE("bench_engine: --help, unknown flags and a missing archive write no file") {
  const std::filesystem::path exe = cact::test::binary_dir() / "bench" / "bench_engine";
  if (!std::filesystem::exists(exe)) {
    MESSAGE("bench_engine not built (CACT_BENCH=OFF): skipped");
    return;
  }
  const std::filesystem::path dir = cact::test::scratch_dir("bench_cli");
  const std::string tool = "../bench/bench_engine";  // run_app resolves apps/<tool>
  const auto help = run_app(tool, {"--help"}, dir);
  CHECK(help.code == 0);
  CHECK(help.out.rfind("usage: bench_engine", 0) == 0);
  const auto h = run_app(tool, {"-h"}, dir);
  CHECK(h.code == 0);
  CHECK(h.out == help.out);
  const auto bad = run_app(tool, {"--bogus"}, dir);
  CHECK(bad.code == 2);
  CHECK(bad.err.rfind("bench_engine: unknown option --bogus\nusage:", 0) == 0);
  const auto two = run_app(tool, {"a.cact", "b.cact"}, dir);
  CHECK(two.code == 2);
  const auto no_path = run_app(tool, {"--slice"}, dir);
  CHECK(no_path.code == 2);
  const auto missing = run_app(tool, {"missing.cact"}, dir);
  CHECK(missing.code == 1);
  const auto rates_missing = run_app(tool, {"--rates", "missing.cact"}, dir);  // bench/compare_llama.sh's mode
  CHECK(rates_missing.code == 1);
  CHECK(missing.err.find("missing.cact does not exist") != std::string::npos);
  CHECK(std::filesystem::is_empty(dir));
}
