#include "base/utf8.h"

namespace cact {
namespace {
bool is_trail(uint8_t b) { return (b & 0xC0u) == 0x80u; }
}  // namespace

Utf8Step classify_utf8(std::string_view s) {
  const auto b0 = static_cast<uint8_t>(s[0]);
  if (b0 < 0x80u) return {Utf8Kind::Complete, 1};
  size_t need = 0;
  // The allowed range of the second byte narrows for E0, ED, F0 and F4: that is
  // what rules out overlong forms, surrogates and code points past U+10FFFF.
  uint8_t lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2u && b0 <= 0xDFu) {
    need = 2;
  } else if (b0 >= 0xE0u && b0 <= 0xEFu) {
    need = 3;
    if (b0 == 0xE0u) lo = 0xA0;
    if (b0 == 0xEDu) hi = 0x9F;
  } else if (b0 >= 0xF0u && b0 <= 0xF4u) {
    need = 4;
    if (b0 == 0xF0u) lo = 0x90;
    if (b0 == 0xF4u) hi = 0x8F;
  } else {
    return {Utf8Kind::Invalid, 1};  // 80-BF (stray trail), C0, C1, F5-FF
  }
  const size_t avail = s.size() < need ? s.size() : need;
  for (size_t i = 1; i < avail; ++i) {
    const auto b = static_cast<uint8_t>(s[i]);
    const bool ok = i == 1 ? (b >= lo && b <= hi) : is_trail(b);
    if (!ok) return {Utf8Kind::Invalid, 1};
  }
  if (avail < need) return {Utf8Kind::Incomplete, static_cast<uint8_t>(avail)};
  return {Utf8Kind::Complete, static_cast<uint8_t>(need)};
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = valid_utf8_len(s.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace cact
