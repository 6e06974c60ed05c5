#pragma once
// cact-quant's library side (docs/QUANT.md): changing the CQ widths of an
// archive, and the error report of an archive against a float checkpoint.
//
// The canon fixes every tensor's dtype: the CQ tensors are exactly its
// matrices, everything else is FP16 (FP32 for hada_p1/p2). So the only thing a
// width map can change is the width of CQ tensors. A CQ tensor whose width
// changes is dequantised and quantised again at the new width; since its
// source is already quantised the two errors compound, so this needs an
// explicit opt-in (RequantizeOptions::allow_requantize, --requantize). Every
// other tensor, the header and the codebooks are copied byte for byte.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cact/checkpoint.h"
#include "cact/quantize.h"
#include "cact/safetensors.h"

namespace cact {

class Model;

struct RequantizePlan {
  std::vector<uint32_t> from_bits;  // per record: current CQ width, 0 for non-CQ
  std::vector<uint32_t> to_bits;    // per record: target CQ width, 0 for non-CQ
  size_t changes() const;
  // "layer00.q_proj CQ4->CQ2, ..." (at most `limit` entries, then "and N more").
  std::string describe_changes(const Model& model, size_t limit = 6) const;
};

// Resolves a width map against an archive. Syntax and keys as WidthMap (a key
// must name a CQ tensor of this archive; widths 1-4 or ternary). Unlike a
// checkpoint build there is no built-in map underneath: a CQ tensor that no
// key matches keeps its current width, unless the map has a "default".
RequantizePlan plan_requantize(const Model& model, std::string_view map);

struct RequantizeOptions {
  bool allow_requantize = false;  // required when any width changes
  unsigned threads = 0;
  ProgressFn progress;
};

// Writes the re-encoded archive (atomic, streamed one tensor at a time,
// checked before the rename) and returns the report: per tensor its kind
// before/after, bits per weight and, for re-encoded tensors, the error of the
// new values against the source's dequantised ones (unchanged tensors are
// marked copied). Throws, naming the tensors, when a width changes without
// allow_requantize.
Report requantize_archive(const Model& model, const RequantizePlan& plan, const std::filesystem::path& out,
                          const RequantizeOptions& options, std::span<const std::filesystem::path> inputs = {});

// Per-tensor report of an archive: kinds, bytes, bits per weight; with a
// reference checkpoint (canon names, matching shapes: check_checkpoint) also
// the error of every numeric tensor against it.
Report archive_report(const Model& model, const safetensors::File* reference, unsigned threads,
                      const ProgressFn& progress = {});

}  // namespace cact
