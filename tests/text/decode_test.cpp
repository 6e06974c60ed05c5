// decode() per TOKENIZER.md, and StreamDecoder: never half a character, and the
// concatenated stream equals decode() of all ids.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cact/error.h"
#include "cact/tokenizer.h"
#include "support/test_paths.h"
#include "text/text_fixtures.h"

using namespace cact;
using namespace cact::test;

namespace {

const std::string kFFFD = "\xEF\xBF\xBD";

int32_t byte_id(const Tokenizer& tok, unsigned v) {
  char name[8];
  std::snprintf(name, sizeof name, "<0x%02X>", v);
  return tok.find(name);
}

std::vector<int32_t> byte_ids(const Tokenizer& tok, std::string_view bytes) {
  std::vector<int32_t> ids;
  for (const char c : bytes) ids.push_back(byte_id(tok, static_cast<unsigned char>(c)));
  return ids;
}

bool is_clean_utf8(const std::string& s) {
  return expected_round_trip(s) == s && s.find("\xE2\x96\x81") == std::string::npos;
}

// Streams ids one at a time; checks each piece of output is whole characters and
// the total equals decode().
std::string stream(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  StreamDecoder d(tok);
  std::string all;
  for (const int32_t id : ids) {
    const std::string out = d.push(id);
    CHECK_MESSAGE(is_clean_utf8(out), "push emitted a partial or invalid character");
    all += out;
  }
  all += d.finish();
  CHECK(all == tok.decode(ids));
  return all;
}

}  // namespace

TEST_CASE("decode: control and unknown pieces contribute nothing; bytes contribute their byte") {
  const Tokenizer& tok = shipped_tokenizer();
  const auto hello = tok.encode("Hello");
  std::vector<int32_t> ids = {2};  // bos
  ids.insert(ids.end(), hello.begin(), hello.end());
  ids.push_back(3);  // unk
  ids.push_back(1);  // eos
  CHECK(tok.decode(ids) == "Hello");
  CHECK(tok.decode(std::vector<int32_t>{}) == "");
  CHECK(tok.decode(std::vector<int32_t>{0, 1, 2, 3}) == "");
  CHECK(tok.decode(byte_ids(tok, "caf\xC3\xA9")) == "caf\xC3\xA9");
  CHECK(tok.piece_bytes(2).empty());
  CHECK(tok.piece_bytes(3).empty());
  CHECK(tok.piece_bytes(byte_id(tok, 0x41)) == "A");
  CHECK(tok.piece_bytes(4) == "<|im_start|>");
  CHECK(tok.decode(std::vector<int32_t>{4, 5}) == "<|im_start|><|im_end|>");
}

TEST_CASE("decode: invalid byte sequences become U+FFFD, one per byte") {
  const Tokenizer& tok = shipped_tokenizer();
  CHECK(tok.decode(byte_ids(tok, "\xFF")) == kFFFD);
  CHECK(tok.decode(byte_ids(tok, "a\xE2\x82")) == "a" + kFFFD + kFFFD);
  CHECK(tok.decode(byte_ids(tok, "\xE2\x82(")) == kFFFD + kFFFD + "(");
  CHECK(tok.decode(byte_ids(tok, "\xED\xA0\x80")) == kFFFD + kFFFD + kFFFD);  // surrogate
  CHECK(tok.decode(byte_ids(tok, "\xC0\xAF")) == kFFFD + kFFFD);              // overlong
  CHECK(tok.decode(byte_ids(tok, "\xF0\x9F\x98\x80")) == "\xF0\x9F\x98\x80");
}

TEST_CASE("decode: U+2581 becomes a space and one leading space is dropped") {
  const Tokenizer& tok = shipped_tokenizer();
  const int32_t mark = tok.find("\xE2\x96\x81");
  REQUIRE(mark >= 0);
  CHECK(tok.decode(std::vector<int32_t>{mark}) == "");
  CHECK(tok.decode(std::vector<int32_t>{mark, mark}) == " ");
  CHECK(tok.decode(tok.encode("  x  ")) == "  x  ");
  CHECK(tok.decode(tok.encode("a b")) == "a b");
  // The dropped space is the text's first character, after control pieces.
  CHECK(tok.decode(std::vector<int32_t>{2, mark, 6}) == "<think>");
  // Without add_dummy_prefix nothing is dropped.
  TokenizerModel m = tok.model();
  m.add_dummy_prefix = false;
  const Tokenizer raw(m);
  CHECK(raw.decode(std::vector<int32_t>{mark, 6}) == " <think>");
  CHECK(raw.encode("a") == std::vector<int32_t>{tok.find("a")});  // no dummy '▁' in front
  CHECK(raw.decode(raw.encode(" a b")) == " a b");
}

