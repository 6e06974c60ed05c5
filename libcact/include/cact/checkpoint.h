#pragma once
// Float checkpoints <-> .cact archives (docs/INTERCHANGE.md).
//
// A checkpoint is a safetensors file holding every tensor of the positional
// canon but the tokenizer, under its canon name ("embedding",
// "layer03.q_proj", "mhc_phi_res", "engram2.tables", "heads.manifest",
// "confidence_head.probes", ...), with the canon's shape (matrices [out, in])
// and dtype F32, F16 or BF16; plus a geometry JSON (geometry_json.h).
//
// Heads are read off the checkpoint: a "heads.manifest" tensor (float codes
// 1 embedding, 2 confidence, 3 router) gives kinds and order; without one,
// the heads are the kinds whose "<kind>_head.*" tensors are present, in code
// order, and the manifest is generated. k, q (and the embedding head's out)
// come from the shapes of gain, query and proj. Block-untied Hadamard factors
// are told by layer00.w1a being 3-D.
//
// Dtypes follow the canon: CQ for its matrices (width from a WidthMap), FP32
// for hada_p1/p2, FP16 for everything else, the RAW tokenizer last.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cact/canon.h"
#include "cact/format.h"
#include "cact/quantize.h"
#include "cact/safetensors.h"
#include "cact/tokenizer.h"
#include "cact/width_map.h"

namespace cact {

class Model;

// Progress of long work: `done` of `total` units (weights), `what` = the
// tensor being worked on.
struct Progress {
  uint64_t done = 0, total = 0;
  std::string_view what;
};
using ProgressFn = std::function<void(const Progress&)>;

// A RAW tokenizer attachment and where it came from (for messages).
struct TokenizerBlob {
  std::vector<uint8_t> bytes;
  std::string source;
};
// The RAW blob of another archive, copied byte for byte (the archive is fully checked).
TokenizerBlob tokenizer_from_archive(const std::filesystem::path& archive);
// A parsed tokenizer (e.g. import_sentencepiece's) serialised.
TokenizerBlob tokenizer_from_model(const TokenizerModel& model, std::string source);

// Metadata keys of an exported checkpoint: the width map that rebuilds the
// archive's widths (width_map_of), and the archive's 28 stored codebook
// values (comma-separated, 9 significant digits: exact for floats). The
// values a checkpoint holds were dequantised with those codebooks, which may
// differ from the computed standard ones in the last bit (license-tiny's do);
// rebuilding with them reproduces the archive exactly.
inline constexpr const char* kBitsMetadataKey = "cact.bits";
inline constexpr const char* kCodebooksMetadataKey = "cact.codebooks";

// The canon a checkpoint implies with a geometry (heads and untied factors as
// described above). Throws naming the head tensor it could not size.
Canon checkpoint_canon(const safetensors::File& checkpoint, const Header& geometry);

// Every mismatch of a checkpoint with a canon: missing tensors, unexpected
// ones, wrong shapes, non-float dtypes; one message each, naming the tensor.
std::vector<std::string> check_checkpoint(const safetensors::File& checkpoint, const Canon& canon);

// The widths map stored by export_checkpoint in the checkpoint's metadata.
// Throws if there is none.
WidthMap widths_from_checkpoint(const safetensors::File& checkpoint);

// The codebooks stored by export_checkpoint, checked like an archive's
// (28 finite values, ascending per width); nullopt when there are none.
std::optional<std::vector<float>> codebooks_from_checkpoint(const safetensors::File& checkpoint);

struct BuildOptions {
  WidthMap widths;  // default: the shipped map (WidthMap::kShipped)
  // The 28 codebook values the archive stores (and quantises with); default:
  // codec::standard_codebooks().
  std::optional<std::vector<float>> codebooks;
  unsigned threads = 0;  // 0 = hardware concurrency
  bool report = false;   // measure every tensor's error against the checkpoint
  ProgressFn progress;
};

struct BuildResult {
  std::optional<Canon> canon;
  Header header;
  std::vector<std::string> heads;    // kinds, in manifest order
  bool heads_from_manifest = false;  // false: inferred from the tensor names
  uint32_t tokenizer_pieces = 0;
  std::map<std::string, size_t> kinds;      // "CQ2" -> count, "FP16" -> count, ...
  uint64_t groups = 0, snapped_groups = 0;  // CQ groups written / grid-snapped
  uint64_t file_bytes = 0;
  Report report;  // tensors filled when options.report
};

// Checkpoint + geometry + tokenizer -> archive bytes, checked with
// check_archive before they are returned. Throws cact::Error with every
// checkpoint problem (check_checkpoint) in one message, or the first value
// problem (NaN/Inf, FP16 overflow, a hada permutation that is none, a bad
// manifest code), naming the tensor and element.
std::vector<uint8_t> build_archive_bytes(const safetensors::File& checkpoint, const Header& geometry,
                                         const TokenizerBlob& tokenizer, const BuildOptions& options,
                                         BuildResult* result = nullptr);
// The same bytes, written to `out` as they are made, one tensor at a time,
// through AtomicFile (refusing an `inputs` path): the checkpoint's pages are
// dropped behind each chunk read, so memory follows the largest tensor, not
// the file. The finished temporary passes check_archive before the rename.
BuildResult build_archive(const safetensors::File& checkpoint, const Header& geometry, const TokenizerBlob& tokenizer,
                          const std::filesystem::path& out, const BuildOptions& options,
                          std::span<const std::filesystem::path> inputs = {});

// A width map that, given to build_archive as WidthMap().with(map), gives every
// CQ tensor of `model` its current width: "default=W" (W the most common
// width) plus full names of the tensors that differ from it.
std::string width_map_of(const Model& model);

struct ExportOptions {
  unsigned threads = 0;
  std::string source;  // recorded as metadata "cact.source" when not empty (e.g. the archive's file name)
  ProgressFn progress;
};
struct ExportResult {
  size_t tensors = 0;
  uint64_t bytes = 0;
  std::string bits;  // width_map_of
};
// Archive -> checkpoint: every tensor but the tokenizer as F32 under its canon
// name (CQ dequantised, FP16 widened exactly, FP32 as is); metadata
// "cact.bits" (width_map_of) and "cact.source" (options.source).
// The geometry JSON goes to `geometry_out` unless it is empty.
ExportResult export_checkpoint(const Model& model, const std::filesystem::path& out,
                               const std::filesystem::path& geometry_out, const ExportOptions& options,
                               std::span<const std::filesystem::path> inputs = {});

}  // namespace cact
