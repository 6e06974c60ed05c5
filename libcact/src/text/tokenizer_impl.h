#pragma once
// The lookup tables a Tokenizer builds once from its model (private to the
// text layer). Impl owns every string its views point into, so a Tokenizer can
// be copied and the copies share one Impl.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cact/tokenizer.h"
#include "text/bpe.h"

namespace cact {

// Byte trie over the USER_DEFINED surfaces: longest match at a position in
// O(length of the match), independent of how many markers there are.
class UserPieceTrie {
 public:
  void insert(std::string_view surface, int32_t id);
  // Longest USER_DEFINED piece that s starts with: its length in bytes (0 if none) and id.
  size_t longest_prefix(std::string_view s, int32_t* id) const;

 private:
  struct Node {
    int32_t id = -1;                                 // piece ending here, or -1
    std::vector<std::pair<uint8_t, uint32_t>> kids;  // (byte, node), sorted by byte
  };
  std::vector<Node> nodes_{1};
  std::array<bool, 256> first_{};  // bytes some piece starts with: cheap rejection
};

struct Tokenizer::Impl {
  explicit Impl(const TokenizerModel& model);
  Impl(const Impl&) = delete;  // the indexes below refer to `surfaces` where it is
  Impl& operator=(const Impl&) = delete;

  std::vector<std::string> surfaces;  // owned copies; the maps below view into them
  std::vector<std::string> bytes_of;  // what each id contributes to decode
  // CONTROL, UNKNOWN and BYTE pieces are never matched against text: only
  // NORMAL and USER_DEFINED pieces are in bpe.pieces.
  text::BpeTables bpe;
  text::FlatIndex<std::string_view, text::SurfaceOf<std::string>> by_surface{{&surfaces}};  // every piece, for find()
  UserPieceTrie user;
};

}  // namespace cact
