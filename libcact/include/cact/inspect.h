#pragma once
// What cact-inspect reports, gathered from a checked Model: summary by kind,
// the per-tensor table (optionally with xxh64 digests of the blobs), and
// value statistics of one tensor. Rendering (text, JSON) is the app's job.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cact/model.h"

namespace cact {

struct KindTotal {
  size_t count = 0;
  uint64_t bytes = 0;
};

struct TokenizerSummary {
  size_t pieces = 0;
  uint32_t pad_id = 0, eos_id = 0, bos_id = 0, unk_id = 0;
  bool add_dummy_prefix = false, byte_fallback = false;
  size_t byte_pieces = 0;
  std::vector<std::string> user_defined;
};

struct ArchiveSummary {
  std::string generation;  // "Needle 3"
  uint64_t file_bytes = 0;
  size_t tensors = 0;
  std::map<std::string, KindTotal> by_kind;  // "CQ2", "CQ4", "FP16", "FP32", "RAW", ...
  std::vector<uint32_t> global_layers;
  std::vector<HeadLayout> heads;
  TokenizerSummary tokenizer;
};
ArchiveSummary summarize(const Model& model);

struct TensorRow {
  size_t index = 0;
  std::string name, kind, shape;
  uint64_t offset = 0, nbytes = 0;
  std::string xxh64;  // 16 hex digits, empty unless digests were asked for
};
// Touches blob bytes only when `digests` is set.
std::vector<TensorRow> tensor_rows(const Model& model, bool digests);
std::string xxh64_hex(std::span<const uint8_t> bytes);

struct TensorStats {
  size_t count = 0;
  double min = 0, max = 0, mean = 0, rms = 0;
  std::vector<float> values;  // dequantised for CQ
};
// Throws cact::Error naming the tensor if it has no numeric values (RAW) or the name is unknown.
TensorStats tensor_stats(const Model& model, const std::string& name);

}  // namespace cact
