// Checkpoint (safetensors + geometry JSON) -> .cact archive.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string_view>
#include <unordered_set>

#include "cact/atomic_file.h"
#include "cact/checkpoint.h"
#include "cact/error.h"
#include "cact/half.h"
#include "cact/model.h"
#include "cact/validate.h"
#include "cact/writer.h"
#include "interchange/built_check.h"

namespace cact {

namespace {

constexpr HeadKind kHeadKinds[] = {HeadKind::embedding, HeadKind::confidence, HeadKind::router};
constexpr const char* kManifest = "heads.manifest";
constexpr float kHalfMax = 65504.0f;

std::string spec_text(const TensorSpec& s) {
  Record r;
  r.ndim = s.ndim;
  r.shape = s.shape;
  return std::string(dtype_name(s.dtype)) + " " + shape_string(r);
}

std::string canon_shape_text(const TensorSpec& s) {
  Record r;
  r.ndim = s.ndim;
  r.shape = s.shape;
  return shape_string(r);
}

// "[3, 17]" for flat element i of a tensor of this shape.
std::string element_text(const std::vector<uint64_t>& shape, uint64_t i) {
  std::vector<uint64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 0) break;
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

std::string value_text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", double(v));
  return buf;
}

std::string join_problems(const std::string& who, const std::vector<std::string>& problems) {
  constexpr size_t kShown = 12;
  std::string m = who + ": " + std::to_string(problems.size()) + (problems.size() == 1 ? " problem: " : " problems: ");
  for (size_t i = 0; i < problems.size() && i < kShown; ++i) m += (i ? "; " : "") + problems[i];
  if (problems.size() > kShown) m += "; and " + std::to_string(problems.size() - kShown) + " more";
  return m;
}

const safetensors::TensorView& need(const safetensors::File& ckpt, const std::string& name, const std::string& why) {
  const auto* t = ckpt.find(name);
  if (!t) fail(ckpt.label() + ": missing tensor " + name + " (" + why + ")");
  return *t;
}

}  // namespace

TokenizerBlob tokenizer_from_archive(const std::filesystem::path& archive) {
  const Model m = Model::open(archive);
  const auto blob = m.tokenizer_blob();
  return {std::vector<uint8_t>(blob.begin(), blob.end()), archive.string()};
}

TokenizerBlob tokenizer_from_model(const TokenizerModel& model, std::string source) {
  return {serialize_tokenizer(model), std::move(source)};
}

WidthMap widths_from_checkpoint(const safetensors::File& ckpt) {
  const auto it = ckpt.metadata().find(kBitsMetadataKey);
  if (it == ckpt.metadata().end()) {
    fail(ckpt.label() + ": no \"" + std::string(kBitsMetadataKey) +
         "\" metadata (only checkpoints exported by cact-quant dequantize carry one)");
  }
  try {
    return WidthMap().with(it->second);
  } catch (const Error& e) {
    fail(ckpt.label() + ": metadata " + kBitsMetadataKey + ": " + e.what());
  }
}

