// safetensors: strict reader over a memory map, deterministic atomic writer.
#include "cact/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "cact/atomic_file.h"
#include "cact/error.h"
#include "cact/half.h"
#include "cact/json_input.h"
#include "cact/mapped_file.h"

namespace cact::safetensors {

namespace {

struct DtypeInfo {
  DType dtype;
  const char* name;
  size_t size;
};
constexpr DtypeInfo kDtypes[] = {
    {DType::BOOL, "BOOL", 1},       {DType::U8, "U8", 1},   {DType::I8, "I8", 1},   {DType::F8_E5M2, "F8_E5M2", 1},
    {DType::F8_E4M3, "F8_E4M3", 1}, {DType::I16, "I16", 2}, {DType::U16, "U16", 2}, {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},       {DType::I32, "I32", 4}, {DType::U32, "U32", 4}, {DType::F32, "F32", 4},
    {DType::F64, "F64", 8},         {DType::I64, "I64", 8}, {DType::U64, "U64", 8},
};

// Far past any real header (the reference implementation uses the same bound);
// keeps a corrupt length from provoking a huge parse.
constexpr uint64_t kMaxHeader = uint64_t(100) << 20;
constexpr const char* kMetadataKey = "__metadata__";

// Bytes of a tensor, or nullopt on overflow.
std::optional<uint64_t> byte_size(DType d, std::span<const uint64_t> shape) {
  uint64_t n = dtype_size(d);
  for (uint64_t dim : shape) {
    if (__builtin_mul_overflow(n, dim, &n)) return std::nullopt;
  }
  return n;
}

std::string shape_text(std::span<const uint64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace

const char* dtype_name(DType d) {
  for (const auto& i : kDtypes) {
    if (i.dtype == d) return i.name;
  }
  return "?";
}

size_t dtype_size(DType d) {
  for (const auto& i : kDtypes) {
    if (i.dtype == d) return i.size;
  }
  return 0;
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& i : kDtypes) {
    if (name == i.name) return i.dtype;
  }
  return std::nullopt;
}

bool is_weight_dtype(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }

uint64_t TensorView::elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;  // checked at parse time
  return n;
}

std::string TensorView::shape_string() const { return shape_text(shape); }

File File::open(const std::filesystem::path& path) {
  File f;
  f.file_ = std::make_shared<MappedFile>(path);
  f.label_ = path.string();
  f.parse(f.file_->bytes());
  return f;
}

File File::from_bytes(std::span<const uint8_t> bytes, std::string label) {
  File f;
  f.label_ = std::move(label);
  f.parse(bytes);
  return f;
}

void File::drop_pages(const TensorView& tensor) const {
  if (file_) file_->drop_pages(tensor.data);
}

void File::for_each_chunk(const TensorView& tensor, uint64_t chunk,
                          const std::function<void(uint64_t first, std::span<const float> values)>& use) const {
  const uint64_t n = tensor.elements();
  const size_t size = dtype_size(tensor.dtype);
  chunk = std::max<uint64_t>(chunk, 1);
  TensorView part{tensor.name, tensor.dtype, {0}, {}};
  for (uint64_t first = 0; first < n; first += chunk) {
    part.shape[0] = std::min(chunk, n - first);
    part.data = tensor.data.subspan(first * size, part.shape[0] * size);
    const std::vector<float> values = to_float(part);
    drop_pages(part);
    use(first, values);
  }
  drop_pages(tensor);  // the pages chunks shared
}

std::vector<float> File::read_floats(const TensorView& tensor) const {
  std::vector<float> all;
  all.reserve(tensor.elements());
  for_each_chunk(tensor, kChunkElements,
                 [&](uint64_t, std::span<const float> v) { all.insert(all.end(), v.begin(), v.end()); });
  return all;
}

const TensorView* File::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

void File::parse(std::span<const uint8_t> bytes) {
  const std::string& who = label_;
  if (bytes.size() < 8) {
    fail(who + ": file is " + std::to_string(bytes.size()) + " bytes, shorter than the 8-byte header length");
  }
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  static_assert(std::endian::native == std::endian::little, "safetensors lengths are read in place");
  const uint64_t available = bytes.size() - 8;
  if (header_len == 0) fail(who + ": header length is 0");
  if (header_len > kMaxHeader) {
    fail(who + ": header length " + std::to_string(header_len) +
         " exceeds the 100 MB limit (corrupt or not a safetensors file)");
  }
  if (header_len > available) {
    fail(who + ": header length " + std::to_string(header_len) + " runs past the end of the file (" +
         std::to_string(bytes.size()) + " bytes; truncated?)");
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), size_t(header_len));
  if (text.front() != '{') fail(who + ": header does not start with '{'");
  const Json j = parse_json_limited(text, who + ": header", size_t(header_len));
  if (!j.is_object()) fail(who + ": header is not a JSON object");

