#pragma once
// Which CQ width each CQ tensor gets, from a map such as
// "default=2,embedding=4,mhc_phi=4,heads=4" (the shipped model's, the default).
// Keys, most specific first: a full positional name ("layer03.q_proj"), a slot
// name for every layer/site/head ("q_proj", "tables", "probes"), a group
// ("mhc_phi", "heads", "engram", "layers"), then "default". Values: 1, 2, 3, 4,
// or 5 / "ternary" / "t". See docs/WIDTHS.md.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cact/canon.h"

namespace cact {

class WidthMap {
 public:
  static constexpr const char* kShipped = "default=2,embedding=4,mhc_phi=4,heads=4";
  WidthMap();  // the shipped model's map
  // Throws cact::Error naming the bad entry.
  static WidthMap parse(std::string_view text);
  // `text` laid over this map: a tensor any key of `text` matches takes the
  // width of the most specific such key; any other keeps this map's width.
  // So "default=3" over the shipped map makes every CQ tensor 3 bits, as it
  // does over an archive in requantize (docs/WIDTHS.md).
  WidthMap with(std::string_view text) const;
  // Throws cact::Error if a key given by the user (not one of the built-in
  // defaults, which may name heads an archive lacks) names no CQ tensor.
  void check_keys(const Canon& canon) const;
  uint32_t bits_for(std::string_view tensor_name) const;
  // The width the newest layer that matches gives (its most specific key), if any.
  std::optional<uint32_t> find(std::string_view tensor_name) const;
  bool empty() const { return layers_.empty(); }
  // The layers, newest first, joined by " over ".
  std::string to_string() const;

 private:
  struct EmptyTag {};
  explicit WidthMap(EmptyTag) {}
  struct Layer {
    std::map<std::string, uint32_t> entries;
    bool built_in = false;  // the shipped map's keys may name heads an archive lacks
  };
  std::vector<Layer> layers_;  // oldest first
};

}  // namespace cact
