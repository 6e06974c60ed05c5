// The RAW tokenizer attachment (FORMAT.md "RAW tokenizer attachment"):
// a 24-byte header, then n_pieces packed records. Little-endian throughout.
#include <bit>
#include <cstring>
#include <limits>
#include <string>

#include "cact/error.h"
#include "cact/tokenizer.h"
#include "text/model_check.h"

namespace cact {
namespace {

constexpr size_t kHeaderBytes = 24;
constexpr size_t kRecordFixedBytes = 7;  // f32 score, u8 type, u16 surface_len
constexpr const char* kWho = "tokenizer blob";

uint16_t get_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t get_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
void put_u16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v));
  out.push_back(static_cast<uint8_t>(v >> 8));
}
void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 0; s < 32; s += 8) out.push_back(static_cast<uint8_t>(v >> s));
}

std::string blob_size(size_t n) { return " (" + std::to_string(n) + " bytes)"; }

}  // namespace

TokenizerModel parse_tokenizer_blob(std::span<const uint8_t> blob) {
  const std::string who = kWho;
  const size_t size = blob.size();
  if (size < kHeaderBytes) {
    fail(who + ": " + std::to_string(size) + " bytes is shorter than the 24-byte header");
  }
  const uint8_t* b = blob.data();
  const uint32_t n_pieces = get_u32(b);
  TokenizerModel m;
  m.pad_id = get_u32(b + 4);
  m.eos_id = get_u32(b + 8);
  m.bos_id = get_u32(b + 12);
  m.unk_id = get_u32(b + 16);
  const uint8_t dummy = b[20], fallback = b[21];
  const uint16_t pad = get_u16(b + 22);

  if (n_pieces == 0) fail(who + ": n_pieces 0: a tokenizer needs at least one piece");
  // Every record is at least 7 bytes: refuse a count the blob cannot hold before allocating.
  const uint64_t min_bytes = kHeaderBytes + uint64_t{n_pieces} * kRecordFixedBytes;
  if (min_bytes > size) {
    fail(who + ": n_pieces " + std::to_string(n_pieces) + " needs at least " + std::to_string(min_bytes) +
         " bytes but the blob has " + std::to_string(size));
  }
  if (dummy > 1) fail(who + ": add_dummy_prefix is " + std::to_string(dummy) + ", not 0 or 1");
  if (fallback > 1) fail(who + ": byte_fallback is " + std::to_string(fallback) + ", not 0 or 1");
  if (pad != 0) fail(who + ": header pad is " + std::to_string(pad) + ", not 0");
  m.add_dummy_prefix = dummy != 0;
  m.byte_fallback = fallback != 0;

  m.pieces.resize(n_pieces);
  size_t pos = kHeaderBytes;
  for (uint32_t i = 0; i < n_pieces; ++i) {
    // The piece's name for a message, formatted only when one is made.
    const auto at = [&] { return who + ": piece " + std::to_string(i); };
    if (size - pos < kRecordFixedBytes) {
      fail(at() + " record at offset " + std::to_string(pos) + " runs past the end of the blob" + blob_size(size));
    }
    Piece& p = m.pieces[i];
    p.score = std::bit_cast<float>(get_u32(b + pos));
    const uint8_t type = b[pos + 4];
    const uint16_t len = get_u16(b + pos + 5);
    if (type > 4) fail(at() + " has type " + std::to_string(type) + " (known: 0-4)");
    p.type = static_cast<PieceType>(type);
    pos += kRecordFixedBytes;
    if (size - pos < len) {
      fail(at() + " surface_len " + std::to_string(len) + " runs past the end of the blob" + blob_size(size));
    }
    p.surface.assign(reinterpret_cast<const char*>(b + pos), len);
    pos += len;
  }
  if (pos != size) {
    fail(who + ": " + std::to_string(size - pos) + " trailing bytes after piece " + std::to_string(n_pieces - 1) +
         blob_size(size));
  }
  check_tokenizer_model(m, who);
  return m;
}

std::vector<uint8_t> serialize_tokenizer(const TokenizerModel& model) {
  const std::string who = "serialize_tokenizer";
  check_tokenizer_model(model, who);
  if (model.pieces.size() > std::numeric_limits<uint32_t>::max()) fail(who + ": too many pieces for a u32 count");
  size_t total = kHeaderBytes;
  for (size_t i = 0; i < model.pieces.size(); ++i) {
    const size_t len = model.pieces[i].surface.size();
    if (len > std::numeric_limits<uint16_t>::max()) {
      fail(who + ": piece " + std::to_string(i) + " surface is " + std::to_string(len) +
           " bytes, more than a u16 surface_len holds");
    }
    total += kRecordFixedBytes + len;
  }
  std::vector<uint8_t> out;
  out.reserve(total);
  put_u32(out, static_cast<uint32_t>(model.pieces.size()));
  put_u32(out, model.pad_id);
  put_u32(out, model.eos_id);
  put_u32(out, model.bos_id);
  put_u32(out, model.unk_id);
  out.push_back(model.add_dummy_prefix ? 1 : 0);
  out.push_back(model.byte_fallback ? 1 : 0);
  put_u16(out, 0);
  for (const Piece& p : model.pieces) {
    put_u32(out, std::bit_cast<uint32_t>(p.score));
    out.push_back(static_cast<uint8_t>(p.type));
    put_u16(out, static_cast<uint16_t>(p.surface.size()));
    out.insert(out.end(), p.surface.begin(), p.surface.end());
  }
  return out;
}

}  // namespace cact
