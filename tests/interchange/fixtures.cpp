#include "interchange/fixtures.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>

#include "cact/half.h"
#include "support/test_paths.h"

namespace cact::test {

Header tiny_geometry(bool taps) {
  Header h;
  h.kv_window = 0;
  h.kv_bits = 8;
  h.vocab = 1024;
  h.out_vocab = 0;
  h.d_model = 128;
  h.num_heads = 2;
  h.num_kv_heads = 1;
  h.num_layers = 2;
  h.qk_head_dim = 64;
  h.v_head_dim = 64;
  h.max_seq_len = 128;
  h.hada_n = 128;
  h.mhc_lanes = 2;
  h.sliding_window = 32;
  h.global_mask_lo = 1u << 1;
  h.qkv_conv_taps = taps ? 2 : 0;
  h.engram_slots = 8;
  h.engram_sub_dim = 128;
  h.num_engram_tables = 1;
  h.engram_conv_taps = 2;
  h.engram_conv_dilation = 2;
  h.num_engram_orders = 1;
  h.engram_orders = {2, 0, 0, 0};
  h.num_engram_sites = 1;
  h.engram_sites = {1};
  h.rope_theta = 10000.0f;
  return h;
}

std::vector<safetensors::OwnedTensor> random_checkpoint(const Canon& canon, uint64_t seed, bool with_manifest,
                                                        safetensors::DType dtype) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<safetensors::OwnedTensor> out;
  std::vector<float> codes;
  for (const auto& h : canon.heads()) codes.push_back(float(uint32_t(h.kind)));
  for (size_t i = 0; i + 1 < canon.size(); ++i) {
    const TensorSpec& s = canon[i];
    std::vector<uint64_t> shape(s.shape.begin(), s.shape.begin() + s.ndim);
    uint64_t n = 1;
    for (auto d : shape) n *= d;
    std::vector<float> v(n);
    if (s.name == "heads.manifest") {
      if (!with_manifest) continue;
      v = codes;
    } else if (s.name == "hada_p1" || s.name == "hada_p2") {
      for (size_t k = 0; k < n; ++k) v[k] = float(k);
      std::shuffle(v.begin(), v.end(), rng);
    } else {
      for (auto& x : v) x = normal(rng);
    }
    safetensors::OwnedTensor t = safetensors::f32_tensor(s.name, shape, v);
    if (dtype == safetensors::DType::F16) {
      t.spec.dtype = dtype;
      t.bytes.resize(n * 2);
      for (size_t k = 0; k < n; ++k) {
        const uint16_t h = float_to_half(v[k]);
        std::memcpy(t.bytes.data() + 2 * k, &h, 2);
      }
    } else if (dtype == safetensors::DType::BF16) {
      t.spec.dtype = dtype;
      t.bytes.resize(n * 2);
      for (size_t k = 0; k < n; ++k) {
        uint32_t bits;
        std::memcpy(&bits, &v[k], 4);
        const uint16_t b = uint16_t(bits >> 16);  // truncation: any BF16 value will do
        std::memcpy(t.bytes.data() + 2 * k, &b, 2);
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

void set_tensor(std::vector<safetensors::OwnedTensor>& ckpt, safetensors::OwnedTensor t) {
  for (auto& x : ckpt) {
    if (x.spec.name == t.spec.name) {
      x = std::move(t);
      return;
    }
  }
  ckpt.push_back(std::move(t));
}

void drop_tensor(std::vector<safetensors::OwnedTensor>& ckpt, const std::string& name) {
  std::erase_if(ckpt, [&](const auto& t) { return t.spec.name == name; });
}

std::vector<float> floats_of(const safetensors::OwnedTensor& t) {
  std::vector<float> v(t.bytes.size() / 4);
  std::memcpy(v.data(), t.bytes.data(), v.size() * 4);
  return v;
}

void write_bytes(const std::filesystem::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

std::vector<uint8_t> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::filesystem::path license_tiny() { return models_dir() / "license-tiny.cact"; }
std::filesystem::path tok_model() { return models_dir() / "tok.model"; }
std::filesystem::path golden_model() { return golden_dir() / "tokenizer" / "golden.model"; }

}  // namespace cact::test
