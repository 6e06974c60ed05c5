// Header and directory record encoding (little-endian host assumed: checked).
#include <bit>
#include <cstring>
#include <string>

#include "cact/error.h"
#include "cact/format.h"

namespace cact {

static_assert(std::endian::native == std::endian::little, "cact reads little-endian files in place");

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::FP16:
      return "FP16";
    case Dtype::FP32:
      return "FP32";
    case Dtype::CQ:
      return "CQ";
    case Dtype::RAW:
      return "RAW";
  }
  return "unknown";
}

bool known_dtype(uint8_t d) { return d >= 1 && d <= 4; }

bool Header::is_global(uint32_t layer) const {
  if (sliding_window == 0) return true;
  if (layer < 32) return (global_mask_lo >> layer) & 1u;
  if (layer < 64) return (global_mask_hi >> (layer - 32)) & 1u;
  return false;
}

void Header::set_global(uint32_t layer, bool global) {
  uint32_t& mask = layer < 32 ? global_mask_lo : global_mask_hi;
  const uint32_t bit = 1u << (layer % 32);
  mask = global ? (mask | bit) : (mask & ~bit);
}

uint32_t Header::max_engram_order() const {
  uint32_t m = 0;
  for (uint32_t i = 0; i < num_engram_orders && i < 4; ++i) m = std::max(m, engram_orders[i]);
  return m;
}

int Header::site_of_layer(uint32_t layer) const {
  for (uint32_t s = 0; s < num_engram_sites && s < 16; ++s) {
    if (engram_sites[s] == layer) return int(s);
  }
  return -1;
}

uint32_t Header::hada_rows() const {
  if (hada_n < 2) return 1;
  const uint32_t bit_length = uint32_t(std::bit_width(hada_n - 1));
  return 1u << (bit_length / 2);
}

const char* header_field_name(size_t index) {
  static const char* const kNames[kHeaderFields] = {"tag",
                                                    "num_tensors",
                                                    "codebook_len",
                                                    "kv_window",
                                                    "kv_bits",
                                                    "vocab",
                                                    "out_vocab",
                                                    "d_model",
                                                    "num_heads",
                                                    "num_kv_heads",
                                                    "num_layers",
                                                    "qk_head_dim",
                                                    "v_head_dim",
                                                    "max_seq_len",
                                                    "hada_n",
                                                    "mhc_lanes",
                                                    "sliding_window",
                                                    "global_mask_lo",
                                                    "global_mask_hi",
                                                    "qkv_conv_taps",
                                                    "engram_slots",
                                                    "engram_sub_dim",
                                                    "num_engram_tables",
                                                    "engram_conv_taps",
                                                    "engram_conv_dilation",
                                                    "engram_seed_heads",
                                                    "num_engram_orders",
                                                    "engram_orders[0]",
                                                    "engram_orders[1]",
                                                    "engram_orders[2]",
                                                    "engram_orders[3]",
                                                    "num_engram_sites",
                                                    "engram_sites[0]",
                                                    "engram_sites[1]",
                                                    "engram_sites[2]",
                                                    "engram_sites[3]",
                                                    "engram_sites[4]",
                                                    "engram_sites[5]",
                                                    "engram_sites[6]",
                                                    "engram_sites[7]",
                                                    "engram_sites[8]",
                                                    "engram_sites[9]",
                                                    "engram_sites[10]",
                                                    "engram_sites[11]",
                                                    "engram_sites[12]",
                                                    "engram_sites[13]",
                                                    "engram_sites[14]",
                                                    "engram_sites[15]",
                                                    "rope_theta"};
  return index < kHeaderFields ? kNames[index] : "?";
}

Header decode_header(std::span<const uint8_t> bytes) {
  if (bytes.size() < kHeaderBytes) {
    fail("header: file is " + std::to_string(bytes.size()) + " bytes, shorter than the 196-byte header");
  }
  Header h;
  std::memcpy(&h, bytes.data(), kHeaderBytes);
  return h;
}

void encode_header(const Header& h, uint8_t* out) { std::memcpy(out, &h, kHeaderBytes); }

uint64_t Record::elements() const {
  uint64_t n = 1;
  for (uint8_t i = 0; i < ndim && i < 4; ++i) n *= shape[i];
  return n;
}

Record decode_record(const uint8_t* bytes) {
  Record r;
  uint8_t dtype;
  std::memcpy(&dtype, bytes, 1);
  r.dtype = Dtype(dtype);
  std::memcpy(&r.ndim, bytes + 1, 1);
  std::memcpy(&r.pad, bytes + 2, 2);
  std::memcpy(r.shape.data(), bytes + 4, 16);
  std::memcpy(&r.offset, bytes + 20, 8);
  std::memcpy(&r.nbytes, bytes + 28, 8);
  std::memcpy(&r.group, bytes + 36, 4);
  std::memcpy(&r.bits, bytes + 40, 4);
  return r;
}

void encode_record(const Record& r, uint8_t* out) {
  const uint8_t dtype = uint8_t(r.dtype);
  std::memcpy(out, &dtype, 1);
  std::memcpy(out + 1, &r.ndim, 1);
  std::memcpy(out + 2, &r.pad, 2);
  std::memcpy(out + 4, r.shape.data(), 16);
  std::memcpy(out + 20, &r.offset, 8);
  std::memcpy(out + 28, &r.nbytes, 8);
  std::memcpy(out + 36, &r.group, 4);
  std::memcpy(out + 40, &r.bits, 4);
}

std::string kind_name(const Record& r) {
  if (r.dtype != Dtype::CQ) return known_dtype(uint8_t(r.dtype)) ? dtype_name(r.dtype) : "unknown";
  if (r.bits == 5) return "TERNARY";
  return "CQ" + std::to_string(r.bits);
}

std::string shape_string(const Record& r) {
  std::string s = "[";
  for (uint8_t i = 0; i < r.ndim && i < 4; ++i) {
    if (i) s += ", ";
    s += std::to_string(r.shape[i]);
  }
  return s + "]";
}

uint64_t align_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

}  // namespace cact
