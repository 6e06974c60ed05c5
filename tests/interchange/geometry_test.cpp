// Geometry JSON <-> Header: exact round trip of real headers, list forms,
// and a message for each kind of bad file.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "cact/geometry_json.h"
#include "cact/model.h"
#include "interchange/fixtures.h"
#include "support/test_paths.h"

using namespace cact;
using cact::test::error_of;

namespace {
bool same_geometry(Header a, Header b) {
  a.num_tensors = b.num_tensors = 0;
  uint8_t x[kHeaderBytes], y[kHeaderBytes];
  encode_header(a, x);
  encode_header(b, y);
  return std::memcmp(x, y, kHeaderBytes) == 0;
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}
}  // namespace

TEST_CASE("geometry: license-tiny's header round trips bit for bit") {
  const Model m = Model::open(cact::test::license_tiny());
  const std::string text = geometry_to_json(m.header());
  CHECK(text.find("\"global_layers\": [1,3]") != std::string::npos);
  CHECK(text.find("\"engram_orders\": [2,3]") != std::string::npos);
  CHECK(text.find("\"engram_sites\": [0,2]") != std::string::npos);
  CHECK(text.find("\"rope_theta\": 10000.0") != std::string::npos);
  CHECK(text.find("global_mask") == std::string::npos);
  CHECK(text.find("num_tensors") == std::string::npos);
  const Header back = geometry_from_json(text);
  CHECK(same_geometry(back, m.header()));
  CHECK(back.num_tensors == 0);
  CHECK(back.codebook_len == 28);
}

TEST_CASE("geometry: odd values survive: high global layers, an inexact rope_theta") {
  Header h = cact::test::tiny_geometry();
  h.num_layers = 40;
  h.global_mask_lo = 0;
  h.set_global(0, true);
  h.set_global(33, true);
  h.set_global(39, true);
  h.rope_theta = 12345.678f;
  const Header back = geometry_from_json(geometry_to_json(h));
  CHECK(same_geometry(back, h));
  CHECK(back.global_mask_hi == ((1u << 1) | (1u << 7)));
}

TEST_CASE("geometry: unknown, writer-owned, mask-form and duplicate keys are refused") {
  const std::string good = geometry_to_json(cact::test::tiny_geometry());
  CHECK(error_of([&] { geometry_from_json(replace(good, "{\n", "{\n  \"colour\": 1,\n"), "g.json"); }) ==
        "g.json: unknown key \"colour\"");
  CHECK(error_of([&] { geometry_from_json(replace(good, "{\n", "{\n  \"num_tensors\": 1,\n"), "g.json"); }) ==
        "g.json: key \"num_tensors\" is not part of a geometry (the writer sets it)");
  CHECK(error_of([&] { geometry_from_json(replace(good, "{\n", "{\n  \"global_mask_lo\": 1,\n"), "g.json"); }) ==
        "g.json: key \"global_mask_lo\" is given as \"global_layers\", a list of layers");
  CHECK(error_of([&] { geometry_from_json(replace(good, "{\n", "{\n  \"num_engram_sites\": 1,\n"), "g.json"); }) ==
        "g.json: key \"num_engram_sites\" is implied by the length of \"engram_sites\"");
  CHECK(error_of([&] { geometry_from_json(replace(good, "{\n", "{\n  \"vocab\": 5,\n"), "g.json"); }) ==
        "g.json: key \"vocab\" appears more than once in one object");
}

TEST_CASE("geometry: missing keys are named") {
  const std::string good = geometry_to_json(cact::test::tiny_geometry());
  CHECK(error_of([&] { geometry_from_json(replace(good, "\"vocab\": 1024,\n", ""), "g.json"); }) ==
        "g.json: missing key vocab");
  CHECK(error_of([&] {
          geometry_from_json("{}", "g.json");
        }).starts_with("g.json: missing keys kv_window, kv_bits, vocab, "));
}

TEST_CASE("geometry: bad values") {
  const std::string good = geometry_to_json(cact::test::tiny_geometry());
  CHECK(error_of([&] { geometry_from_json(replace(good, "\"vocab\": 1024", "\"vocab\": -3"), "g.json"); }) ==
        "g.json: vocab is a negative integer, not a non-negative integer");
  CHECK(error_of([&] { geometry_from_json(replace(good, "\"vocab\": 1024", "\"vocab\": 5000000000"), "g.json"); }) ==
        "g.json: vocab 5000000000 does not fit in 32 bits");
  CHECK(error_of([&] { geometry_from_json(replace(good, "\"vocab\": 1024", "\"vocab\": \"many\""), "g.json"); }) ==
        "g.json: vocab is string, not a non-negative integer");
  CHECK(error_of([&] {
          geometry_from_json(replace(good, "\"global_layers\": [1]", "\"global_layers\": [1,1]"), "g.json");
        }) == "g.json: global_layers[1] 1 is not above the entry before it (ascending, no repeats)");
  CHECK(error_of([&] {
          geometry_from_json(replace(good, "\"global_layers\": [1]", "\"global_layers\": [5]"), "g.json");
        }) == "g.json: global_layers names layer 5, not below num_layers 2");
  CHECK(error_of([&] {
          geometry_from_json(replace(good, "\"engram_orders\": [2]", "\"engram_orders\": [2,3,4,2,2]"), "g.json");
        }) == "g.json: engram_orders has 5 entries, at most 4 fit the header");
  // Geometry rules of check_header, without its "header: " prefix.
  CHECK(error_of([&] { geometry_from_json(replace(good, "\"num_kv_heads\": 1", "\"num_kv_heads\": 3"), "g.json"); }) ==
        "g.json: num_heads 2 is not divisible by num_kv_heads 3");
  CHECK(error_of([&] { geometry_from_json("[1]", "g.json"); }) == "g.json: the geometry must be a JSON object");
}

TEST_CASE("geometry: files") {
  const auto dir = cact::test::scratch_dir("geometry");
  const Header h = cact::test::tiny_geometry();
  write_geometry_file(dir / "g.json", h);
  CHECK(same_geometry(read_geometry_file(dir / "g.json"), h));
  CHECK(error_of([&] { read_geometry_file(dir / "none.json"); }) ==
        (dir / "none.json").string() + ": cannot open: No such file or directory");
}
