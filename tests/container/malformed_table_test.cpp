// The malformed-archive table: every case must be refused by check_archive
// with the exact first message, and by Model::from_bytes with a cact::Error
// that starts with that message. Nothing may crash (the fuzz build runs this
// under ASan/UBSan).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <set>

#include "cact/error.h"
#include "cact/model.h"
#include "cact/validate.h"
#include "container/malformed_cases.h"

using namespace cact;
using namespace cact::test::malformed;

TEST_CASE("malformed: the pristine tiny archive and its re-emissions are valid") {
  CHECK(check_archive(tiny()).empty());
  CHECK(check_archive(reemit([](auto&, auto&) {})) == std::vector<std::string>{});
  CHECK(reemit([](auto&, auto&) {}) == tiny());  // archive_bytes reproduces the file exactly
  CHECK(check_archive(ternary_archive(false)).empty());
}

TEST_CASE("malformed: table of hand-made archives") {
  const std::vector<Case> cases = all_cases();
  CHECK(cases.size() >= 40);
  std::set<std::string> names;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    CHECK_MESSAGE(names.insert(c.name).second, "duplicate case name");
    const std::vector<std::string> problems = check_archive(c.bytes);
    REQUIRE_MESSAGE(!problems.empty(), "accepted: " << c.name);
    if (c.prefix) {
      CHECK_MESSAGE(problems.front().rfind(c.expected, 0) == 0, problems.front());
    } else {
      CHECK(problems.front() == c.expected);
    }
    for (const std::string& p : problems) {
      CHECK_MESSAGE(!p.empty(), "empty message");
      CHECK_MESSAGE(p.find('\n') == std::string::npos, "multi-line message: " << p);
    }
    bool threw = false;
    try {
      (void)Model::from_bytes(c.bytes);
    } catch (const Error& e) {
      threw = true;
      CHECK(std::string(e.what()).rfind(problems.front(), 0) == 0);
    }
    CHECK_MESSAGE(threw, "Model::from_bytes accepted: " << c.name);
  }
  MESSAGE(cases.size() << " malformed archives checked");
}

TEST_CASE("malformed: Model::open prefixes the path and reads a file") {
  const auto dir = cact::test::scratch_dir("malformed-open");
  const auto path = dir / "bad.cact";
  Bytes b = tiny();
  put<uint32_t>(b, hdr("kv_bits"), 5);
  write_bytes(path, b);
  CHECK_THROWS_WITH_AS(Model::open(path), (path.string() + ": header: kv_bits 5 must be 8, 2, 3 or 4").c_str(), Error);
  CHECK_THROWS_AS(Model::open(dir / "missing.cact"), Error);
  CHECK_THROWS_WITH_AS(Model::open(dir), (dir.string() + ": not a regular file (a directory)").c_str(), Error);
  // A FIFO is refused at once instead of blocking until a writer opens it.
  const auto fifo = dir / "fifo.cact";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK_THROWS_WITH_AS(Model::open(fifo), (fifo.string() + ": not a regular file (a FIFO)").c_str(), Error);
  write_bytes(path, {});
  CHECK_THROWS_WITH_AS(Model::open(path), (path.string() + ": file: 0 bytes, shorter than the 196-byte header").c_str(),
                       Error);
}
