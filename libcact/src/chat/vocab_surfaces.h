#pragma once
// The vocabulary as the answer constraint sees it: the bytes each id puts into
// the answer (what the stream decoder prints: ▁ as a space, a BYTE piece as its
// byte, CONTROL/UNKNOWN as nothing), the chat marker ids, the marker guard, and
// the indexes that let a mask be filled without running every piece.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cact/tokenizer.h"

namespace cact::chat {

// The ten markers of the Needle chat format (TOKENIZER.md).
enum class Marker : uint8_t {
  im_start,
  im_end,
  think_open,
  think_close,
  tools_open,
  tools_close,
  call_open,
  call_close,
  result_open,
  result_close
};
inline constexpr size_t kMarkerCount = 10;
std::string_view marker_surface(Marker m);

// Free text must not spell a marker's surface with ordinary pieces: the answer
// is split at marker surfaces (parse_answer), so "<tool_call>" typed as text
// would open a call list the constraint never checked. The guard is an
// automaton over rendered bytes. Every marker starts with '<' and holds no
// other '<', so its states are the marker prefixes and a byte that extends none
// falls back to the root (or to "<" on a '<').
class MarkerGuard {
 public:
  static constexpr uint8_t kSpelled = 0xFF;  // a marker surface was completed
  MarkerGuard();
  uint8_t step(uint8_t state, uint8_t byte) const { return table_[size_t{state} * 256 + byte]; }
  // Runs `bytes` from `state`: the end state, or kSpelled.
  uint8_t run(uint8_t state, std::string_view bytes) const;
  // The bytes that extend the marker prefix of `state` (none for the root).
  std::span<const uint8_t> extensions(uint8_t state) const { return extensions_[state]; }

 private:
  std::vector<uint8_t> table_;
  std::vector<std::vector<uint8_t>> extensions_;
};

enum class PieceKind : uint8_t {
  none,  // pad, bos, unk and other CONTROL/UNKNOWN pieces: never written
  eos,
  marker,  // one of the ten chat markers
  text,    // contributes bytes
};

class VocabSurfaces {
 public:
  explicit VocabSurfaces(const Tokenizer& tok);

  size_t size() const { return kinds_.size(); }
  PieceKind kind(int32_t id) const { return kinds_[size_t(id)]; }
  std::string_view bytes(int32_t id) const {
    return std::string_view(bytes_).substr(offsets_[size_t(id)], offsets_[size_t(id) + 1] - offsets_[size_t(id)]);
  }
  Marker marker_of(int32_t id) const { return markers_of_[size_t(id)]; }  // kind(id) == marker
  int32_t marker_id(Marker m) const { return marker_ids_[size_t(m)]; }    // -1: not in the vocabulary
  int32_t eos_id() const { return eos_id_; }
  // Whether some text piece renders as exactly this one byte.
  bool has_byte(uint8_t byte) const { return single_byte_[byte] != 0; }
  const MarkerGuard& guard() const { return guard_; }

  // Text pieces whose first byte is `byte`.
  std::span<const int32_t> starting_with(uint8_t byte) const {
    return std::span(by_first_byte_)
        .subspan(first_byte_offsets_[byte], first_byte_offsets_[byte + 1u] - first_byte_offsets_[byte]);
  }
  // Per id: 1 for a text piece without '<' (it cannot start a marker surface).
  std::span<const uint8_t> text_without_lt() const { return text_without_lt_; }
  // Text pieces holding a '<'.
  std::span<const int32_t> holding_lt() const { return holding_lt_; }
  // Plain string text: pieces that may stand anywhere between a JSON string's
  // quotes (no quote, backslash or control byte; whole, valid UTF-8), with
  // between `min_cp` and `max_cp` code points.
  std::span<const int32_t> plain_string(uint32_t min_cp, uint32_t max_cp) const;
  // Text pieces that are not plain string text.
  std::span<const int32_t> not_plain_string() const { return not_plain_string_; }
  // Code points of a piece's bytes after the first when they are plain string
  // text, else 0 (a piece that opens a string or ends an escape, then text).
  uint32_t plain_tail_code_points(int32_t id) const { return plain_tail_cp_[size_t(id)]; }
  // Pieces that render as exactly "\n".
  std::span<const int32_t> newlines() const { return newlines_; }

  // The text pieces as a byte trie: a mask walks it with the grammar and drops
  // a whole subtree at its first refused byte. Children of a node are
  // contiguous, as are the pieces that end at it.
  struct TrieNode {
    uint32_t first_child = 0, child_count = 0;
    // Into the pieces sorted by bytes: [first_id, first_id + id_count) end
    // here, [first_id, subtree_end) pass through here.
    uint32_t first_id = 0, id_count = 0, subtree_end = 0;
    uint8_t byte = 0;  // the byte that leads here
  };
  const TrieNode& trie_root() const { return trie_.front(); }
  std::span<const TrieNode> children(const TrieNode& node) const {
    return std::span(trie_).subspan(node.first_child, node.child_count);
  }
  std::span<const int32_t> ending_at(const TrieNode& node) const {
    return std::span(sorted_ids_).subspan(node.first_id, node.id_count);
  }
  std::span<const int32_t> through(const TrieNode& node) const {
    return std::span(sorted_ids_).subspan(node.first_id, node.subtree_end - node.first_id);
  }

 private:
  std::vector<PieceKind> kinds_;
  std::vector<Marker> markers_of_;
  std::string bytes_;
  std::vector<uint32_t> offsets_;
  std::array<int32_t, kMarkerCount> marker_ids_{};
  int32_t eos_id_ = -1;
  std::array<uint8_t, 256> single_byte_{};
  MarkerGuard guard_;
  std::vector<int32_t> by_first_byte_;
  std::array<uint32_t, 257> first_byte_offsets_{};
  std::vector<uint8_t> text_without_lt_;
  std::vector<int32_t> holding_lt_;
  std::vector<int32_t> plain_by_cp_;        // plain string pieces, fewest code points first
  std::vector<uint32_t> plain_cp_offsets_;  // [c]: index of the first with >= c code points
  std::vector<int32_t> not_plain_string_;
  std::vector<uint32_t> plain_tail_cp_;
  std::vector<int32_t> newlines_;
  std::vector<TrieNode> trie_;
  std::vector<int32_t> sorted_ids_;  // text pieces in byte order

  void build_trie(size_t node, size_t lo, size_t hi, size_t depth);
};

}  // namespace cact::chat
