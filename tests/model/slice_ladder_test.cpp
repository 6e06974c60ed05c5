// Ladder order, rungs and explicit block lists (MODEL.md "Slicing a ladder rung").
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "cact/error.h"
#include "cact/slice.h"

using cact::ladder_order;
using cact::rung;
using V = std::vector<uint32_t>;

TEST_CASE("slice: ladder order of the shipped 20-layer model") {
  CHECK(ladder_order(20) == V{0, 19, 9, 14, 4, 6, 11, 16, 2, 7, 12, 17, 1, 3, 5, 8, 10, 13, 15, 18});
  CHECK(rung(20, 8) == V{0, 4, 6, 9, 11, 14, 16, 19});
  CHECK(rung(20, 2) == V{0, 19});
  CHECK(rung(20, 3) == V{0, 9, 19});
}

TEST_CASE("slice: ladder order of small models") {
  CHECK(ladder_order(1) == V{0});
  CHECK(ladder_order(2) == V{0, 1});
  CHECK(ladder_order(3) == V{0, 2, 1});
  CHECK(ladder_order(4) == V{0, 3, 1, 2});
  CHECK(ladder_order(5) == V{0, 4, 2, 1, 3});
  // Gaps 3 and 3 after [0, 3, 6]: the leftmost is split first.
  CHECK(ladder_order(7) == V{0, 6, 3, 1, 4, 2, 5});
  CHECK(ladder_order(8) == V{0, 7, 3, 5, 1, 2, 4, 6});
  CHECK_THROWS_AS(ladder_order(0), cact::Error);
}

TEST_CASE("slice: the ladder is a permutation for every depth up to 64") {
  for (uint32_t L = 1; L <= 64; ++L) {
    const V order = ladder_order(L);
    REQUIRE(order.size() == L);
    CHECK(std::set<uint32_t>(order.begin(), order.end()).size() == L);
    CHECK(*std::max_element(order.begin(), order.end()) == L - 1);
    if (L >= 2) {
      CHECK(order[0] == 0);
      CHECK(order[1] == L - 1);
    }
    for (uint32_t d = 2; d <= L; ++d) {
      const V r = rung(L, d);
      CHECK(r.size() == d);
      CHECK(std::is_sorted(r.begin(), r.end()));
      CHECK(r.front() == 0);
      CHECK(r.back() == L - 1);
    }
  }
}

TEST_CASE("slice: rung depth must be 2..L") {
  CHECK_THROWS_WITH_AS(rung(20, 1), doctest::Contains("--layers 1: must be between 2 and 20"), cact::Error);
  CHECK_THROWS_WITH_AS(rung(20, 21), doctest::Contains("--layers 21"), cact::Error);
  CHECK_THROWS_AS(rung(20, 0), cact::Error);
  CHECK(rung(20, 20).size() == 20);
}

// Slicing a slice: rung d2 of the d1-layer rung (in the rung's own indices,
// mapped back) against rung d2 of the original. This is the property
// docs/SLICING.md states; for L = 20 it holds for every d2 exactly when
// d1 is 2, 3, 4, 8, 12 or 20.
static bool commutes(uint32_t L, uint32_t d1, uint32_t d2) {
  const V outer = rung(L, d1);
  V via;
  for (uint32_t i : rung(d1, d2)) via.push_back(outer[i]);
  return via == rung(L, d2);
}

TEST_CASE("slice: which rungs of rungs equal rungs of the original") {
  V closed;
  for (uint32_t d1 = 2; d1 <= 20; ++d1) {
    bool all = true;
    for (uint32_t d2 = 2; d2 <= d1; ++d2) all = all && commutes(20, d1, d2);
    if (all) closed.push_back(d1);
  }
  CHECK(closed == V{2, 3, 4, 8, 12, 20});
  // Every rung of rung 2 and rung 3 commutes, and d2 = 2 always does (first and last block).
  for (uint32_t L = 2; L <= 64; ++L) {
    for (uint32_t d1 = 2; d1 <= L; ++d1) CHECK(commutes(L, d1, 2));
    if (L >= 3) CHECK(commutes(L, 3, 3));
  }
  // Small models: every pair commutes up to L = 4 (the bundled model).
  for (uint32_t L = 2; L <= 4; ++L) {
    for (uint32_t d1 = 2; d1 <= L; ++d1) {
      for (uint32_t d2 = 2; d2 <= d1; ++d2) CHECK(commutes(L, d1, d2));
    }
  }
  // A case where it does not: rung 6 of 20 is 0 4 6 9 14 19; its own rung 4
  // (positions 0 2 3 5) is blocks 0 6 9 19, the original's rung 4 is 0 9 14 19.
  CHECK(rung(20, 6) == V{0, 4, 6, 9, 14, 19});
  CHECK(rung(6, 4) == V{0, 2, 3, 5});
  CHECK(rung(20, 4) == V{0, 9, 14, 19});
  CHECK_FALSE(commutes(20, 6, 4));
}

TEST_CASE("slice: explicit block lists") {
  CHECK(cact::parse_block_list("0,4,9,19") == V{0, 4, 9, 19});
  CHECK(cact::parse_block_list("7") == V{7});
  CHECK_THROWS_WITH_AS(cact::parse_block_list("0,,4"), doctest::Contains("--blocks"), cact::Error);
  CHECK_THROWS_AS(cact::parse_block_list("0,-4"), cact::Error);
  CHECK_THROWS_AS(cact::parse_block_list(""), cact::Error);
  CHECK_THROWS_AS(cact::parse_block_list("0,4,"), cact::Error);
  CHECK_THROWS_AS(cact::parse_block_list("a"), cact::Error);

  CHECK(cact::check_blocks(V{0, 4, 9, 19}, 20).empty());
  CHECK_THROWS_WITH_AS(cact::check_blocks(V{0, 4, 4, 19}, 20), doctest::Contains("block 4 is listed twice"),
                       cact::Error);
  CHECK_THROWS_WITH_AS(cact::check_blocks(V{0, 9, 4, 19}, 20), doctest::Contains("ascending"), cact::Error);
  CHECK_THROWS_WITH_AS(cact::check_blocks(V{0, 20}, 20), doctest::Contains("block 20 is out of range"), cact::Error);
  CHECK_THROWS_AS(cact::check_blocks(V{}, 20), cact::Error);
  const auto w = cact::check_blocks(V{4, 9}, 20);
  REQUIRE(w.size() == 2);
  CHECK(w[0].find("block 0") != std::string::npos);
  CHECK(w[1].find("block 19") != std::string::npos);
  CHECK(cact::check_blocks(V{0, 9}, 20).size() == 1);
}
