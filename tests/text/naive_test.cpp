// Encode equals a literal, quadratic transcription of TOKENIZER.md's naive
// description, on the shipped model and on synthetic models full of score ties
// and overlapping user-defined pieces.
#include <doctest/doctest.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cact/tokenizer.h"
#include "support/test_paths.h"
#include "text/text_fixtures.h"

using namespace cact;

namespace {

const std::string kMark = "\xE2\x96\x81";

// Step 2 plus the documented invalid-UTF-8 rule (one U+FFFD per offending byte).
// expected_round_trip() does the same but also turns U+2581 into ' ', so undo
// the spaces first: normalisation maps ' ' to U+2581 anyway.
std::string naive_normalise(std::string_view text, bool dummy) {
  std::string spaced;
  for (const char c : text) spaced += c == ' ' ? kMark : std::string(1, c);
  const std::string repaired = cact::test::expected_round_trip(spaced);  // U+2581 -> ' '
  std::string out = dummy ? kMark : "";
  for (const char c : repaired) out += c == ' ' ? kMark : std::string(1, c);
  return out;
}

size_t cp_len(unsigned char c) { return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

std::vector<int32_t> naive_encode(const TokenizerModel& m, std::string_view text) {
  std::vector<int32_t> ids;
  if (text.empty()) return ids;
  std::map<std::string, int32_t> text_pieces;  // NORMAL and USER_DEFINED
  std::map<std::string, int32_t> byte_piece;
  for (size_t i = 0; i < m.pieces.size(); ++i) {
    const auto& p = m.pieces[i];
    if (p.type == PieceType::Normal || p.type == PieceType::UserDefined)
      text_pieces[p.surface] = static_cast<int32_t>(i);
    if (p.type == PieceType::Byte) byte_piece[p.surface] = static_cast<int32_t>(i);
  }
  auto bpe = [&](const std::string& seg) {
    std::vector<std::string> sym;
    for (size_t i = 0; i < seg.size(); i += cp_len(static_cast<unsigned char>(seg[i]))) {
      sym.push_back(seg.substr(i, cp_len(static_cast<unsigned char>(seg[i]))));
    }
    for (;;) {
      int best = -1;
      float best_score = 0;
      for (size_t i = 0; i + 1 < sym.size(); ++i) {
        const auto it = text_pieces.find(sym[i] + sym[i + 1]);
        if (it == text_pieces.end()) continue;
        const float s = m.pieces[static_cast<size_t>(it->second)].score;
        if (best < 0 || s > best_score) {  // strict: ties keep the leftmost
          best = static_cast<int>(i);
          best_score = s;
        }
      }
      if (best < 0) break;
      sym[static_cast<size_t>(best)] += sym[static_cast<size_t>(best) + 1];
      sym.erase(sym.begin() + best + 1);
    }
    for (const auto& s : sym) {
      const auto it = text_pieces.find(s);
      if (it != text_pieces.end()) {
        ids.push_back(it->second);
      } else if (m.byte_fallback) {
        for (const char c : s) {
          char name[8];
          std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned char>(c));
          ids.push_back(byte_piece.at(name));
        }
      } else {
        ids.push_back(static_cast<int32_t>(m.unk_id));
      }
    }
  };
  const std::string s = naive_normalise(text, m.add_dummy_prefix);
  std::string pending;
  size_t i = 0;
  while (i < s.size()) {
    size_t best_len = 0;
    int32_t best_id = -1;
    for (size_t k = 0; k < m.pieces.size(); ++k) {
      const auto& p = m.pieces[k];
      if (p.type == PieceType::UserDefined && p.surface.size() > best_len &&
          s.compare(i, p.surface.size(), p.surface) == 0) {
        best_len = p.surface.size();
        best_id = static_cast<int32_t>(k);
      }
    }
    if (best_len > 0) {
      bpe(pending);
      pending.clear();
      ids.push_back(best_id);
      i += best_len;
    } else {
      const size_t n = cp_len(static_cast<unsigned char>(s[i]));
      pending += s.substr(i, n);
      i += n;
    }
  }
  bpe(pending);
  return ids;
}

// A model over a tiny alphabet with every pair and many triples as pieces, and
// scores drawn from three values: lots of ties, lots of competing merges.
TokenizerModel synthetic(uint32_t seed, bool dummy, bool fallback) {
  std::mt19937 rng(seed);
  TokenizerModel m;
  m.add_dummy_prefix = dummy;
  m.byte_fallback = fallback;
  m.pieces = {{"<pad>", 0, PieceType::Control},  {"</s>", 0, PieceType::Control},
              {"<s>", 0, PieceType::Control},    {"<unk>", 0, PieceType::Unknown},
              {"<a", 0, PieceType::UserDefined}, {"<ab>", 0, PieceType::UserDefined},
              {"ab", 0, PieceType::UserDefined}, {"\xE2\x96\x81<", 0, PieceType::UserDefined}};
  if (fallback) {
    for (int v = 0; v < 256; ++v) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", v);
      m.pieces.push_back({name, 0, PieceType::Byte});
    }
  }
  const std::vector<std::string> alphabet = {"a", "b", "c", kMark, "\xC3\xA9"};
  std::map<std::string, bool> have;
  for (const auto& p : m.pieces) have[p.surface] = true;
  auto add = [&](const std::string& s) {
    if (have[s]) return;
    have[s] = true;
    const float scores[] = {-1.0f, -2.0f, -3.0f};
    m.pieces.push_back({s, scores[rng() % 3], PieceType::Normal});
  };
  for (const auto& x : alphabet) add(x);
  for (const auto& x : alphabet) {
    for (const auto& y : alphabet) {
      if (rng() % 4 != 0) add(x + y);
      for (const auto& z : alphabet) {
        if (rng() % 3 == 0) add(x + y + z);
      }
    }
  }
  for (int k = 0; k < 40; ++k) {
    std::string s;
    for (size_t len = 4 + rng() % 4; len > 0; --len) s += alphabet[rng() % alphabet.size()];
    add(s);
  }
  return m;
}

