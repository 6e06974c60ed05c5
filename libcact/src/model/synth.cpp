// Seeded synthetic archives: every canon position filled with weights drawn at
// scales that keep a forward pass finite (unit-variance residual, projections
// scaled by 1/sqrt(fan-in), near-identity conv taps and mixing).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cact/codec.h"
#include "cact/error.h"
#include "cact/half.h"
#include "cact/parallel.h"
#include "cact/synth.h"
#include "cact/validate.h"
#include "cact/writer.h"
#include "model/portable_rng.h"

namespace cact {
namespace {

std::string_view slot_of(std::string_view name) {
  const size_t dot = name.find('.');
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

bool ends_with_any(std::string_view s, std::initializer_list<std::string_view> suffixes) {
  for (auto x : suffixes) {
    if (s == x) return true;
  }
  return false;
}

// Values of one tensor. Rows are the first shape axis.
std::vector<float> synth_values(const Header& h, const TensorSpec& spec, size_t index, uint64_t seed,
                                std::span<const Canon::HeadRequest> heads) {
  detail::PortableRng rng(seed * 0x9E3779B97F4A7C15ull + index * 0xD1B54A32D192ED03ull + 1);
  uint64_t count = 1;
  for (uint8_t d = 0; d < spec.ndim; ++d) count *= spec.shape[d];
  std::vector<float> v(count);
  const std::string_view name = spec.name;
  const std::string_view slot = slot_of(name);
  const uint32_t last = spec.ndim ? spec.shape[spec.ndim - 1] : 1;
  auto fill_normal = [&](double scale, double mean = 0.0) {
    for (auto& x : v) x = float(mean + scale * rng.normal());
  };
  auto fill_taps = [&]() {  // [taps, C]: tap 0 near one, later taps small
    for (uint64_t i = 0; i < count; ++i) v[i] = float(i < last ? 1.0 + 0.05 * rng.normal() : 0.1 * rng.normal());
  };
  if (spec.dtype == Dtype::CQ) {
    fill_normal(name.find("tables") != std::string_view::npos ? 1.0 : 1.0 / std::sqrt(double(spec.shape[1])));
  } else if (ends_with_any(slot, {"norm_in", "post_norm", "pre_hada", "q_norm", "k_norm", "final_norm"})) {
    fill_normal(0.02);
  } else if (ends_with_any(slot, {"q_taps", "k_taps", "v_taps", "taps"})) {
    fill_taps();
  } else if (slot == "attn_gate") {
    fill_normal(0.5);
  } else if (ends_with_any(slot, {"d1", "d2", "d3", "d4"})) {
    for (auto& x : v) x = float((rng.next() & 1 ? 1.0 : -1.0) * (1.0 + 0.05 * rng.normal()));
  } else if (ends_with_any(slot, {"w1a", "w1b", "w2a", "w2b", "w3a", "w3b"})) {
    fill_normal(1.0 / std::sqrt(double(last)));
  } else if (slot == "cond_v") {
    fill_normal(1.0 / std::sqrt(double(h.d_model)));
  } else if (ends_with_any(slot, {"cond_u", "b2", "row_bias"})) {
    fill_normal(0.1);
  } else if (ends_with_any(name, {"mhc_a_pre", "mhc_a_post", "mhc_a_res"})) {
    fill_normal(0.02, 0.1);
  } else if (ends_with_any(name, {"mhc_b_pre", "mhc_b_post"})) {
    fill_normal(0.5);
  } else if (name == "mhc_b_res") {  // [L, n, n]: diagonal-heavy, so mixing stays near identity
    const uint32_t n = h.mhc_lanes;
    for (uint64_t i = 0; i < count; ++i) v[i] = float(((i % (n * n)) / n == i % n ? 2.0 : 0.0) + 0.1 * rng.normal());
  } else if (name == "hada_p1" || name == "hada_p2") {  // a permutation of 0..N-1, as floats
    for (uint64_t i = 0; i < count; ++i) v[i] = float(i);
    for (uint64_t i = count - 1; i > 0; --i) std::swap(v[i], v[rng.below(i + 1)]);
  } else if (name == "heads.manifest") {
    for (size_t j = 0; j < heads.size(); ++j) v[j] = float(uint32_t(heads[j].kind));
  } else if (slot == "gain") {
    fill_normal(0.1, 1.0);
  } else if (slot == "bias") {
    fill_normal(0.0);
  } else if (slot == "calibration") {
    v = {1.0f, 0.0f, 0.0f};
  } else {
    fill_normal(0.02);
  }
  return v;
}

std::vector<uint8_t> encode_tensor(const TensorSpec& spec, const std::vector<float>& values, uint32_t bits,
                                   std::span<const float> stored_codebooks) {
  std::vector<uint8_t> out;
  switch (spec.dtype) {
    case Dtype::CQ:
      return codec::quantize_matrix(values.data(), spec.shape[0], spec.shape[1], bits,
                                    codec::codebook_for(bits, stored_codebooks), codec::kGroup);
    case Dtype::FP16:
      out.resize(values.size() * 2);
      for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t half = float_to_half(values[i]);
        std::memcpy(out.data() + 2 * i, &half, 2);
      }
      return out;
    case Dtype::FP32:
      out.resize(values.size() * 4);
      std::memcpy(out.data(), values.data(), out.size());
      return out;
    case Dtype::RAW:
      break;
  }
  return out;
}

struct SynthTensors {
  Header header;
  std::array<float, codec::kStoredCodebookLen> codebooks;
  std::vector<std::vector<uint8_t>> blobs;
  std::vector<TensorData> tensors;
};

SynthTensors build(const SynthSpec& spec) {
  SynthTensors out;
  out.header = spec.geometry;
  out.header.tag = kTagNeedle3;
  out.header.codebook_len = codec::kStoredCodebookLen;
  // Check the geometry before laying out its canon: a hostile field (say
  // num_layers 4e9) must be named, not turned into a huge allocation.
  out.header.num_tensors = 1;
  const auto problems = check_header(out.header);
  if (!problems.empty()) fail("synthetic geometry: " + problems.front());
  const Canon canon = Canon::make(out.header, spec.heads, spec.block_untied);
  out.header.num_tensors = uint32_t(canon.size());
  if (const auto counted = check_header(out.header); !counted.empty()) fail("synthetic geometry: " + counted.front());
  spec.widths.check_keys(canon);
  out.codebooks = codec::standard_codebooks();
  out.blobs.resize(canon.size());
  out.tensors.resize(canon.size());
  // Tensors are independent (each has its own seed), so build them on all
  // cores; the bytes do not depend on the thread count.
  parallel_for(canon.size() - 1, resolve_threads(0), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const TensorSpec& ts = canon[i];
      const uint32_t bits = ts.dtype == Dtype::CQ ? spec.widths.bits_for(ts.name) : 0;
      out.blobs[i] = encode_tensor(ts, synth_values(out.header, ts, i, spec.seed, spec.heads), bits, out.codebooks);
      Record r;
      r.dtype = ts.dtype;
      r.ndim = ts.ndim;
      r.shape = ts.shape;
      r.group = ts.dtype == Dtype::CQ ? codec::kGroup : 0;
      r.bits = bits;
      out.tensors[i].record = r;
    }
  });
  const TokenizerModel tok = spec.tokenizer ? *spec.tokenizer : synthetic_tokenizer(out.header.vocab);
  if (tok.pieces.size() > out.header.vocab) fail("synthetic archive: tokenizer has more pieces than vocab");
  out.blobs.back() = serialize_tokenizer(tok);
  Record raw;
  raw.dtype = Dtype::RAW;
  out.tensors.back().record = raw;
  for (size_t i = 0; i < canon.size(); ++i) out.tensors[i].bytes = out.blobs[i];
  return out;
}

}  // namespace

std::vector<uint8_t> synth_archive_bytes(const SynthSpec& spec) {
  const SynthTensors t = build(spec);
  return archive_bytes(t.header, t.codebooks, t.tensors);
}

void write_synth_archive(const std::filesystem::path& path, const SynthSpec& spec) {
  const SynthTensors t = build(spec);
  write_archive(path, t.header, t.codebooks, t.tensors);
}

}  // namespace cact