  const std::span<const uint8_t> data = bytes.subspan(size_t(8 + header_len));
  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  for (const auto& [name, entry] : j.items()) {
    if (name == kMetadataKey) {
      if (!entry.is_object()) fail(who + ": __metadata__ is " + std::string(entry.type_name()) + ", not an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) fail(who + ": __metadata__ \"" + key + "\" is " + json_type(value) + ", not a string");
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string where = who + ": tensor \"" + name + "\"";
    if (name.empty()) fail(who + ": a tensor has an empty name");
    if (!entry.is_object()) fail(where + " is " + std::string(entry.type_name()) + ", not an object");
    for (const auto& [key, value] : entry.items()) {
      (void)value;
      if (key != "dtype" && key != "shape" && key != "data_offsets") fail(where + ": unexpected key \"" + key + "\"");
    }
    for (const char* key : {"dtype", "shape", "data_offsets"}) {
      if (!entry.contains(key)) fail(where + ": missing \"" + key + "\"");
    }
    TensorView t;
    t.name = name;
    const Json& dtype = entry["dtype"];
    if (!dtype.is_string()) fail(where + ": dtype is " + std::string(json_type(dtype)) + ", not a string");
    const auto parsed = parse_dtype(dtype.get<std::string>());
    if (!parsed) fail(where + ": dtype \"" + dtype.get<std::string>() + "\" is not a safetensors dtype");
    t.dtype = *parsed;
    const Json& shape = entry["shape"];
    if (!shape.is_array()) fail(where + ": shape is " + std::string(json_type(shape)) + ", not a list");
    for (size_t d = 0; d < shape.size(); ++d) {
      if (!shape[d].is_number_unsigned()) {
        fail(where + ": shape[" + std::to_string(d) + "] is " + json_type(shape[d]) + ", not a non-negative integer");
      }
      t.shape.push_back(shape[d].get<uint64_t>());
    }
    const Json& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      fail(where + ": data_offsets must be two non-negative integers [begin, end]");
    }
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end)
      fail(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] end before they begin");
    if (end > data.size()) {
      fail(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
           "] run past the data section (" + std::to_string(data.size()) + " bytes; truncated?)");
    }
    const auto size = byte_size(t.dtype, t.shape);
    if (!size) fail(where + ": shape " + shape_text(t.shape) + " overflows");
    if (*size != end - begin) {
      fail(where + ": " + std::string(dtype_name(t.dtype)) + " " + shape_text(t.shape) + " needs " +
           std::to_string(*size) + " bytes, data_offsets span " + std::to_string(end - begin));
    }
    t.data = data.subspan(size_t(begin), size_t(end - begin));
    ranges.push_back({begin, end, tensors_.size()});
    index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }
  // The ranges must tile the data section: sorted by begin, each starts where
  // the previous one ended (ties: zero-sized tensors first, they overlap nothing).
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t position = 0;
  const TensorView* previous = nullptr;
  for (const Range& r : ranges) {
    const TensorView& t = tensors_[r.index];
    if (r.begin < position) {
      fail(who + ": tensor \"" + t.name + "\" [" + std::to_string(r.begin) + ", " + std::to_string(r.end) +
           ") overlaps tensor \"" + previous->name + "\" (which ends at " + std::to_string(position) + ")");
    }
    if (r.begin > position) {
      fail(who + ": bytes [" + std::to_string(position) + ", " + std::to_string(r.begin) +
           ") of the data section before tensor \"" + t.name + "\" belong to no tensor");
    }
    position = r.end;
    previous = &t;
  }
  if (position != data.size()) {
    fail(who + ": " + std::to_string(data.size() - position) + " bytes after the last tensor (ends at " +
         std::to_string(position) + ") belong to no tensor");
  }
}

