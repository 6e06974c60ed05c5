// Checkpoint (safetensors + geometry JSON) -> .cact archive.
#include <algorithm>
#include <cmath>
#include <cstring>
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

std::vector<uint8_t> build_archive_bytes(const safetensors::File& ckpt, const Header& geometry,
                                         const TokenizerBlob& tokenizer, const BuildOptions& options,
                                         BuildResult* result) {
  BuildResult local;
  BuildResult& res = result ? *result : local;
  res = BuildResult{};
  const unsigned threads = resolve_threads(options.threads);

  // Geometry first (the canon is only defined for a sane one), then the canon,
  // the header and the checkpoint's names/shapes/dtypes.
  Header header = geometry;
  header.tag = kTagNeedle3;
  header.codebook_len = uint32_t(codec::kStoredCodebookLen);
  header.num_tensors = 1;  // any valid count: the geometry rules do not depend on it
  if (const auto p = check_header(header); !p.empty()) fail("geometry: " + p.front());
  const Canon canon = checkpoint_canon(ckpt, geometry);
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

  std::vector<float> stored;
  if (options.codebooks) {
    stored = *options.codebooks;
    if (stored.size() != codec::kStoredCodebookLen)
      fail("codebooks: " + std::to_string(stored.size()) + " values, expected 28");
    if (const auto p = check_codebooks(stored); !p.empty()) fail(p.front());
  } else {
    const auto standard = codec::standard_codebooks();
    stored.assign(standard.begin(), standard.end());
  }
  uint64_t total = 0, done = 0;
  for (size_t i = 0; i + 1 < canon.size(); ++i) {
    const auto* t = ckpt.find(canon[i].name);
    total += t ? t->elements() : canon[i].shape[0];  // the generated manifest is [h]
  }

  std::vector<std::vector<uint8_t>> blobs(canon.size());
  std::vector<TensorData> tensors(canon.size());
  const std::vector<float> manifest_codes = [&] {
    std::vector<float> codes;
    for (const auto& h : canon.heads()) codes.push_back(float(uint32_t(h.kind)));
    return codes;
  }();
  for (size_t i = 0; i < canon.size(); ++i) {
    const TensorSpec& s = canon[i];
    Record& rec = tensors[i].record;
    rec.dtype = s.dtype;
    rec.ndim = s.ndim;
    rec.shape = s.shape;
    if (s.dtype == Dtype::RAW) {
      blobs[i] = tokenizer.bytes;
      rec.ndim = 0;
      tensors[i].bytes = blobs[i];
      continue;
    }
    if (options.progress) options.progress({done, total, s.name});
    const auto* view = ckpt.find(s.name);
    // Only heads.manifest may be absent (check_checkpoint): its codes are the heads laid out.
    const std::vector<float> values = view ? safetensors::to_float(*view) : manifest_codes;
    const std::vector<uint64_t> shape(s.shape.begin(), s.shape.begin() + s.ndim);
    const std::string who = ckpt.label() + ": tensor " + s.name;
    for (size_t k = 0; k < values.size(); ++k) {
      if (!std::isfinite(values[k])) {
        fail(who + ": element " + element_text(shape, k) + " is " + (std::isnan(values[k]) ? "NaN" : "infinite") +
             " (weights must be finite)");
      }
    }
    TensorReport tr;
    tr.index = i;
    tr.name = s.name;
    tr.shape.assign(s.shape.begin(), s.shape.begin() + s.ndim);
    tr.weights = values.size();
    std::vector<float> stored_values;  // what the archive will hold, for the report
    switch (s.dtype) {
      case Dtype::CQ: {
        const uint32_t bits = options.widths.bits_for(s.name);
        rec.bits = bits;
        rec.group = codec::kGroup;
        const std::vector<float> cb = codec::codebook_for(bits, stored);
        QuantizeResult q;
        try {
          q = quantize_matrix_mt(values.data(), s.shape[0], s.shape[1], bits, cb, threads);
        } catch (const Error& e) {
          fail(who + ": " + e.what());
        }
        res.groups += q.groups;
        res.snapped_groups += q.snapped;
        blobs[i] = std::move(q.blob);
        if (options.report) {
          stored_values = dequantize_matrix_mt(codec::view_matrix(blobs[i], s.shape[0], s.shape[1], bits), cb, threads);
        }
        break;
      }
      case Dtype::FP16: {
        blobs[i].resize(values.size() * 2);
        for (size_t k = 0; k < values.size(); ++k) {
          const uint16_t h = float_to_half(values[k]);
          if ((h & 0x7C00u) == 0x7C00u) {
            fail(who + ": element " + element_text(shape, k) + " = " + value_text(values[k]) +
                 " overflows FP16 (largest " + value_text(kHalfMax) + ")");
          }
          std::memcpy(blobs[i].data() + 2 * k, &h, 2);
        }
        if (options.report) {
          stored_values.resize(values.size());
          for (size_t k = 0; k < values.size(); ++k) stored_values[k] = load_half(blobs[i].data(), k);
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
        blobs[i].resize(values.size() * 4);
        std::memcpy(blobs[i].data(), values.data(), blobs[i].size());
        if (options.report) stored_values = values;
        break;
      }
      case Dtype::RAW:
        break;
    }
    tensors[i].bytes = blobs[i];
    tr.bytes = blobs[i].size();
    tr.kind = kind_name(rec);
    if (options.report) {
      tr.measured = true;
      tr.error = measure_error(values, stored_values, s.ndim == 2 ? s.shape[1] : values.size(), threads);
      res.report.tensors.push_back(std::move(tr));
    }
    ++res.kinds[kind_name(rec)];
    done += values.size();
  }
  ++res.kinds["RAW"];
  if (options.progress) options.progress({total, total, ""});

  std::vector<uint8_t> bytes = archive_bytes(header, stored, tensors);
  const auto issues = check_archive(bytes);
  if (!issues.empty()) fail("the built archive fails its own check: " + issues.front());
  res.canon.emplace(canon);
  res.header = header;
  res.file_bytes = bytes.size();
  res.report.file_bytes_after = bytes.size();
  res.report.reference = ckpt.label();
  return bytes;
}

BuildResult build_archive(const safetensors::File& ckpt, const Header& geometry, const TokenizerBlob& tokenizer,
                          const std::filesystem::path& out, const BuildOptions& options,
                          std::span<const std::filesystem::path> inputs) {
  BuildResult result;
  const std::vector<uint8_t> bytes = build_archive_bytes(ckpt, geometry, tokenizer, options, &result);
  AtomicFile file(out, inputs);
  file.write(bytes);
  file.commit();
  return result;
}

}  // namespace cact