std::string random_text(std::mt19937& rng) {
  static const std::vector<std::string> atoms = {"a",  "b",    "c",  " ", "\xE2\x96\x81", "\xC3\xA9",         "<", ">",
                                                 "<a", "<ab>", "ab", "d", "\xFF",         "\xF0\x9F\x98\x80", "\n"};
  std::string s;
  for (size_t len = rng() % 30; len > 0; --len) s += atoms[rng() % atoms.size()];
  return s;
}

}  // namespace

TEST_CASE("naive: synthetic models with ties and overlapping user-defined pieces") {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    const TokenizerModel m = synthetic(seed, seed % 2 == 0, seed % 3 != 0);
    const Tokenizer tok(m);
    std::mt19937 rng(seed * 7919);
    for (int iter = 0; iter < 400; ++iter) {
      const std::string text = random_text(rng);
      CAPTURE(seed);
      CAPTURE(text);
      REQUIRE(tok.encode(text) == naive_encode(m, text));
    }
  }
}

TEST_CASE("naive: the shipped model on random corpus-like text") {
  const Tokenizer& tok = cact::test::shipped_tokenizer();
  const auto lines = cact::test::read_lines(cact::test::models_dir() / "corpus.txt");
  std::mt19937 rng(99);
  for (int iter = 0; iter < 200; ++iter) {
    const std::string& line = lines[rng() % lines.size()];
    const size_t a = rng() % (line.size() + 1);
    std::string text = line.substr(a, rng() % 200);
    if (iter % 4 == 0) text += "<tool_call>" + random_text(rng);
    CAPTURE(text);
    REQUIRE(tok.encode(text) == naive_encode(tok.model(), text));
  }
}

TEST_CASE("naive: longest user-defined piece wins; ties go to the leftmost pair") {
  TokenizerModel m;
  m.byte_fallback = false;
  m.add_dummy_prefix = false;
  m.pieces = {{"<pad>", 0, PieceType::Control}, {"</s>", 0, PieceType::Control},   {"<s>", 0, PieceType::Control},
              {"<unk>", 0, PieceType::Unknown}, {"<a", 0, PieceType::UserDefined}, {"<ab>", 0, PieceType::UserDefined},
              {"a", -1, PieceType::Normal},     {"b", -1, PieceType::Normal},      {"aa", -2, PieceType::Normal},
              {"ab", -2, PieceType::Normal},    {"ba", -2, PieceType::Normal}};
  const Tokenizer tok(m);
  CHECK(tok.encode("x<ab>") == std::vector<int32_t>{3, 5});  // x is unknown, then the longer marker
  CHECK(tok.encode("<ab") == std::vector<int32_t>{4, 7});
  CHECK(tok.encode("aaa") == std::vector<int32_t>{8, 6});  // leftmost "aa" first
  CHECK(tok.encode("aba") == std::vector<int32_t>{9, 6});  // "ab" and "ba" tie: leftmost
  CHECK(tok.encode("bab") == std::vector<int32_t>{10, 7});
}
