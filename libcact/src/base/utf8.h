#pragma once
// UTF-8 classification shared by encode, decode and the stream decoder, so that
// all three agree byte for byte on what is valid (TOKENIZER.md).
//
// Valid means RFC 3629: shortest form, no surrogates, at most U+10FFFF. This is
// the same set SentencePiece's DecodeUTF8 accepts. Everything else is handled
// one byte at a time: each byte that does not start a valid sequence becomes its
// own U+FFFD. Encode does this because SentencePiece's normaliser does it
// (identical ids); decode does it so that decode(encode(x)) == repair(x).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cact {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
inline constexpr std::string_view kSpaceMark = "\xE2\x96\x81";    // U+2581 '▁'

enum class Utf8Kind : uint8_t {
  Complete,    // a valid sequence of `len` bytes starts here
  Invalid,     // the byte here starts no valid sequence, whatever follows
  Incomplete,  // the bytes here are a proper prefix of a valid sequence
};

struct Utf8Step {
  Utf8Kind kind;
  uint8_t len;  // bytes of the sequence (Complete) or 1 (Invalid) or available (Incomplete)
};

// Classify the sequence starting at s[0] (s non-empty).
Utf8Step classify_utf8(std::string_view s);

// Length of the valid sequence at s[0], or 0 if it is invalid or cut short.
inline size_t valid_utf8_len(std::string_view s) {
  const Utf8Step st = classify_utf8(s);
  return st.kind == Utf8Kind::Complete ? st.len : 0;
}

bool is_valid_utf8(std::string_view s);

}  // namespace cact
