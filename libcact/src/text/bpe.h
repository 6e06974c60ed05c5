#pragma once
// BPE on one pending segment (TOKENIZER.md, Encode steps 4 and 5).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cact/tokenizer.h"
#include "text/flat_index.h"

namespace cact::text {

struct BpeTables {
  // Pieces BPE may produce: NORMAL and USER_DEFINED (SentencePiece's "normal" pieces).
  // Keys are `surfaces` given to build(), which must stay where they are.
  FlatIndex<std::string_view, SurfaceOf<std::string>> pieces;
  std::vector<float> scores;  // by id
  size_t max_piece_bytes = 0;
  std::array<int32_t, 256> byte_ids{};  // BYTE piece of each value, or -1
  bool byte_fallback = true;
  int32_t unk_id = 0;

  // Accelerators; each gives exactly the answer of a lookup in `pieces`.
  // (a, b) -> id of the piece surface(a) + surface(b), for pieces a, b.
  FlatIndex<uint64_t> pair_to_piece;
  std::array<int32_t, 128> ascii_piece{};  // single ASCII character -> piece id or -1
  // Adjacent code points (x, y) that occur together inside some piece. Where a
  // text has x y with (x, y) not in here, no merge can ever cross between them,
  // so BPE runs on the two sides independently (same result, smaller heaps).
  std::array<uint64_t, 128 * 128 / 64> ascii_join{};
  FlatIndex<uint64_t> other_join;  // keys only (value 0)

  void build(const TokenizerModel& model, const std::vector<std::string>& surfaces);
  bool may_join(uint32_t x, uint32_t y) const;
};

// Scratch space reused across the chunks of one encode call.
struct BpeScratch {
  struct Symbol {
    uint32_t begin = 0;  // byte offset in the chunk
    uint32_t len = 0;    // bytes; 0 = merged into its left neighbour
    int32_t prev = -1, next = -1;
    int32_t id = -1;  // piece id of the symbol's text, or -1 if it is not a piece
  };
  struct Candidate {
    float score;
    uint32_t left, right;  // symbol indices (left < right; left = leftmost position)
    uint32_t len;          // bytes of the merged piece when it was pushed
    int32_t id;            // the merged piece
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
};

// Segment `seg` (valid UTF-8, already normalised) and append its ids to `out`.
// Exactly the naive algorithm's result: repeatedly merge the adjacent pair whose
// concatenation is the highest-scoring piece, ties to the leftmost pair.
// O(n log n): a max-heap of candidate pairs; entries made stale by an earlier merge
// are recognised when popped (a side was merged away or has grown) and skipped.
void bpe_segment(std::string_view seg, const BpeTables& t, BpeScratch& scratch, std::vector<int32_t>& out);

// Bytes of the UTF-8 sequence whose (valid) lead byte is c.
inline uint32_t utf8_lead_len(unsigned char c) { return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

}  // namespace cact::text