TEST_CASE("decode: an id outside the vocabulary is an error") {
  const Tokenizer& tok = shipped_tokenizer();
  CHECK_THROWS_WITH_AS(tok.decode(std::vector<int32_t>{1024}),
                       "tokenizer: id 1024 is outside the vocabulary (1024 pieces)", cact::Error);
  CHECK_THROWS_WITH_AS(tok.piece_bytes(-1), "tokenizer: id -1 is outside the vocabulary (1024 pieces)", cact::Error);
  StreamDecoder d(tok);
  CHECK_THROWS_AS(d.push(5000), cact::Error);
}

TEST_CASE("stream: a 4-byte character split over byte pieces is held until complete") {
  for (const Tokenizer* tok : {&shipped_tokenizer(), &golden_tokenizer()}) {
    const std::string emoji = "\xF0\x9F\x98\x80";
    const auto ids = tok->encode("a" + emoji + "b");
    // '▁a', then four byte pieces, then 'b' (possibly merged differently, but the emoji is bytes).
    const auto bytes = byte_ids(*tok, emoji);
    const auto at = std::search(ids.begin(), ids.end(), bytes.begin(), bytes.end());
    REQUIRE(at != ids.end());
    StreamDecoder d(*tok);
    std::string all;
    for (auto it = ids.begin(); it != ids.end(); ++it) {
      const std::string out = d.push(*it);
      if (it >= at && it < at + 3) CHECK(out.empty());
      if (it == at + 3) CHECK(out == emoji);
      all += out;
    }
    all += d.finish();
    CHECK(all == "a" + emoji + "b");
  }
}

TEST_CASE("stream: held bytes that never complete become U+FFFD at finish or when refuted") {
  const Tokenizer& tok = shipped_tokenizer();
  StreamDecoder d(tok);
  CHECK(d.push(byte_id(tok, 0xE2)) == "");
  CHECK(d.push(byte_id(tok, 0x82)) == "");
  CHECK(d.finish() == kFFFD + kFFFD);
  // Refuted by the next byte: both held bytes are released at once.
  CHECK(d.push(byte_id(tok, 0xE2)) == "");
  CHECK(d.push(byte_id(tok, 0x82)) == "");
  CHECK(d.push(byte_id(tok, 0x41)) == kFFFD + kFFFD + "A");
  CHECK(d.finish() == "");
}

TEST_CASE("stream: the leading space is dropped once per stream") {
  const Tokenizer& tok = shipped_tokenizer();
  const int32_t mark = tok.find("\xE2\x96\x81");
  StreamDecoder d(tok);
  CHECK(d.push(2) == "");     // bos
  CHECK(d.push(mark) == "");  // the dummy prefix
  CHECK(d.push(mark) == " ");
  CHECK(d.finish() == "");
  CHECK(d.push(mark) == "");  // finish() starts a new stream
  CHECK(stream(tok, tok.encode(" hello world")) == " hello world");
}

TEST_CASE("stream: equals decode on the corpus, hard strings and random id sequences") {
  const auto lines = read_lines(models_dir() / "corpus.txt");
  for (const Tokenizer* tok : {&shipped_tokenizer(), &golden_tokenizer()}) {
    for (size_t i = 0; i < lines.size(); i += 7) stream(*tok, tok->encode(lines[i]));
    for (const char* s : {"\xF0\x9F\x98\x80\xF0\x9F\x91\x8D", "\xE6\x97\xA5\xE6\x9C\xAC \xED\x95\x9C",
                          "a\xFF"
                          "b",
                          "\xE2\x96\x81", " \xE2\x82 x", "<think>\xC3\xA9</think>"}) {
      stream(*tok, tok->encode(s));
    }
    std::mt19937 rng(7);
    const auto n = static_cast<uint32_t>(tok->size());
    for (int iter = 0; iter < 500; ++iter) {
      std::vector<int32_t> ids;
      for (size_t len = rng() % 20; len > 0; --len) {
        // Mostly byte pieces (14..269), so sequences are split and broken a lot.
        ids.push_back(rng() % 4 != 0 ? static_cast<int32_t>(14 + rng() % 256) : static_cast<int32_t>(rng() % n));
      }
      stream(*tok, ids);
    }
  }
}
