// Lloyd-Max codebooks are computed, and match the levels FORMAT.md quotes.
#include <doctest/doctest.h>

#include <cmath>

#include <cstring>
#include <fstream>
#include <iterator>
#include "cact/codec.h"
#include "support/test_paths.h"

using namespace cact::codec;

TEST_CASE("Gaussian Lloyd-Max levels match the published values") {
  const auto l2 = lloyd_max_gaussian(4);
  CHECK(l2[2] == doctest::Approx(0.4528).epsilon(1e-4));
  CHECK(l2[3] == doctest::Approx(1.5104).epsilon(1e-4));
  const auto l3 = lloyd_max_gaussian(8);
  const double expect3[4] = {0.2451, 0.7560, 1.3440, 2.1520};
  for (int i = 0; i < 4; ++i) CHECK(l3[4 + i] == doctest::Approx(expect3[i]).epsilon(2e-4));
  const auto l4 = lloyd_max_gaussian(16);
  const double expect4[8] = {0.1284, 0.3881, 0.6568, 0.9424, 1.2562, 1.6181, 2.0690, 2.7326};
  for (int i = 0; i < 8; ++i) CHECK(l4[8 + i] == doctest::Approx(expect4[i]).epsilon(2e-4));
  for (size_t i = 0; i < l4.size(); ++i) CHECK(l4[i] == -l4[l4.size() - 1 - i]);
}

TEST_CASE("standard codebooks equal the values stored in the trained archive") {
  std::ifstream in(cact::test::models_dir() / "license-tiny.cact", std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > 308);
  const auto ours = standard_codebooks();
  for (size_t i = 0; i < ours.size(); ++i) {
    float stored;
    std::memcpy(&stored, bytes.data() + 196 + 4 * i, 4);
    CHECK(ours[i] == doctest::Approx(stored).epsilon(1e-6));
  }
}

TEST_CASE("analytic codebooks: ternary and binary") {
  const auto stored = standard_codebooks();
  const auto t = codebook_for(kTernary, stored);
  REQUIRE(t.size() == 3);
  CHECK(t[0] == doctest::Approx(-1.2240064 / std::sqrt(128.0)));
  CHECK(t[1] == 0.0f);
  const auto b = codebook_for(1, stored);
  CHECK(b[1] == doctest::Approx(std::sqrt(2.0 / M_PI) / std::sqrt(128.0)));
  CHECK_THROWS_WITH(codebook_for(7, stored), doctest::Contains("not one the format carries"));
}
