// .cact archive -> checkpoint (F32 safetensors + geometry JSON).
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>

#include "cact/atomic_file.h"
#include "cact/checkpoint.h"
#include "cact/error.h"
#include "cact/geometry_json.h"
#include "cact/half.h"
#include "cact/model.h"

namespace cact {

std::string width_map_of(const Model& model) {
  const Canon& canon = model.canon();
  std::map<uint32_t, size_t> count;
  for (size_t i = 0; i < canon.size(); ++i) {
    if (model.record(i).dtype == Dtype::CQ) ++count[model.record(i).bits];
  }
  if (count.empty()) return "";
  uint32_t common = count.begin()->first;
  for (const auto& [bits, n] : count) {
    if (n > count[common]) common = bits;
  }
  auto width = [](uint32_t bits) { return bits == codec::kTernary ? std::string("ternary") : std::to_string(bits); };
  std::string map = "default=" + width(common);
  const WidthMap base = WidthMap().with(map);
  for (size_t i = 0; i < canon.size(); ++i) {
    const Record& r = model.record(i);
    if (r.dtype == Dtype::CQ && base.bits_for(canon[i].name) != r.bits)
      map += "," + canon[i].name + "=" + width(r.bits);
  }
  return map;
}

ExportResult export_checkpoint(const Model& model, const std::filesystem::path& out,
                               const std::filesystem::path& geometry_out, const ExportOptions& options,
                               std::span<const std::filesystem::path> inputs) {
  const unsigned threads = resolve_threads(options.threads);
  const Canon& canon = model.canon();
  std::vector<safetensors::TensorSpec> specs;
  uint64_t total = 0;
  for (size_t i = 0; i + 1 < canon.size(); ++i) {  // all but the tokenizer
    safetensors::TensorSpec t;
    t.name = canon[i].name;
    t.dtype = safetensors::DType::F32;
    t.shape.assign(canon[i].shape.begin(), canon[i].shape.begin() + canon[i].ndim);
    total += model.record(i).elements();
    specs.push_back(std::move(t));
  }
  if (!geometry_out.empty() && same_file(geometry_out, out)) {
    fail(geometry_out.string() + ": the geometry JSON and the checkpoint cannot be the same file");
  }
  ExportResult result;
  result.tensors = specs.size();
  result.bits = width_map_of(model);
  std::map<std::string, std::string> metadata;
  metadata[kBitsMetadataKey] = result.bits;
  if (!options.source.empty()) metadata["cact.source"] = options.source;
  std::string codebooks;
  for (float v : model.codebooks()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", double(v));
    if (!codebooks.empty()) codebooks += ',';
    codebooks += buf;
  }
  metadata[kCodebooksMetadataKey] = codebooks;
  // Both files or neither: the geometry is written first (small), both are
  // finished, then renamed (AtomicFile::commit_all).
  AtomicFile checkpoint(out, inputs);
  std::optional<AtomicFile> geometry;
  if (!geometry_out.empty()) {
    std::vector<std::filesystem::path> protect(inputs.begin(), inputs.end());
    protect.push_back(out);
    geometry.emplace(geometry_out, protect);
    const std::string text = geometry_to_json(model.header());
    geometry->write({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  }
  uint64_t done = 0;
  safetensors::write_to(checkpoint, specs, metadata, [&](size_t i, std::vector<uint8_t>& bytes) {
    if (options.progress) options.progress({done, total, canon[i].name});
    const Record& r = model.record(i);
    const auto blob = model.blob(i);
    bytes.resize(r.elements() * 4);
    switch (r.dtype) {
      case Dtype::CQ:
        dequantize_rows_into(model.matrix(i), model.codebook_for(r.bits), bytes.data(), threads);
        break;
      case Dtype::FP16:
        for (size_t k = 0; k < r.elements(); ++k) {
          const float f = load_half(blob.data(), k);
          std::memcpy(bytes.data() + 4 * k, &f, 4);
        }
        break;
      case Dtype::FP32:
        std::memcpy(bytes.data(), blob.data(), bytes.size());
        break;
      case Dtype::RAW:
        fail("internal: RAW tensor " + canon[i].name + " before the last position");
    }
    model.drop_pages(i);  // read once: the input stays resident one tensor at a time
    done += r.elements();
  });
  if (options.progress) options.progress({total, total, ""});
  std::vector<AtomicFile*> files = {&checkpoint};
  if (geometry) files.push_back(&*geometry);
  AtomicFile::commit_all(files);
  result.bytes = std::filesystem::file_size(out);
  return result;
}

}  // namespace cact
