#pragma once
// Ladder subnetworks (MODEL.md "Slicing a ladder rung"): the ladder order of
// the blocks, the rung of depth d, and the slicing of an archive down to a set
// of kept blocks. Slicing selects bytes and never requantises: every kept
// tensor, or kept row of a shared tensor, is copied exactly as it is stored.
// Rules, CLI and invariants: docs/SLICING.md.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "cact/format.h"
#include "cact/writer.h"

namespace cact {

class Model;

// The ladder order of an L-layer model: [0, L-1], then repeatedly the midpoint
// (integer) of the largest gap between consecutive chosen layers (ties: the
// leftmost), until all L are ordered. L = 1 gives [0]; L = 0 throws.
std::vector<uint32_t> ladder_order(uint32_t num_layers);

// The first `depth` layers of the ladder order, ascending. Throws cact::Error
// (naming --layers) unless 2 <= depth <= num_layers.
std::vector<uint32_t> rung(uint32_t num_layers, uint32_t depth);

// Parses an explicit block list "0,4,9,19" (decimal, comma separated).
// Throws cact::Error naming --blocks on anything else.
std::vector<uint32_t> parse_block_list(const std::string& text);

// Checks an explicit block set against a model depth: non-empty, strictly
// ascending, no duplicates, every block < num_layers (throws cact::Error
// naming --blocks). Returns warnings: dropping block 0 or block L-1.
std::vector<std::string> check_blocks(std::span<const uint32_t> blocks, uint32_t num_layers);

// How one output tensor is made from one source tensor: its record
// (offset/nbytes as they will be in the output) and the byte ranges of the
// source blob that are concatenated to form it.
struct SliceSegment {
  uint64_t offset = 0;  // into the source blob
  uint64_t length = 0;
};
struct SliceTensor {
  size_t source = 0;                   // source record index
  Record record;                       // the output record, offset and nbytes filled in
  std::vector<SliceSegment> segments;  // one segment covering the whole blob = verbatim
  bool verbatim() const;
};

struct SitePlan {
  uint32_t old_site = 0, old_layer = 0, new_site = 0, new_layer = 0;
};
struct LayerRemap {
  uint32_t old_layer = 0, new_layer = 0;
};

struct SlicePlan {
  uint32_t source_layers = 0;
  std::vector<uint32_t> blocks;           // kept source blocks, ascending; new index = position
  std::vector<SitePlan> sites;            // surviving engram sites, renumbered
  std::vector<uint32_t> dropped_sites;    // layers of the engram sites that do not survive
  std::vector<LayerRemap> global_layers;  // surviving global-attention layers
  std::vector<uint32_t> dropped_global;   // global layers that are not kept
  Header header;                          // the output header (num_tensors set)
  std::vector<SliceTensor> tensors;       // output directory order
  uint64_t output_bytes = 0;              // exact size of the output file
  uint64_t source_bytes = 0;              // size of the input file
  uint64_t copied_bytes = 0;              // blob bytes the output carries
  std::vector<std::string> warnings;      // for stderr (dropped first/last block)
};

// Plans the slice of `model` keeping `blocks` (checked with check_blocks);
// `context` > 0 caps max_seq_len at it and lowers sliding_window and
// kv_window to it when larger. Throws cact::Error on a bad request. The plan
// is checked against the output's canon and header rules before it is returned.
SlicePlan plan_slice(const Model& model, std::span<const uint32_t> blocks, uint32_t context = 0);

// The output's tensors: verbatim ones are views of the source model's bytes,
// row-selected ones live in `owned`. Valid while `model` (and this) live.
struct SlicedArchive {
  Header header;
  std::vector<float> codebooks;
  std::vector<TensorData> tensors;
  std::vector<std::vector<uint8_t>> owned;
};
SlicedArchive slice_archive(const Model& model, const SlicePlan& plan);

// The whole output file in memory, built in one pass from the plan: the same
// bytes archive_bytes() (writer.h) makes of slice_archive()'s tensors.
std::vector<uint8_t> slice_bytes(const Model& model, const SlicePlan& plan);

// Builds the output in memory, runs the full archive check on it, then writes
// it through AtomicFile (temp + rename; refuses a target that is one of
// `inputs`). On any failure nothing is left at `path`.
void write_slice(const std::filesystem::path& path, const Model& model, const SlicePlan& plan,
                 std::span<const std::filesystem::path> inputs = {});

}  // namespace cact
