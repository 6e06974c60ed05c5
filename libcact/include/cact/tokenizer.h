#pragma once
// The tokenizer of a .cact's RAW attachment (FORMAT.md, TOKENIZER.md):
// parse/serialise the blob, BPE encode (priority-queue, exact naive result),
// decode, and a streaming UTF-8-safe decoder.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cact {

enum class PieceType : uint8_t { Normal = 0, Unknown = 1, Control = 2, UserDefined = 3, Byte = 4 };

struct Piece {
  std::string surface;  // UTF-8; BYTE pieces are "<0xNN>"
  float score = 0.0f;
  PieceType type = PieceType::Normal;
};

struct TokenizerModel {
  std::vector<Piece> pieces;  // id order
  uint32_t pad_id = 0, eos_id = 1, bos_id = 2, unk_id = 3;
  bool add_dummy_prefix = true;
  bool byte_fallback = true;
};

// Parse a RAW blob strictly (every size checked; cact::Error names what lies).
TokenizerModel parse_tokenizer_blob(std::span<const uint8_t> blob);
std::vector<uint8_t> serialize_tokenizer(const TokenizerModel& model);
// The invariants every TokenizerModel holds (parsed, imported or built in code):
// throws cact::Error("<who>: <what is wrong>") on the first one broken.
void check_tokenizer_model(const TokenizerModel& model, std::string_view who);

class Tokenizer {
 public:
  explicit Tokenizer(TokenizerModel model);
  static Tokenizer from_blob(std::span<const uint8_t> blob) { return Tokenizer(parse_tokenizer_blob(blob)); }

  std::vector<int32_t> encode(std::string_view text) const;
  // Text that is data, not markup (TOKENIZER.md: user and tool text): no
  // USER_DEFINED piece is matched, so "<|im_end|>" typed by a user is plain
  // text. `at_start` applies the dummy prefix (the start of a whole text).
  std::vector<int32_t> encode_data(std::string_view text, bool at_start) const;
  std::string decode(std::span<const int32_t> ids) const;
  // The bytes one id contributes before UTF-8 repair and the ▁ -> space step.
  std::string_view piece_bytes(int32_t id) const;

  const TokenizerModel& model() const { return model_; }
  size_t size() const { return model_.pieces.size(); }
  // Id of a piece by exact surface, or -1.
  int32_t find(std::string_view surface) const;

 private:
  struct Impl;
  TokenizerModel model_;
  std::shared_ptr<const Impl> impl_;
};

// Streaming decode for generation: feed ids, get the text that is complete so
// far; an incomplete trailing UTF-8 sequence is held until the next id.
// The dummy-prefix rule (drop one leading space) belongs to the start of a
// whole text: a continuation of a prompt (or an answer after the chat
// template) keeps its first space, so prompt + stream == decode(all ids).
enum class StreamStart : uint8_t { text, continuation };
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, StreamStart start = StreamStart::text)
      : tok_(&tok), start_(start), at_start_(start == StreamStart::text) {}
  std::string push(int32_t id);
  std::string finish();  // flushes anything held (invalid bytes become U+FFFD); then a new stream starts

 private:
  const Tokenizer* tok_;
  StreamStart start_;
  std::string pending_;
  bool at_start_;
};

}  // namespace cact
