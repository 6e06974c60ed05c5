// cact-inspect --diff: identical archives, a slice against its source, one re-encoded tensor.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/run_app.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;
using cact::test::run_app;

namespace {
std::string tiny() { return (cact::test::models_dir() / "license-tiny.cact").string(); }
size_t lines(const std::string& s) { return size_t(std::count(s.begin(), s.end(), '\n')); }
}  // namespace

TEST_CASE("cact-inspect --diff: identical content is exit 0 and one line") {
  const fs::path dir = cact::test::scratch_dir("diff-same");
  fs::copy_file(tiny(), dir / "copy.cact");
  const auto r = run_app("cact-inspect", {"--diff", tiny(), (dir / "copy.cact").string()});
  CHECK(r.code == 0);
  CHECK(r.out == tiny() + " and " + (dir / "copy.cact").string() + ": identical content (130 tensors)\n");
  const auto j = run_app("cact-inspect", {"--diff", tiny(), (dir / "copy.cact").string(), "--json"});
  CHECK(j.code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["schema"] == "cact-inspect-diff/1");
  CHECK(doc["identical"] == true);
  CHECK(doc["same"] == 130);
}

TEST_CASE("cact-inspect --diff: a slice against its source names the geometry and the removed tensors, briefly") {
  const fs::path dir = cact::test::scratch_dir("diff-slice");
  const std::string slice = (dir / "s.cact").string();
  REQUIRE(run_app("cact-slice", {tiny(), slice, "--layers", "2"}).code == 0);
  const auto r = run_app("cact-inspect", {"--diff", tiny(), slice});
  CHECK(r.code == 1);
  CHECK(r.out.find("  header   num_layers                   4 -> 2\n") != std::string::npos);
  CHECK(r.out.find("  removed  layer02.") != std::string::npos);
  CHECK(r.out.find(" more removed (--verbose lists all)\n") != std::string::npos);
  CHECK(lines(r.out) < 60);  // removed tensors cut to 8, not one line per tensor
  const auto v = run_app("cact-inspect", {"--diff", tiny(), slice, "--verbose"});
  CHECK(v.code == 1);
  CHECK(lines(v.out) > 130);
  CHECK(v.out.find("  same     ") != std::string::npos);
  const auto j = run_app("cact-inspect", {"--diff", tiny(), slice, "--json"});
  CHECK(j.code == 1);
  const auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["identical"] == false);
  CHECK(!doc["removed"].empty());
  CHECK(doc["added"].empty());
}

TEST_CASE("cact-inspect --diff: one re-encoded tensor is the one change, with its value difference") {
  const fs::path dir = cact::test::scratch_dir("diff-requant");
  const std::string out = (dir / "q.cact").string();
  const auto q = run_app("cact-quant", {"requantize", tiny(), out, "--bits", "layer01.v_proj=2", "--requantize"});
  REQUIRE_MESSAGE(q.code == 0, q.err);
  const auto r = run_app("cact-inspect", {"--diff", tiny(), out});
  CHECK(r.code == 1);
  CHECK(r.out.find("  changed  layer01.v_proj               CQ4 -> CQ2, xxh64 ") != std::string::npos);
  CHECK(r.out.find(", max abs diff ") != std::string::npos);
  CHECK(r.out.find("0 header fields, 1 changed, 0 removed, 0 added, 129 same tensors\n") != std::string::npos);
  CHECK(lines(r.out) == 3);
  const auto doc = nlohmann::json::parse(run_app("cact-inspect", {"--diff", tiny(), out, "--json"}).out);
  REQUIRE(doc["changed"].size() == 1);
  CHECK(doc["changed"][0]["name"] == "layer01.v_proj");
  CHECK(doc["changed"][0]["max_abs_diff"].get<double>() > 0.0);
  CHECK(doc["changed"][0]["max_rel_diff"].get<double>() > 0.0);
  CHECK(doc["changed"][0]["max_rel_diff"].get<double>() < 1.0);
}