std::optional<std::vector<float>> codebooks_from_checkpoint(const safetensors::File& ckpt) {
  const auto it = ckpt.metadata().find(kCodebooksMetadataKey);
  if (it == ckpt.metadata().end()) return std::nullopt;
  const std::string who = ckpt.label() + ": metadata " + kCodebooksMetadataKey;
  std::vector<float> values;
  std::string_view text = it->second;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string item(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    try {
      size_t used = 0;
      values.push_back(std::stof(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      fail(who + ": '" + item + "' is not a number");
    }
  }
  if (values.size() != codec::kStoredCodebookLen) {
    fail(who + ": " + std::to_string(values.size()) + " values, expected " + std::to_string(codec::kStoredCodebookLen));
  }
  if (const auto p = check_codebooks(values); !p.empty()) fail(who + ": " + p.front());
  return values;
}

Canon checkpoint_canon(const safetensors::File& ckpt, const Header& geometry) {
  std::vector<HeadKind> kinds;
  if (const auto* manifest = ckpt.find(kManifest)) {
    if (manifest->shape.size() != 1 || manifest->shape[0] == 0 || manifest->shape[0] > 16) {
      fail(ckpt.label() + ": tensor heads.manifest has shape " + manifest->shape_string() +
           ", expected [h] with 1 <= h <= 16");
    }
    if (!safetensors::is_weight_dtype(manifest->dtype)) {
      fail(ckpt.label() + ": tensor heads.manifest has dtype " + safetensors::dtype_name(manifest->dtype) +
           "; weights must be F32, F16 or BF16");
    }
    const std::vector<float> codes = safetensors::to_float(*manifest);
    for (size_t i = 0; i < codes.size(); ++i) {
      const float c = codes[i];
      if (c != 1.0f && c != 2.0f && c != 3.0f) {
        fail(ckpt.label() + ": tensor heads.manifest: element [" + std::to_string(i) + "] = " + value_text(c) +
             " is not a head code (1 embedding, 2 confidence, 3 router)");
      }
      const HeadKind k = HeadKind(uint32_t(c));
      if (std::find(kinds.begin(), kinds.end(), k) != kinds.end()) {
        fail(ckpt.label() + ": tensor heads.manifest lists the " + head_kind_name(k) +
             " head twice (their tensor names would collide)");
      }
      kinds.push_back(k);
    }
  } else {
    for (HeadKind k : kHeadKinds) {
      const std::string prefix = std::string(head_kind_name(k)) + "_head.";
      for (const auto& t : ckpt.tensors()) {
        if (t.name.starts_with(prefix)) {
          kinds.push_back(k);
          break;
        }
      }
    }
  }
  std::vector<Canon::HeadRequest> heads;
  for (HeadKind k : kinds) {
    const std::string prefix = std::string(head_kind_name(k)) + "_head.";
    const auto& gain = need(ckpt, prefix + "gain", "it sizes the " + std::string(head_kind_name(k)) + " head's k");
    const auto& query = need(ckpt, prefix + "query", "it sizes the " + std::string(head_kind_name(k)) + " head's q");
    if (gain.shape.size() != 2 || gain.shape[1] == 0 || gain.shape[1] > 4096) {
      fail(ckpt.label() + ": tensor " + gain.name + " has shape " + gain.shape_string() +
           ", expected [num_layers + 1, k] with 1 <= k <= 4096");
    }
    if (query.shape.size() != 2 || query.shape[0] == 0 || query.shape[0] > 4096) {
      fail(ckpt.label() + ": tensor " + query.name + " has shape " + query.shape_string() +
           ", expected [q, d_model] with 1 <= q <= 4096");
    }
    Canon::HeadRequest r{k, uint32_t(gain.shape[1]), uint32_t(query.shape[0]), 0};
    if (k == HeadKind::confidence)
      r.out = 1;
    else if (k == HeadKind::router)
      r.out = 3;
    else {
      const auto& proj = need(ckpt, prefix + "proj", "it sizes the embedding head's output");
      if (proj.shape.size() != 2 || proj.shape[0] == 0 || proj.shape[0] > (1u << 16)) {
        fail(ckpt.label() + ": tensor " + proj.name + " has shape " + proj.shape_string() +
             ", expected [out, q x d_model] with 1 <= out <= 65536");
      }
      r.out = uint32_t(proj.shape[0]);
    }
    heads.push_back(r);
  }
  const auto* w1a = ckpt.find("layer00.w1a");
  const bool untied = w1a && w1a->shape.size() == 3;
  return Canon::make(geometry, heads, untied);
}

std::vector<std::string> check_checkpoint(const safetensors::File& ckpt, const Canon& canon) {
  std::vector<std::string> problems;
  for (size_t i = 0; i + 1 < canon.size(); ++i) {  // the tokenizer (last) is not in a checkpoint
    const TensorSpec& s = canon[i];
    const auto* t = ckpt.find(s.name);
    if (!t && s.name == kManifest) continue;  // optional: generated from the heads present
    if (!t) {
      problems.push_back("missing tensor " + s.name + " (the geometry needs " + spec_text(s) + ")");
      continue;
    }
    bool same = t->shape.size() == s.ndim;
    for (size_t d = 0; same && d < s.ndim; ++d) same = t->shape[d] == s.shape[d];
    if (!same)
      problems.push_back("tensor " + s.name + " has shape " + t->shape_string() + ", the geometry needs " +
                         canon_shape_text(s));
    if (!safetensors::is_weight_dtype(t->dtype)) {
      problems.push_back("tensor " + s.name + " has dtype " + safetensors::dtype_name(t->dtype) +
                         "; weights must be F32, F16 or BF16");
    }
  }
  std::unordered_set<std::string_view> names;  // the canon's, but the tokenizer
  for (size_t i = 0; i + 1 < canon.size(); ++i) names.insert(canon[i].name);
  for (const auto& t : ckpt.tensors()) {
    if (names.count(t.name)) continue;
    if (t.name == "tokenizer")
      problems.push_back("unexpected tensor tokenizer (the tokenizer comes from --tokenizer)");
    else
      problems.push_back("unexpected tensor " + t.name + " (not in the canon of this geometry)");
  }
  return problems;
}

namespace {

// What is decided before any tensor is converted: every check that needs no
// value, the header, and each blob's size (ArchiveStream writes the directory
// first).
struct BuildPlan {
  Header header;
  std::optional<Canon> canon;
  std::vector<float> stored;  // the 28 codebook values
  std::vector<Record> records;
  std::vector<float> manifest_codes;  // for a heads.manifest the checkpoint lacks
  uint64_t total = 0;                 // weights to convert, for progress
};

BuildPlan plan_build(const safetensors::File& ckpt, const Header& geometry, const TokenizerBlob& tokenizer,
                     const BuildOptions& options, BuildResult& res) {
  res = BuildResult{};
  BuildPlan plan;
  // Geometry first (the canon is only defined for a sane one), then the canon,
  // the header and the checkpoint's names/shapes/dtypes.
  Header& header = plan.header;
  header = geometry;
  header.tag = kTagNeedle3;
  header.codebook_len = uint32_t(codec::kStoredCodebookLen);
  header.num_tensors = 1;  // any valid count: the geometry rules do not depend on it
  if (const auto p = check_header(header); !p.empty()) fail("geometry: " + p.front());
  const Canon& canon = plan.canon.emplace(checkpoint_canon(ckpt, geometry));
  header.num_tensors = uint32_t(canon.size());
  if (const auto p = check_header(header); !p.empty()) fail("geometry: " + p.front());
  const auto problems = check_checkpoint(ckpt, canon);
  if (!problems.empty()) fail(join_problems(ckpt.label(), problems));
  options.widths.check_keys(canon);
  res.heads_from_manifest = ckpt.find(kManifest) != nullptr;
  for (const auto& h : canon.heads()) res.heads.emplace_back(head_kind_name(h.kind));

  // Tokenizer.
  const TokenizerModel tok = [&] {
    try {
      return parse_tokenizer_blob(tokenizer.bytes);
    } catch (const Error& e) {
      fail("tokenizer " + tokenizer.source + ": " + e.what());
    }
  }();
  if (tok.pieces.size() > header.vocab) {
    fail("tokenizer " + tokenizer.source + " has " + std::to_string(tok.pieces.size()) +
         " pieces, more than the geometry's vocab " + std::to_string(header.vocab) +
         " (its ids would index past the embedding)");
  }
  res.tokenizer_pieces = uint32_t(tok.pieces.size());

  if (options.codebooks) {
    plan.stored = *options.codebooks;
    if (plan.stored.size() != codec::kStoredCodebookLen)
      fail("codebooks: " + std::to_string(plan.stored.size()) + " values, expected 28");
    if (const auto p = check_codebooks(plan.stored); !p.empty()) fail(p.front());
  } else {
    const auto standard = codec::standard_codebooks();
    plan.stored.assign(standard.begin(), standard.end());
  }
  for (const auto& h : canon.heads()) plan.manifest_codes.push_back(float(uint32_t(h.kind)));
  plan.records.resize(canon.size());
  for (size_t i = 0; i < canon.size(); ++i) {
    const TensorSpec& s = canon[i];
    Record& rec = plan.records[i];
    rec.dtype = s.dtype;
    rec.ndim = s.ndim;
    rec.shape = s.shape;
    if (s.dtype == Dtype::RAW) {
      rec.ndim = 0;
      rec.nbytes = tokenizer.bytes.size();
      continue;
    }
    if (s.dtype == Dtype::CQ) {
      rec.bits = options.widths.bits_for(s.name);
      rec.group = codec::kGroup;
    }
    rec.nbytes = implied_nbytes(rec);
    const auto* t = ckpt.find(s.name);
    plan.total += t ? t->elements() : s.shape[0];  // the generated manifest is [h]
  }
  return plan;
}

std::string not_finite_text(const std::string& who, const std::vector<uint64_t>& shape, uint64_t k, float v) {
  return who + ": element " + element_text(shape, k) + " is " + (std::isnan(v) ? "NaN" : "infinite") +
         " (weights must be finite)";
}

// An FP16 blob, converted chunk by chunk: from `values_read` when the tensor was
// already read whole (for the report), else from the mapped checkpoint. The
// first non-finite element is reported before the first overflow, as for a
// tensor checked whole.
std::vector<uint8_t> fp16_blob(const safetensors::File& ckpt, const safetensors::TensorView& t,
                               std::span<const float> values_read, const std::string& who,
                               const std::vector<uint64_t>& shape) {
  const uint64_t n = t.elements();
  std::vector<uint8_t> blob(n * 2);
  uint64_t not_finite = n, overflow = n;
  float not_finite_value = 0.0f, overflow_value = 0.0f;
  const auto convert = [&](uint64_t first, std::span<const float> values) {
    for (size_t k = 0; k < values.size(); ++k) {
      const uint16_t h = float_to_half(values[k]);
      if (!std::isfinite(values[k]) && not_finite == n) {
        not_finite = first + k;
        not_finite_value = values[k];
      } else if (std::isfinite(values[k]) && (h & 0x7C00u) == 0x7C00u && overflow == n) {
        overflow = first + k;
        overflow_value = values[k];
      }
      std::memcpy(blob.data() + 2 * (first + k), &h, 2);
    }
  };
  if (values_read.size() == n) {
    convert(0, values_read);
  } else {
    ckpt.for_each_chunk(t, safetensors::File::kChunkElements, convert);
  }
  if (not_finite < n) fail(not_finite_text(who, shape, not_finite, not_finite_value));
  if (overflow < n) {
    fail(who + ": element " + element_text(shape, overflow) + " = " + value_text(overflow_value) +
         " overflows FP16 (largest " + value_text(kHalfMax) + ")");
  }
  return blob;
}

// Converts every tensor in canon order into `out`, one at a time: only the
// current tensor's blob (and its floats, but for FP16) is held, and the pages
// of the mapped checkpoint are dropped behind each chunk.
void convert_tensors(const safetensors::File& ckpt, const TokenizerBlob& tokenizer, const BuildOptions& options,
                     const BuildPlan& plan, ArchiveStream& out, BuildResult& res) {
  const unsigned threads = resolve_threads(options.threads);
  const Canon& canon = *plan.canon;
  const safetensors::TensorView generated{
      kManifest,
      safetensors::DType::F32,
      {plan.manifest_codes.size()},
      {reinterpret_cast<const uint8_t*>(plan.manifest_codes.data()), plan.manifest_codes.size() * 4}};
  uint64_t done = 0;
  for (size_t i = 0; i < canon.size(); ++i) {
    const TensorSpec& s = canon[i];
    const Record& rec = plan.records[i];
    if (s.dtype == Dtype::RAW) {
      out.add(tokenizer.bytes);
      continue;
    }
    if (options.progress) options.progress({done, plan.total, s.name});
    // Only heads.manifest may be absent (check_checkpoint): its codes are the heads laid out.
    const safetensors::TensorView* found = ckpt.find(s.name);
    const safetensors::TensorView& view = found ? *found : generated;
    const uint64_t n = view.elements();
    const std::vector<uint64_t> shape(s.shape.begin(), s.shape.begin() + s.ndim);
    const std::string who = ckpt.label() + ": tensor " + s.name;
    // FP16 tensors are converted chunk by chunk (fp16_blob); the rest, and
    // any tensor the report measures, are read whole.
    std::vector<float> values;
    if (s.dtype != Dtype::FP16 || options.report) values = ckpt.read_floats(view);
    if (s.dtype != Dtype::FP16) {
      for (size_t k = 0; k < values.size(); ++k) {
        if (!std::isfinite(values[k])) fail(not_finite_text(who, shape, k, values[k]));
      }
    }
    TensorReport tr;
    tr.index = i;
    tr.name = s.name;
    tr.shape.assign(s.shape.begin(), s.shape.begin() + s.ndim);
    tr.weights = n;
    std::vector<uint8_t> blob;
    const size_t row_length = s.ndim == 2 ? s.shape[1] : n;  // of the report's error sums
    switch (s.dtype) {
      case Dtype::CQ: {
        const std::vector<float> cb = codec::codebook_for(rec.bits, plan.stored);
        QuantizeResult q;
        try {
          q = quantize_matrix_mt(values.data(), s.shape[0], s.shape[1], rec.bits, cb, threads);
        } catch (const Error& e) {
          fail(who + ": " + e.what());
        }
        res.groups += q.groups;
        res.snapped_groups += q.snapped;
        blob = std::move(q.blob);
        if (options.report) {
          tr.error = measure_cq_error(values, codec::view_matrix(blob, s.shape[0], s.shape[1], rec.bits), cb, threads);
        }
        break;
      }
      case Dtype::FP16: {
        blob = fp16_blob(ckpt, view, values, who, shape);
        if (options.report) {
          std::vector<float> stored(n);
          for (size_t k = 0; k < n; ++k) stored[k] = load_half(blob.data(), k);
          tr.error = measure_error(values, stored, row_length, threads);
        }
        break;
      }
      case Dtype::FP32: {
        if (s.name == "hada_p1" || s.name == "hada_p2") {
          std::vector<bool> seen(values.size(), false);
          for (size_t k = 0; k < values.size(); ++k) {
            const float v = values[k];
            if (v < 0.0f || v >= float(values.size()) || v != std::floor(v)) {
              fail(who + ": element [" + std::to_string(k) + "] = " + value_text(v) + " is not an index 0.." +
                   std::to_string(values.size() - 1) + " (a permutation)");
            }
            if (seen[size_t(v)]) fail(who + ": value " + value_text(v) + " appears twice (not a permutation)");
            seen[size_t(v)] = true;
          }
        }
        blob.resize(values.size() * 4);
        std::memcpy(blob.data(), values.data(), blob.size());
        if (options.report) tr.error = measure_error(values, values, row_length, threads);
        break;
      }
      case Dtype::RAW:
        break;
    }
    out.add(blob);
    tr.bytes = blob.size();
    tr.kind = kind_name(rec);
    if (options.report) {
      tr.measured = true;
      res.report.tensors.push_back(std::move(tr));
    }
    ++res.kinds[kind_name(rec)];
    done += n;
  }
  ++res.kinds["RAW"];
  out.finish();
  if (options.progress) options.progress({plan.total, plan.total, ""});
}

constexpr const char* kBuilt = "the built archive";

void finish_result(uint64_t file_bytes, const safetensors::File& ckpt, BuildPlan& plan, BuildResult& res) {
  res.canon = std::move(plan.canon);
  res.header = plan.header;
  res.file_bytes = file_bytes;
  res.report.file_bytes_after = file_bytes;
  res.report.reference = ckpt.label();
}

}  // namespace

std::vector<uint8_t> build_archive_bytes(const safetensors::File& ckpt, const Header& geometry,
                                         const TokenizerBlob& tokenizer, const BuildOptions& options,
                                         BuildResult* result) {
  BuildResult local;
  BuildResult& res = result ? *result : local;
  BuildPlan plan = plan_build(ckpt, geometry, tokenizer, options, res);
  std::vector<uint8_t> bytes;
  ArchiveStream stream([&](std::span<const uint8_t> b) { bytes.insert(bytes.end(), b.begin(), b.end()); }, plan.header,
                       plan.stored, plan.records);
  convert_tensors(ckpt, tokenizer, options, plan, stream, res);
  check_built(bytes, kBuilt);
  finish_result(bytes.size(), ckpt, plan, res);
  return bytes;
}

BuildResult build_archive(const safetensors::File& ckpt, const Header& geometry, const TokenizerBlob& tokenizer,
                          const std::filesystem::path& out, const BuildOptions& options,
                          std::span<const std::filesystem::path> inputs) {
  BuildResult res;
  BuildPlan plan = plan_build(ckpt, geometry, tokenizer, options, res);
  AtomicFile file(out, inputs);
  ArchiveStream stream([&](std::span<const uint8_t> b) { file.write(b); }, plan.header, plan.stored, plan.records);
  convert_tensors(ckpt, tokenizer, options, plan, stream, res);
  finish_checked(file, kBuilt);
  finish_result(stream.file_bytes(), ckpt, plan, res);
  file.commit();
  return res;
}

}  // namespace cact
