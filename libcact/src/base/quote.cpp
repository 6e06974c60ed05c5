#include "base/quote.h"

#include <cstdint>

namespace cact {

std::string quote_bytes(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  constexpr size_t kMax = 40;
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (s.size() > kMax) out += "...";
  out += '"';
  return out;
}

}  // namespace cact
