// A synthetic byte-level BPE vocabulary for synthetic archives: real enough
// that encode/decode round trips any UTF-8 text.
#include <cstdio>

#include "cact/error.h"
#include "cact/synth.h"

namespace cact {

TokenizerModel synthetic_tokenizer(uint32_t pieces) {
  static const char* const kMarkers[] = {"<|im_start|>",  "<|im_end|>",    "<think>",     "</think>",
                                         "<tools>",       "</tools>",      "<tool_call>", "</tool_call>",
                                         "<tool_result>", "</tool_result>"};
  if (pieces < 270) fail("synthetic tokenizer needs at least 270 pieces (specials, markers, bytes)");
  TokenizerModel m;
  m.pieces.push_back({"<pad>", 0.0f, PieceType::Control});
  m.pieces.push_back({"</s>", 0.0f, PieceType::Control});
  m.pieces.push_back({"<s>", 0.0f, PieceType::Control});
  m.pieces.push_back({"<unk>", 0.0f, PieceType::Unknown});
  for (const char* marker : kMarkers) m.pieces.push_back({marker, 0.0f, PieceType::UserDefined});
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    m.pieces.push_back({buf, 0.0f, PieceType::Byte});
  }
  // Then "▁", single letters, and pairs, with scores falling in id order so
  // merges prefer earlier pieces. Single characters come first so every pair
  // is reachable by BPE.
  std::vector<std::string> extra{"\xE2\x96\x81"};
  const std::string letters = "etaoinshrdlcumwfgypbvkjxqz";
  for (char c : letters) extra.push_back(std::string(1, c));
  for (char c : letters) extra.push_back("\xE2\x96\x81" + std::string(1, c));
  for (char a : letters) {
    for (char b : letters) extra.push_back(std::string(1, a) + b);
  }
  for (char a : letters) {
    for (char b : letters) extra.push_back("\xE2\x96\x81" + std::string(1, a) + b);
  }
  for (char a : letters) {
    for (char b : letters) {
      for (char c : letters) extra.push_back(std::string(1, a) + b + c);
    }
  }
  float score = -1.0f;
  for (const std::string& piece : extra) {
    if (m.pieces.size() >= pieces) break;
    m.pieces.push_back({piece, score, PieceType::Normal});
    score -= 1.0f;
  }
  return m;
}

}  // namespace cact