std::vector<float> to_float(const TensorView& t) {
  std::vector<float> out(size_t(t.elements()));
  const uint8_t* p = t.data.data();
  switch (t.dtype) {
    case DType::F32:
      if (!out.empty()) std::memcpy(out.data(), p, out.size() * 4);
      break;
    case DType::F16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = load_half(p, i);
      break;
    case DType::BF16:
      for (size_t i = 0; i < out.size(); ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = std::bit_cast<float>(uint32_t(h) << 16);
      }
      break;
    default:
      fail("tensor \"" + t.name + "\": dtype " + dtype_name(t.dtype) + " is not a float type (F32, F16 or BF16)");
  }
  return out;
}

std::vector<uint8_t> header_bytes(std::span<const TensorSpec> tensors,
                                  const std::map<std::string, std::string>& metadata) {
  Json j = Json::object();
  if (!metadata.empty()) {
    Json m = Json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    j[kMetadataKey] = m;
  }
  uint64_t offset = 0;
  for (const TensorSpec& t : tensors) {
    if (t.name.empty()) fail("safetensors writer: a tensor has an empty name");
    if (t.name == kMetadataKey) fail("safetensors writer: \"__metadata__\" cannot name a tensor");
    if (j.contains(t.name)) fail("safetensors writer: tensor \"" + t.name + "\" is given twice");
    const auto size = byte_size(t.dtype, t.shape);
    if (!size || dtype_size(t.dtype) == 0)
      fail("safetensors writer: tensor \"" + t.name + "\" has an invalid dtype or shape");
    Json e = Json::object();
    e["dtype"] = dtype_name(t.dtype);
    e["shape"] = t.shape;
    e["data_offsets"] = {offset, offset + *size};
    j[t.name] = e;
    offset += *size;
  }
  std::string text = j.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  std::vector<uint8_t> out(8 + text.size());
  const uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, text.data(), text.size());
  return out;
}

void write(const std::filesystem::path& path, std::span<const TensorSpec> tensors,
           const std::map<std::string, std::string>& metadata,
           const std::function<void(size_t, std::vector<uint8_t>&)>& produce,
           std::span<const std::filesystem::path> inputs) {
  AtomicFile file(path, inputs);
  write_to(file, tensors, metadata, produce);
  file.commit();
}

void write_to(AtomicFile& file, std::span<const TensorSpec> tensors, const std::map<std::string, std::string>& metadata,
              const std::function<void(size_t, std::vector<uint8_t>&)>& produce) {
  file.write(header_bytes(tensors, metadata));
  std::vector<uint8_t> buffer;
  for (size_t i = 0; i < tensors.size(); ++i) {
    buffer.clear();
    produce(i, buffer);
    const uint64_t expected = *byte_size(tensors[i].dtype, tensors[i].shape);
    if (buffer.size() != expected) {
      fail("safetensors writer: tensor \"" + tensors[i].name + "\" produced " + std::to_string(buffer.size()) +
           " bytes, expected " + std::to_string(expected));
    }
    file.write(buffer);
  }
}

std::vector<uint8_t> serialize(std::span<const OwnedTensor> tensors,
                               const std::map<std::string, std::string>& metadata) {
  std::vector<TensorSpec> specs;
  for (const auto& t : tensors) specs.push_back(t.spec);
  std::vector<uint8_t> out = header_bytes(specs, metadata);
  for (const auto& t : tensors) {
    if (t.bytes.size() != *byte_size(t.spec.dtype, t.spec.shape)) {
      fail("safetensors writer: tensor \"" + t.spec.name + "\" has " + std::to_string(t.bytes.size()) +
           " bytes, its shape needs " + std::to_string(*byte_size(t.spec.dtype, t.spec.shape)));
    }
    out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  }
  return out;
}

OwnedTensor f32_tensor(std::string name, std::vector<uint64_t> shape, std::span<const float> values) {
  OwnedTensor t;
  t.spec.name = std::move(name);
  t.spec.dtype = DType::F32;
  t.spec.shape = std::move(shape);
  t.bytes.resize(values.size() * 4);
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

}  // namespace cact::safetensors
