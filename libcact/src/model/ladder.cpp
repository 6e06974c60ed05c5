// Ladder order, rungs and explicit block sets (MODEL.md "Slicing a ladder rung").
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cact/error.h"
#include "cact/slice.h"

namespace cact {

std::vector<uint32_t> ladder_order(uint32_t num_layers) {
  if (num_layers == 0) fail("ladder: a model needs at least one layer");
  if (num_layers == 1) return {0};
  std::vector<uint32_t> order{0, num_layers - 1};
  std::vector<uint32_t> chosen{0, num_layers - 1};  // kept sorted
  order.reserve(num_layers);
  while (order.size() < num_layers) {
    // Largest gap between consecutive chosen layers; strict '>' keeps the leftmost on ties.
    size_t best = 0;
    for (size_t i = 1; i + 1 < chosen.size(); ++i) {
      if (chosen[i + 1] - chosen[i] > chosen[best + 1] - chosen[best]) best = i;
    }
    // While a layer is unchosen some gap is >= 2, so the midpoint is new.
    const uint32_t mid = (chosen[best] + chosen[best + 1]) / 2;
    order.push_back(mid);
    chosen.insert(chosen.begin() + std::ptrdiff_t(best) + 1, mid);
  }
  return order;
}

std::vector<uint32_t> rung(uint32_t num_layers, uint32_t depth) {
  if (depth < 2 || depth > num_layers) {
    fail("--layers " + std::to_string(depth) + ": must be between 2 and " + std::to_string(num_layers) +
         " (the model has " + std::to_string(num_layers) + " layers)");
  }
  std::vector<uint32_t> order = ladder_order(num_layers);
  order.resize(depth);
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<uint32_t> parse_block_list(const std::string& text) {
  std::vector<uint32_t> blocks;
  size_t at = 0;
  if (text.empty()) fail("--blocks: empty list (expected e.g. 0,4,9,19)");
  while (true) {
    const size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (item.empty() || item.size() > 9 ||
        !std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      fail("--blocks: '" + item + "' in '" + text + "' is not a block index (expected e.g. 0,4,9,19)");
    }
    blocks.push_back(uint32_t(std::stoul(item)));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return blocks;
}

std::vector<std::string> check_blocks(std::span<const uint32_t> blocks, uint32_t num_layers) {
  if (blocks.empty()) fail("--blocks: no block kept");
  for (uint32_t b : blocks) {
    if (b >= num_layers) {
      fail("--blocks: block " + std::to_string(b) + " is out of range (the model has " + std::to_string(num_layers) +
           " layers, 0.." + std::to_string(num_layers - 1) + ")");
    }
  }
  std::vector<uint32_t> sorted(blocks.begin(), blocks.end());
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i] == sorted[i - 1]) fail("--blocks: block " + std::to_string(sorted[i]) + " is listed twice");
  }
  for (size_t i = 1; i < blocks.size(); ++i) {
    if (blocks[i] < blocks[i - 1]) {
      fail("--blocks: block " + std::to_string(blocks[i]) + " follows " + std::to_string(blocks[i - 1]) +
           "; list blocks in ascending order (blocks cannot be reordered)");
    }
  }
  std::vector<std::string> warnings;
  if (blocks.front() != 0) warnings.push_back("block 0 (the first block) is dropped; the ladder always keeps it");
  if (num_layers > 1 && blocks.back() != num_layers - 1) {
    warnings.push_back("block " + std::to_string(num_layers - 1) +
                       " (the last block) is dropped; the ladder always keeps it");
  }
  return warnings;
}

}  // namespace cact
