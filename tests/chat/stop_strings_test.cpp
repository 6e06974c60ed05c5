// StopStrings: nothing of a stop string is passed on, even split over pieces.
#include <doctest/doctest.h>

#include "cact/stop_strings.h"

TEST_CASE("stop strings: holdback across pieces, match, release at the end") {
  cact::chat::StopStrings s({"END", "\n\n"});
  CHECK(s.push("hello E") == "hello ");
  CHECK(s.push("N") == "");
  CHECK(s.push("x") == "ENx");
  CHECK(s.push(" done\n") == " done");
  CHECK(!s.matched());
  CHECK(s.push("\nmore") == "");
  CHECK(s.matched());
  cact::chat::StopStrings t({"END"});
  CHECK(t.push("abcEN") == "abc");
  CHECK(t.finish() == "EN");
  cact::chat::StopStrings none({});
  CHECK(none.push("anything") == "anything");
}
