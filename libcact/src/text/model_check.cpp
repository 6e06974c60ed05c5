#include "text/model_check.h"

#include <array>
#include <cmath>
#include <string>

#include "base/quote.h"
#include "base/utf8.h"
#include "cact/error.h"
#include "text/flat_index.h"

namespace cact {
namespace text {

const char* piece_type_name(PieceType t) {
  switch (t) {
    case PieceType::Normal:
      return "NORMAL";
    case PieceType::Unknown:
      return "UNKNOWN";
    case PieceType::Control:
      return "CONTROL";
    case PieceType::UserDefined:
      return "USER_DEFINED";
    case PieceType::Byte:
      return "BYTE";
  }
  return "?";
}

int byte_piece_value(std::string_view s) {
  if (s.size() != 6 || s.substr(0, 3) != "<0x" || s[5] != '>') return -1;
  int v = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = s[i];
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

}  // namespace text

void check_tokenizer_model(const TokenizerModel& model, std::string_view who_view) {
  using namespace text;
  const std::string who(who_view);
  const size_t n = model.pieces.size();
  if (n == 0) fail(who + ": n_pieces 0: a tokenizer needs at least one piece");

  struct Special {
    const char* name;
    uint32_t id;
    PieceType want;
  };
  const std::array<Special, 4> specials{{{"pad_id", model.pad_id, PieceType::Control},
                                         {"eos_id", model.eos_id, PieceType::Control},
                                         {"bos_id", model.bos_id, PieceType::Control},
                                         {"unk_id", model.unk_id, PieceType::Unknown}}};
  for (const auto& sp : specials) {
    if (sp.id >= n) {
      fail(who + ": " + sp.name + " " + std::to_string(sp.id) + " is not below n_pieces " + std::to_string(n));
    }
  }

  FlatIndex<std::string_view, SurfaceOf<Piece>> seen{{&model.pieces}};
  seen.reserve(n);
  std::array<bool, 256> have_byte{};
  for (size_t i = 0; i < n; ++i) {
    const Piece& p = model.pieces[i];
    // The piece's name for a message, formatted only when one is made.
    const auto at = [&] { return who + ": piece " + std::to_string(i); };
    if (static_cast<uint8_t>(p.type) > 4) {
      fail(at() + " has type " + std::to_string(static_cast<unsigned>(p.type)) + " (known: 0-4)");
    }
    if (p.surface.empty()) fail(at() + " has an empty surface");
    if (!is_valid_utf8(p.surface)) fail(at() + " surface " + quote_bytes(p.surface) + " is not valid UTF-8");
    if (!std::isfinite(p.score)) fail(at() + " score is not finite");
    if (p.type == PieceType::Byte) {
      const int v = byte_piece_value(p.surface);
      if (v < 0) fail(at() + " is BYTE but its surface " + quote_bytes(p.surface) + " is not <0xNN>");
      have_byte[static_cast<size_t>(v)] = true;
    }
    const auto [first, inserted] = seen.emplace(p.surface, static_cast<int32_t>(i));
    if (!inserted) {
      fail(at() + " surface " + quote_bytes(p.surface) + " repeats piece " + std::to_string(first));
    }
  }

  for (const auto& sp : specials) {
    const Piece& p = model.pieces[sp.id];
    if (p.type != sp.want) {
      fail(who + ": " + sp.name + " " + std::to_string(sp.id) + " names piece " + quote_bytes(p.surface) + " of type " +
           piece_type_name(p.type) + ", not " + piece_type_name(sp.want));
    }
  }

  if (model.byte_fallback) {
    for (size_t b = 0; b < 256; ++b) {
      if (!have_byte[b]) {
        static constexpr char kHex[] = "0123456789ABCDEF";
        std::string name = "<0x";
        name += kHex[b >> 4];
        name += kHex[b & 15];
        name += '>';
        fail(who + ": byte_fallback is set but there is no BYTE piece " + name);
      }
    }
  }
}

}  // namespace cact
