#pragma once
// safetensors files (the interchange format of float checkpoints): a strict
// reader over a memory map and a deterministic, atomic writer.
//
// Layout: u64 little-endian header length N, N bytes of a UTF-8 JSON object
// (optionally padded with spaces), then the data section. Each JSON entry
// but "__metadata__" (an object of string values) is a tensor
// {"dtype", "shape", "data_offsets": [begin, end]} with offsets relative to
// the data section. The reader checks, before any tensor byte is used: the
// header length lies inside the file (and below 100 MB), the JSON is one
// object with no duplicate names, every entry has exactly those three keys,
// a known dtype, non-negative integer dimensions, begin <= end, the byte size
// is exactly dtype size x product(shape) (no overflow), and the ranges, sorted
// by begin, tile the data section exactly: no overlap, no hole, nothing after
// the last tensor. Any failure is one cact::Error naming the file and the
// tensor or field. docs/INTERCHANGE.md.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cact/atomic_file.h"

namespace cact {
class MappedFile;
}

namespace cact::safetensors {

enum class DType : uint8_t { BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64 };

const char* dtype_name(DType d);  // "F32", "BF16", ...
size_t dtype_size(DType d);       // bytes per element
std::optional<DType> parse_dtype(std::string_view name);
// F32, F16 and BF16: the dtypes a checkpoint's weights may have.
bool is_weight_dtype(DType d);

struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<uint64_t> shape;
  std::span<const uint8_t> data;  // exactly dtype_size x elements() bytes
  uint64_t elements() const;
  std::string shape_string() const;  // "[768, 1024]"
};

class File {
 public:
  // Map and check a file. Errors are prefixed with the path.
  static File open(const std::filesystem::path& path);
  // Check a caller's buffer (which must outlive the File); `label` prefixes errors.
  static File from_bytes(std::span<const uint8_t> bytes, std::string label = "safetensors");

  const std::string& label() const { return label_; }
  const std::vector<TensorView>& tensors() const { return tensors_; }  // header order
  const TensorView* find(std::string_view name) const;                 // or nullptr
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Once a tensor is consumed: drops its pages of the mapped file
  // (MappedFile::drop_pages); nothing for from_bytes. Its data stays readable.
  void drop_pages(const TensorView& tensor) const;
  // use(first, values) for consecutive chunks of `chunk` elements of a tensor
  // (the last one shorter) as floats (to_float's rules), each chunk's pages
  // dropped once converted: a tensor of any size is read holding one chunk.
  void for_each_chunk(const TensorView& tensor, uint64_t chunk,
                      const std::function<void(uint64_t first, std::span<const float> values)>& use) const;
  // Elements per chunk the streaming readers use (4 MiB of floats).
  static constexpr uint64_t kChunkElements = uint64_t(1) << 20;
  // Every element as floats, read through for_each_chunk: the tensor's pages
  // are not left resident beside its floats.
  std::vector<float> read_floats(const TensorView& tensor) const;

 private:
  File() = default;
  void parse(std::span<const uint8_t> bytes);
  std::shared_ptr<MappedFile> file_;
  std::string label_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

// Every element as a float. Only for F32, F16 and BF16 (exact conversions);
// any other dtype throws naming the tensor.
std::vector<float> to_float(const TensorView& t);

// What the writer emits for one tensor.
struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<uint64_t> shape;
};

// The header bytes (length prefix, JSON padded with spaces to a multiple of 8)
// for tensors laid out contiguously in the given order. Throws on an empty or
// duplicate name or on "__metadata__" used as a tensor name.
std::vector<uint8_t> header_bytes(std::span<const TensorSpec> tensors,
                                  const std::map<std::string, std::string>& metadata);

// Writes a file through AtomicFile (refusing an output that is one of
// `inputs`). `produce(i, buffer)` fills tensor i's bytes; their size must be
// dtype x shape. Tensors are produced one at a time, in order.
void write(const std::filesystem::path& path, std::span<const TensorSpec> tensors,
           const std::map<std::string, std::string>& metadata,
           const std::function<void(size_t index, std::vector<uint8_t>& bytes)>& produce,
           std::span<const std::filesystem::path> inputs = {});
// The same bytes into an open AtomicFile, not committed: a multi-file output
// commits every file together (AtomicFile::commit_all).
void write_to(AtomicFile& file, std::span<const TensorSpec> tensors, const std::map<std::string, std::string>& metadata,
              const std::function<void(size_t index, std::vector<uint8_t>& bytes)>& produce);

// In-memory variant for tests: the whole file.
struct OwnedTensor {
  TensorSpec spec;
  std::vector<uint8_t> bytes;
};
std::vector<uint8_t> serialize(std::span<const OwnedTensor> tensors,
                               const std::map<std::string, std::string>& metadata = {});
// F32 helper: a tensor of floats.
OwnedTensor f32_tensor(std::string name, std::vector<uint64_t> shape, std::span<const float> values);

}  // namespace cact::safetensors
