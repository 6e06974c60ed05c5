// Encode agrees with libsentencepiece (the oracle named in TOKENIZER.md) on both
// models, for every corpus line, the whole corpus, hand-picked hard cases and
// deterministic random strings; decode(encode(x)) gives x back (see
// expected_round_trip for the two documented exceptions).
#include <doctest/doctest.h>

#include <sentencepiece_processor.h>
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cact/tokenizer.h"
#include "support/test_paths.h"
#include "text/text_fixtures.h"

using namespace cact;
using namespace cact::test;

namespace {

struct Oracle {
  sentencepiece::SentencePieceProcessor sp;
  explicit Oracle(const std::filesystem::path& model) {
    const auto st = sp.Load(model.string());
    REQUIRE_MESSAGE(st.ok(), st.ToString());
  }
  std::vector<int32_t> encode(const std::string& text) const {
    std::vector<int> ids;
    const auto st = sp.Encode(text, &ids);
    REQUIRE_MESSAGE(st.ok(), st.ToString());
    return {ids.begin(), ids.end()};
  }
};

const Oracle& shipped_oracle() {
  static const Oracle o(tok_model_path());
  return o;
}
const Oracle& golden_oracle() {
  static const Oracle o(golden_model_path());
  return o;
}

std::string show(std::string_view s) {
  std::string out;
  for (const char ch : s.substr(0, 80)) {
    const auto c = static_cast<uint8_t>(ch);
    if (c >= 0x20 && c < 0x7F) {
      out += ch;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  return out;
}

// Checks one input against the oracle and the round trip; returns true if all agree.
bool agrees(const Tokenizer& tok, const Oracle& oracle, const std::string& text) {
  const auto ours = tok.encode(text);
  const auto theirs = oracle.encode(text);
  bool ok = true;
  if (ours != theirs) {
    ok = false;
    FAIL_CHECK("encode differs from sentencepiece on \"" << show(text) << "\"");
  }
  const std::string back = tok.decode(ours);
  if (back != expected_round_trip(text)) {
    ok = false;
    FAIL_CHECK("decode(encode(x)) != x for \"" << show(text) << "\": got \"" << show(back) << "\"");
  }
  return ok;
}

struct Model {
  const char* name;
  const Tokenizer& (*tok)();
  const Oracle& (*oracle)();
};
const Model kModels[] = {{"tok.model", shipped_tokenizer, shipped_oracle},
                         {"golden.model", golden_tokenizer, golden_oracle}};

std::vector<std::string> hard_cases() {
  using namespace std::string_literals;
  std::vector<std::string> v = {
      // Markers: inside words, adjacent, nested-looking, cut short, with spaces.
      "foo<tool_call>bar",
      "<tool_call><tool_result>",
      "<|im_start|><|im_end|>",
      "<tools></tools>",
      "<think></think>\n<tool_call>[]</tool_call><|im_end|>",
      "<|im_start|>system\nYou are helpful.<|im_end|>\n",
      "a<|im_start|",
      "<|im_start",
      "<tool_",
      "</tools>x",
      " <tools> ",
      "<tools> x",
      "x</think>y</think>",
      "<<tools>>",
      "<tool_call></tool_call></tool_call>",
      "<|im_end|><|im_end|><|im_end|>",
      "<tools",
      // 4-byte characters and other scripts: byte fallback.
      "\xF0\x9F\x98\x80",
      "I \xE2\x9D\xA4\xEF\xB8\x8F emoji \xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD",
      "family \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7",
      "\xF0\x9D\x84\x9E music",
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88",
      "\xE4\xB8\xAD\xE6\x96\x87 and English",
      "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",
      "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7",
      "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xD0\xBC\xD0\xB8\xD1\x80",
      "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87",
      "caf\xC3\xA9 na\xC3\xAFve",
      "e\xCC\x81",
      "\xE2\x80\x9Cquoted\xE2\x80\x9D \xE2\x80\x94 dash\xE2\x80\xA6",
      "\xEF\xBF\xBD",
      "\xF4\x8F\xBF\xBF",
      "\xEF\xBB\xBF"
      "BOM",
      // Whitespace.
      " ",
      "  ",
      "   ",
      "a  b",
      "a   b    c",
      " leading",
      "trailing ",
      "  both  ",
      "a\tb",
      "\t",
      "\n",
      "\n\n",
      "line1\nline2\n",
      "\r\n",
      "a \n b",
      " \t \n ",
      "tab\tafter space \t",
      // U+2581 itself.
      "\xE2\x96\x81",
      "\xE2\x96\x81\xE2\x96\x81",
      "a\xE2\x96\x81"
      "b",
      "\xE2\x96\x81 \xE2\x96\x81",
      // Invalid UTF-8 (each offending byte becomes U+FFFD, as in sentencepiece).
      "\xFF",
      "a\xFF"
      "b",
      "\xC3",
      "\xC3(",
      "\xE2\x82",
      "\xE2\x82(",
      "\xED\xA0\x80",
      "\xC0\xAF",
      "\xF4\x90\x80\x80",
      "\x80\x80",
      "abc\xF0\x9F\x98",
      "\xF8\x88\x80\x80\x80",
      "\xFE\xFF",
      // Control characters, NUL, digits, punctuation.
      "a\0b"s,
      "\0"s,
      "\x01\x02\x1F\x7F",
      "1234567890",
      "3.14159 + 2e-10",
      "Copyright (C) 2007 Free Software",
      "https://www.gnu.org/licenses/",
      "[]{}()<>!?@#$%^&*_=+|\\/~`'\";:",
      "This program is free software",
      "THE SOFTWARE IS PROVIDED \"AS IS\"",
      // Long runs.
      std::string(1000, 'a'),
      std::string(300, ' '),
      std::string(200, '\n'),
  };
  std::string ab;
  for (int i = 0; i < 500; ++i) ab += "ab";
  v.push_back(ab);
  std::string words;
  for (int i = 0; i < 200; ++i) words += "the ";
  v.push_back(words);
  return v;
}

}  // namespace

TEST_CASE("encode: empty input gives no ids") {
  for (const auto& m : kModels) CHECK(m.tok().encode("").empty());
}

TEST_CASE("encode: the ids of the float reference (models/reference-logits.json)") {
  // ids = [bos] + encode(prompt) in the reference; bos is not added by encode.
  const std::vector<int32_t> want = {716, 502, 341, 552, 478};
  CHECK(shipped_tokenizer().encode("This program is free software") == want);
}

TEST_CASE("encode: every corpus line agrees with sentencepiece") {
  const auto lines = read_lines(models_dir() / "corpus.txt");
  REQUIRE(lines.size() > 100);
  for (const auto& m : kModels) {
    CAPTURE(std::string(m.name));
    size_t bad = 0;
    for (const auto& line : lines) bad += agrees(m.tok(), m.oracle(), line) ? 0 : 1;
    CHECK(bad == 0);
  }
}

TEST_CASE("encode: the whole corpus as one string agrees with sentencepiece") {
  const std::string corpus = read_file(models_dir() / "corpus.txt");
  for (const auto& m : kModels) {
    CAPTURE(std::string(m.name));
    CHECK(agrees(m.tok(), m.oracle(), corpus));
  }
}

TEST_CASE("encode: hard cases agree with sentencepiece and round-trip") {
  for (const auto& m : kModels) {
    CAPTURE(std::string(m.name));
    for (const auto& text : hard_cases()) agrees(m.tok(), m.oracle(), text);
  }
}

TEST_CASE("encode: markers are single ids wherever they appear") {
  for (const auto& m : kModels) {
    CAPTURE(std::string(m.name));
    const Tokenizer& tok = m.tok();
    const auto ids = tok.encode("foo<tool_call>bar");
    const int32_t call = tok.find("<tool_call>");
    REQUIRE(call == 10);
    CHECK(std::count(ids.begin(), ids.end(), call) == 1);
    const auto adj = tok.encode("<tools></tools>");
    // The dummy prefix '▁' is a symbol of its own, then the two markers.
    REQUIRE(adj.size() == 3);
    CHECK(adj[0] == tok.find("\xE2\x96\x81"));
    CHECK(adj[1] == 8);
    CHECK(adj[2] == 9);
  }
}

TEST_CASE("encode: random strings agree with sentencepiece") {
  // Deterministic: fixed seeds. Three alphabets: corpus-like ASCII with markers
  // and spaces, arbitrary code points, arbitrary bytes (mostly invalid UTF-8).
  const std::vector<std::string> atoms = {"a",
                                          "e",
                                          "t",
                                          "h",
                                          " ",
                                          " ",
                                          "  ",
                                          "\n",
                                          "\t",
                                          ".",
                                          ",",
                                          "the",
                                          "ing",
                                          "<",
                                          ">",
                                          "/",
                                          "|",
                                          "_",
                                          "<tools>",
                                          "<tool_call>",
                                          "</tool_call>",
                                          "<|im_end|>",
                                          "<think>",
                                          "\xE2\x96\x81",
                                          "\xC3\xA9",
                                          "\xF0\x9F\x98\x80",
                                          "0",
                                          "9",
                                          "Li",
                                          "cense",
                                          "GNU",
                                          "\xE4\xB8\xAD"};
  for (const auto& m : kModels) {
    CAPTURE(std::string(m.name));
    std::mt19937 rng(1234);
    size_t bad = 0;
    for (int iter = 0; iter < 1500; ++iter) {
      std::string s;
      const int len = static_cast<int>(rng() % 40);
      const int kind = iter % 3;
      for (int k = 0; k < len; ++k) {
        if (kind == 0) {
          s += atoms[rng() % atoms.size()];
        } else if (kind == 1) {
          auto cp = static_cast<uint32_t>(rng() % 0x30000);
          if (cp >= 0xD800 && cp < 0xE000) cp = 'x';
          if (cp < 0x80) {
            s += static_cast<char>(cp);
          } else if (cp < 0x800) {
            s += static_cast<char>(0xC0 | (cp >> 6));
            s += static_cast<char>(0x80 | (cp & 0x3F));
          } else if (cp < 0x10000) {
            s += static_cast<char>(0xE0 | (cp >> 12));
            s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            s += static_cast<char>(0x80 | (cp & 0x3F));
          } else {
            s += static_cast<char>(0xF0 | (cp >> 18));
            s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            s += static_cast<char>(0x80 | (cp & 0x3F));
          }
        } else {
          s += static_cast<char>(rng() % 256);
        }
      }
      bad += agrees(m.tok(), m.oracle(), s) ? 0 : 1;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("encode: decode matches sentencepiece's decode on valid text without U+2581") {
  const auto lines = read_lines(models_dir() / "corpus.txt");
  for (const auto& m : kModels) {
    CAPTURE(std::string(m.name));
    std::vector<std::string> texts(lines.begin(), lines.begin() + 50);
    for (const char* s : {"caf\xC3\xA9 \xF0\x9F\x98\x80", " two  spaces ", "a\tb\nc", "foo<tool_call>bar"}) {
      texts.emplace_back(s);
    }
    for (const auto& t : texts) {
      const auto ids = m.tok().encode(t);
      std::string theirs;
      const std::vector<int> sids(ids.begin(), ids.end());
      REQUIRE(m.oracle().sp.Decode(sids, &theirs).ok());
      CHECK_MESSAGE(m.tok().decode(ids) == theirs, show(t));
    }
  }
}
