#pragma once
// The invariants every TokenizerModel must hold, whether it came from a RAW blob,
// from a SentencePiece import or was built in code. parse_tokenizer_blob,
// serialize_tokenizer and the Tokenizer constructor all run them.
#include <string>
#include <string_view>

#include "cact/tokenizer.h"

namespace cact::text {

const char* piece_type_name(PieceType t);

// Byte value of a "<0xNN>" surface (upper-case hex, as SentencePiece writes it), or -1.
int byte_piece_value(std::string_view surface);

}  // namespace cact::text
