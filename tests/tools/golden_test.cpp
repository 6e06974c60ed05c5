// Golden files: the synthetic builder reproduces every golden archive byte for
// byte, and cact-inspect's text and JSON outputs equal the stored ones.
// Regenerate deliberately with scripts/update_golden.sh.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "cact/synth.h"
#include "support/run_app.h"
#include "support/test_paths.h"

using namespace cact;
namespace fs = std::filesystem;

namespace {
std::vector<std::string> golden_presets() {
  std::ifstream in(test::golden_dir() / "presets.txt");
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}
}  // namespace

TEST_CASE("golden archives are rebuilt byte for byte by the library and by cact-build") {
  const auto presets = golden_presets();
  REQUIRE(presets.size() >= 4);
  const fs::path scratch = test::scratch_dir("golden");
  for (const auto& preset : presets) {
    CAPTURE(preset);
    const std::string golden = test::slurp(test::golden_dir() / "archives" / (preset + ".cact"));
    REQUIRE_FALSE(golden.empty());
    SynthSpec spec = synth_preset(preset);
    spec.seed = 1;
    const auto bytes = synth_archive_bytes(spec);
    CHECK(std::string(bytes.begin(), bytes.end()) == golden);
    const auto out = scratch / (preset + ".cact");
    const auto run = test::run_app("cact-build", {"synth", out.string(), "--preset", preset, "--seed", "1"});
    REQUIRE(run.code == 0);
    CHECK(test::slurp(out) == golden);
  }
}

TEST_CASE("cact-inspect text, tensor table and JSON equal the golden outputs") {
  const fs::path archives = test::golden_dir() / "archives";
  for (const auto& preset : golden_presets()) {
    CAPTURE(preset);
    const std::string file = preset + ".cact";
    const auto inspect = [&](std::vector<std::string> args) {
      args.insert(args.begin(), file);
      const auto run = test::run_app("cact-inspect", args, archives);
      CHECK(run.code == 0);
      CHECK(run.err.empty());
      return run.out;
    };
    const fs::path expected = test::golden_dir() / "inspect";
    CHECK(inspect({}) == test::slurp(expected / (preset + ".txt")));
    CHECK(inspect({"--tensors"}) == test::slurp(expected / (preset + ".tensors.txt")));
    CHECK(inspect({"--json", "--tensors"}) == test::slurp(expected / (preset + ".json")));
    const auto check = test::run_app("cact-inspect", {"--check", file}, archives);
    CHECK(check.code == 0);
    CHECK(check.out.find("check passed") != std::string::npos);
  }
}

TEST_CASE("cact-inspect --check lists every problem and exits 1") {
  const fs::path dir = test::scratch_dir("inspect-check");
  std::string bytes = test::slurp(test::golden_dir() / "archives" / "micro.cact");
  // Two independent faults: a record pad and a codebook out of order.
  const size_t dir_start = 196 + 28 * 4;
  bytes[dir_start + 5 * 44 + 2] = 1;
  float swapped;
  std::memcpy(&swapped, bytes.data() + 196, 4);
  swapped = 1.0f;
  std::memcpy(bytes.data() + 196, &swapped, 4);
  const fs::path bad = dir / "bad.cact";
  std::ofstream(bad, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  const auto run = test::run_app("cact-inspect", {"--check", bad.string()});
  CHECK(run.code == 1);
  CHECK(run.out.find("codebooks: entry 1") != std::string::npos);
  CHECK(run.out.find("record 5 (layer00.q_taps): pad 1 must be 0") != std::string::npos);
  CHECK(run.err_lines() == 1);
  const auto plain = test::run_app("cact-inspect", {bad.string()});
  CHECK(plain.code == 1);
  CHECK(plain.err_lines() == 1);
  CHECK(plain.out.empty());
}

TEST_CASE("cact-inspect --tensor prints dequantised values and statistics") {
  const fs::path archives = test::golden_dir() / "archives";
  const auto run = test::run_app("cact-inspect", {"micro.cact", "--tensor", "layer00.attn_gate"}, archives);
  REQUIRE(run.code == 0);
  CHECK(run.out.rfind("layer00.attn_gate: 1 values", 0) == 0);
  const auto json =
      test::run_app("cact-inspect", {"micro.cact", "--tensor", "embedding", "--json", "--limit", "3"}, archives);
  REQUIRE(json.code == 0);
  CHECK(json.out.find("\"count\": 20480") != std::string::npos);
  const auto missing = test::run_app("cact-inspect", {"micro.cact", "--tensor", "layer09.q_proj"}, archives);
  CHECK(missing.code == 1);
  CHECK(missing.err == "cact-inspect: no tensor named 'layer09.q_proj' (cact-inspect --tensors lists the names)\n");
}

TEST_CASE("cact-inspect refuses a Needle 2 file and a non-archive in one line") {
  const fs::path dir = test::scratch_dir("inspect-gen");
  std::string bytes = test::slurp(test::golden_dir() / "archives" / "micro.cact");
  const uint32_t needle2 = 0x05E12A83;
  std::memcpy(bytes.data(), &needle2, 4);
  std::ofstream(dir / "old.cact", std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  const auto old = test::run_app("cact-inspect", {(dir / "old.cact").string()});
  CHECK(old.code == 1);
  CHECK(old.err.find("is a Needle 2 archive") != std::string::npos);
  CHECK(old.err_lines() == 1);
  std::ofstream(dir / "text.cact") << "hello, this is not a model\n";
  const auto text = test::run_app("cact-inspect", {(dir / "text.cact").string()});
  CHECK(text.code == 1);
  CHECK(text.err_lines() == 1);
  const auto none = test::run_app("cact-inspect", {(dir / "missing.cact").string()});
  CHECK(none.code == 1);
  CHECK(none.err.find("cannot open") != std::string::npos);
}
