// The RAW blob: byte-identical round trip, and one test per parse error with
// its exact message.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cact/error.h"
#include "cact/tokenizer.h"
#include "text/text_fixtures.h"

using namespace cact;
using cact::test::shipped_tokenizer_blob;

namespace {

using Bytes = std::vector<uint8_t>;

// An independent writer of the FORMAT.md layout that does no checking, so tests
// can build blobs that lie.
struct RawPiece {
  float score;
  uint8_t type;
  std::string surface;
};
struct RawModel {
  uint32_t n_pieces_override = 0;  // 0: the real count
  uint32_t pad = 0, eos = 1, bos = 2, unk = 3;
  uint8_t dummy = 1, fallback = 0;
  uint16_t header_pad = 0;
  std::vector<RawPiece> pieces;
};

void put(Bytes& b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

Bytes write_raw(const RawModel& m) {
  Bytes b;
  put(b, m.n_pieces_override ? m.n_pieces_override : m.pieces.size(), 4);
  put(b, m.pad, 4);
  put(b, m.eos, 4);
  put(b, m.bos, 4);
  put(b, m.unk, 4);
  put(b, m.dummy, 1);
  put(b, m.fallback, 1);
  put(b, m.header_pad, 2);
  for (const auto& p : m.pieces) {
    put(b, std::bit_cast<uint32_t>(p.score), 4);
    put(b, p.type, 1);
    put(b, p.surface.size(), 2);
    b.insert(b.end(), p.surface.begin(), p.surface.end());
  }
  return b;
}

RawModel tiny() {
  RawModel m;
  m.pieces = {{0, 2, "<pad>"},
              {0, 2, "</s>"},
              {0, 2, "<s>"},
              {0, 1, "<unk>"},
              {0, 3, "<x>"},
              {-1, 0, "\xE2\x96\x81"},
              {-2, 0, "a"},
              {-3, 0, "b"},
              {-4, 0,
               "\xE2\x96\x81"
               "a"},
              {-5, 0, "ab"}};
  return m;
}

// Offset of record `i` in a well-formed blob.
size_t record_offset(const Bytes& b, size_t i) {
  size_t pos = 24;
  for (size_t k = 0; k < i; ++k) pos += 7 + (b[pos + 5] | (b[pos + 6] << 8));
  return pos;
}

void set_u32(Bytes& b, size_t at, uint32_t v) {
  REQUIRE(at + 4 <= b.size());
  for (int i = 0; i < 4; ++i) b[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
}

// The message parse_tokenizer_blob throws (as cact::Error), or "(no error)".
std::string parse_error(const Bytes& b) {
  try {
    parse_tokenizer_blob(b);
  } catch (const cact::Error& e) {
    return e.what();
  }
  return "(no error)";
}
#define CHECK_PARSE_FAILS(blob, msg) CHECK(parse_error(blob) == std::string(msg))

}  // namespace

TEST_CASE("blob: the shipped blob parses and serialises back byte for byte") {
  const auto raw = shipped_tokenizer_blob();
  const TokenizerModel m = parse_tokenizer_blob(raw.bytes);
  CHECK(m.pieces.size() == 1024);
  CHECK(m.pad_id == 0);
  CHECK(m.eos_id == 1);
  CHECK(m.bos_id == 2);
  CHECK(m.unk_id == 3);
  CHECK(m.add_dummy_prefix);
  CHECK(m.byte_fallback);
  CHECK(m.pieces[3].type == PieceType::Unknown);
  CHECK(m.pieces[4].surface == "<|im_start|>");
  CHECK(m.pieces[269].surface == "<0xFF>");
  CHECK(std::signbit(m.pieces[270].score));  // -0.0 survives
  CHECK(serialize_tokenizer(m) == raw.bytes);
}

TEST_CASE("blob: a hand-built model round-trips and the writers agree") {
  const RawModel r = tiny();
  const Bytes bytes = write_raw(r);
  const TokenizerModel m = parse_tokenizer_blob(bytes);
  REQUIRE(m.pieces.size() == r.pieces.size());
  for (size_t i = 0; i < r.pieces.size(); ++i) {
    CHECK(m.pieces[i].surface == r.pieces[i].surface);
    CHECK(static_cast<uint8_t>(m.pieces[i].type) == r.pieces[i].type);
    CHECK(std::bit_cast<uint32_t>(m.pieces[i].score) == std::bit_cast<uint32_t>(r.pieces[i].score));
  }
  CHECK_FALSE(m.byte_fallback);
  CHECK(serialize_tokenizer(m) == bytes);
}

TEST_CASE("blob: header errors") {
  const Bytes good = shipped_tokenizer_blob().bytes;
  CHECK_PARSE_FAILS(Bytes(10, 0), "tokenizer blob: 10 bytes is shorter than the 24-byte header");
  CHECK_PARSE_FAILS(Bytes{}, "tokenizer blob: 0 bytes is shorter than the 24-byte header");
  {
    Bytes b = good;
    set_u32(b, 0, 0);
    CHECK_PARSE_FAILS(b, "tokenizer blob: n_pieces 0: a tokenizer needs at least one piece");
  }
  {
    Bytes b = good;
    set_u32(b, 0, 4000000000u);
    CHECK_PARSE_FAILS(b, "tokenizer blob: n_pieces 4000000000 needs at least 28000000024 bytes but the blob has 12369");
  }
  {
    Bytes b = good;
    set_u32(b, 16, 1024);
    CHECK_PARSE_FAILS(b, "tokenizer blob: unk_id 1024 is not below n_pieces 1024");
  }
  {
    Bytes b = good;
    set_u32(b, 4, 0xFFFFFFFFu);
    CHECK_PARSE_FAILS(b, "tokenizer blob: pad_id 4294967295 is not below n_pieces 1024");
  }
  {
    Bytes b = good;
    b[20] = 2;
    CHECK_PARSE_FAILS(b, "tokenizer blob: add_dummy_prefix is 2, not 0 or 1");
  }
  {
    Bytes b = good;
    b[21] = 3;
    CHECK_PARSE_FAILS(b, "tokenizer blob: byte_fallback is 3, not 0 or 1");
  }
  {
    Bytes b = good;
    b[22] = 5;
    CHECK_PARSE_FAILS(b, "tokenizer blob: header pad is 5, not 0");
  }
}

TEST_CASE("blob: record errors") {
  const Bytes good = shipped_tokenizer_blob().bytes;
  {
    Bytes b = good;  // the last piece claims 900 bytes
    const size_t at = record_offset(b, 1023);
    b[at + 5] = 900 & 0xFF;
    b[at + 6] = 900 >> 8;
    CHECK_PARSE_FAILS(b, "tokenizer blob: piece 1023 surface_len 900 runs past the end of the blob (12369 bytes)");
  }
  {
    Bytes b = good;  // 38 pieces, cut inside piece 37's surface
    const size_t at = record_offset(b, 37);
    b.resize(at + 8);
    set_u32(b, 0, 38);
    CHECK_PARSE_FAILS(b, "tokenizer blob: piece 37 surface_len 6 runs past the end of the blob (" +
                             std::to_string(b.size()) + " bytes)");
  }
  {
    Bytes b = good;  // cut inside piece 1023's fixed fields
    const size_t at = record_offset(b, 1023);
    b.resize(at + 3);
    CHECK_PARSE_FAILS(b, "tokenizer blob: piece 1023 record at offset " + std::to_string(at) +
                             " runs past the end of the blob (" + std::to_string(b.size()) + " bytes)");
  }
  {
    Bytes b = good;
    b[record_offset(b, 14) + 4] = 7;
    CHECK_PARSE_FAILS(b, "tokenizer blob: piece 14 has type 7 (known: 0-4)");
  }
  {
    Bytes b = good;
    b.insert(b.end(), {0, 0, 0});
    CHECK_PARSE_FAILS(b, "tokenizer blob: 3 trailing bytes after piece 1023 (12372 bytes)");
  }
}

TEST_CASE("blob: piece content errors") {
  {
    RawModel m = tiny();
    m.pieces[5].surface = "";
    CHECK_PARSE_FAILS(write_raw(m), "tokenizer blob: piece 5 has an empty surface");
  }
  {
    RawModel m = tiny();
    m.pieces[5].surface = "a\xFF";
    CHECK_PARSE_FAILS(write_raw(m), "tokenizer blob: piece 5 surface \"a\\xFF\" is not valid UTF-8");
  }
  {
    RawModel m = tiny();
    m.pieces[6].score = std::numeric_limits<float>::quiet_NaN();
    CHECK_PARSE_FAILS(write_raw(m), "tokenizer blob: piece 6 score is not finite");
  }
  {
    RawModel m = tiny();
    m.pieces[6].score = std::numeric_limits<float>::infinity();
    CHECK_PARSE_FAILS(write_raw(m), "tokenizer blob: piece 6 score is not finite");
  }
  {
    RawModel m = tiny();
    m.pieces[7] = {0, 4, "<0xzz>"};
    CHECK_PARSE_FAILS(write_raw(m), "tokenizer blob: piece 7 is BYTE but its surface \"<0xzz>\" is not <0xNN>");
  }
  {
    RawModel m = tiny();
    m.pieces[7] = {0, 4, "<0x4a>"};  // SentencePiece writes upper-case hex
    CHECK_PARSE_FAILS(write_raw(m), "tokenizer blob: piece 7 is BYTE but its surface \"<0x4a>\" is not <0xNN>");
  }
  {
    RawModel m = tiny();
    m.pieces[7] = {0, 4, "b"};
    CHECK_PARSE_FAILS(write_raw(m), "tokenizer blob: piece 7 is BYTE but its surface \"b\" is not <0xNN>");
  }
  {
    RawModel m = tiny();
    m.pieces[7].surface = "a";
    CHECK_PARSE_FAILS(write_raw(m), "tokenizer blob: piece 7 surface \"a\" repeats piece 6");
  }
  {
    RawModel m = tiny();
    m.pieces[3].type = 0;
    CHECK_PARSE_FAILS(write_raw(m), "tokenizer blob: unk_id 3 names piece \"<unk>\" of type NORMAL, not UNKNOWN");
  }
  {
    RawModel m = tiny();
    m.eos = 6;
    CHECK_PARSE_FAILS(write_raw(m), "tokenizer blob: eos_id 6 names piece \"a\" of type NORMAL, not CONTROL");
  }
  {
    RawModel m = tiny();
    m.fallback = 1;
    CHECK_PARSE_FAILS(write_raw(m), "tokenizer blob: byte_fallback is set but there is no BYTE piece <0x00>");
  }
  {
    RawModel m = tiny();  // all byte pieces but one
    m.fallback = 1;
    for (int v = 0; v < 256; ++v) {
      if (v == 0x41) continue;
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", v);
      m.pieces.push_back({0, 4, name});
    }
    CHECK_PARSE_FAILS(write_raw(m), "tokenizer blob: byte_fallback is set but there is no BYTE piece <0x41>");
    m.pieces.push_back({0, 4, "<0x41>"});
    CHECK(parse_tokenizer_blob(write_raw(m)).pieces.size() == 10 + 256);
  }
}

TEST_CASE("blob: serialize_tokenizer and the Tokenizer constructor check the model too") {
  TokenizerModel m = parse_tokenizer_blob(write_raw(tiny()));
  {
    TokenizerModel bad = m;
    bad.unk_id = 99;
    CHECK_THROWS_WITH_AS(serialize_tokenizer(bad), "serialize_tokenizer: unk_id 99 is not below n_pieces 10",
                         cact::Error);
    CHECK_THROWS_WITH_AS(Tokenizer{bad}, "tokenizer: unk_id 99 is not below n_pieces 10", cact::Error);
  }
  {
    TokenizerModel bad = m;
    bad.pieces[6].surface = std::string(70000, 'q');
    CHECK_THROWS_WITH_AS(serialize_tokenizer(bad),
                         "serialize_tokenizer: piece 6 surface is 70000 bytes, more than a u16 surface_len holds",
                         cact::Error);
  }
  {
    TokenizerModel bad = m;
    bad.pieces[6].type = static_cast<PieceType>(9);
    CHECK_THROWS_WITH_AS(serialize_tokenizer(bad), "serialize_tokenizer: piece 6 has type 9 (known: 0-4)", cact::Error);
  }
  TokenizerModel empty;
  CHECK_THROWS_WITH_AS(Tokenizer{empty}, "tokenizer: n_pieces 0: a tokenizer needs at least one piece", cact::Error);
}

TEST_CASE("blob: random corruption is either parsed or refused with a cact::Error, never more") {
  // Deterministic mutations of the shipped blob: byte flips, truncations, splices.
  // Run under CACT_SANITIZE to check that no read goes past what the checks cover.
  const Bytes good = shipped_tokenizer_blob().bytes;
  std::mt19937 rng(4242);
  size_t refused = 0, parsed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Bytes b = good;
    switch (iter % 3) {
      case 0:
        for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) b[rng() % b.size()] = static_cast<uint8_t>(rng());
        break;
      case 1:
        b.resize(rng() % b.size());
        break;
      default: {
        const size_t at = rng() % b.size();
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(at),
                b.begin() + static_cast<std::ptrdiff_t>(std::min(b.size(), at + 1 + rng() % 16)));
      }
    }
    try {
      const TokenizerModel m = parse_tokenizer_blob(b);
      CHECK(serialize_tokenizer(m) == b);  // whatever parses is canonical
      ++parsed;
    } catch (const cact::Error& e) {
      CHECK(std::string(e.what()).rfind("tokenizer blob: ", 0) == 0);
      ++refused;
    }
  }
  CHECK(refused > 0);
  CHECK(parsed + refused == 3000);
}
