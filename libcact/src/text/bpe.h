#pragma once
// BPE on one pending segment (TOKENIZER.md, Encode steps 4 and 5).
#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cact::text {

struct BpeTables {
  // Pieces BPE may produce: NORMAL and USER_DEFINED (SentencePiece's "normal" pieces).
  // The views point into strings owned by whoever owns the tables.
  std::unordered_map<std::string_view, int32_t> pieces;
  std::vector<float> scores;  // by id
  size_t max_piece_bytes = 0;
  std::array<int32_t, 256> byte_ids{};  // BYTE piece of each value, or -1
  bool byte_fallback = true;
  int32_t unk_id = 0;
};

// Scratch space reused across the segments of one encode call.
struct BpeScratch {
  struct Symbol {
    uint32_t begin = 0;  // byte offset in the segment
    uint32_t len = 0;    // bytes; 0 = merged into its left neighbour
    int32_t prev = -1, next = -1;
  };
  struct Candidate {
    float score;
    uint32_t left, right;  // symbol indices (left < right; left = leftmost position)
    uint32_t len;          // bytes of the merged piece when it was pushed
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
