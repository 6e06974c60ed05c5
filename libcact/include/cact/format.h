#pragma once
// The .cact container's fixed layouts: header, directory record, tags
// (FORMAT.md). Encoding/decoding only; checks live in validate.h.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cact {

inline constexpr uint32_t kTagNeedle3 = 0x05E12A84;
inline constexpr uint32_t kTagNeedle2 = 0x05E12A83;
inline constexpr size_t kHeaderBytes = 196;
inline constexpr size_t kNeedle2HeaderBytes = 120;
inline constexpr size_t kRecordBytes = 44;
inline constexpr uint64_t kBlobAlign = 64;
inline constexpr size_t kHeaderFields = 49;  // 48 x u32, then f32 rope_theta

enum class Dtype : uint8_t { FP16 = 1, FP32 = 2, CQ = 3, RAW = 4 };
const char* dtype_name(Dtype d);
bool known_dtype(uint8_t d);

// The header, field for field, in file order (index = byte offset / 4).
struct Header {
  uint32_t tag = kTagNeedle3;
  uint32_t num_tensors = 0;
  uint32_t codebook_len = 28;
  uint32_t kv_window = 0;
  uint32_t kv_bits = 8;
  uint32_t vocab = 0;
  uint32_t out_vocab = 0;
  uint32_t d_model = 0;
  uint32_t num_heads = 0;
  uint32_t num_kv_heads = 0;
  uint32_t num_layers = 0;
  uint32_t qk_head_dim = 0;
  uint32_t v_head_dim = 0;
  uint32_t max_seq_len = 0;
  uint32_t hada_n = 0;
  uint32_t mhc_lanes = 0;
  uint32_t sliding_window = 0;
  uint32_t global_mask_lo = 0;
  uint32_t global_mask_hi = 0;
  uint32_t qkv_conv_taps = 0;
  uint32_t engram_slots = 0;
  uint32_t engram_sub_dim = 0;
  uint32_t num_engram_tables = 0;
  uint32_t engram_conv_taps = 0;
  uint32_t engram_conv_dilation = 0;
  uint32_t engram_seed_heads = 0;
  uint32_t num_engram_orders = 0;
  std::array<uint32_t, 4> engram_orders{};
  uint32_t num_engram_sites = 0;
  std::array<uint32_t, 16> engram_sites{};
  float rope_theta = 10000.0f;

  // Derived quantities (valid only on a header that passed check_header).
  bool is_global(uint32_t layer) const;
  void set_global(uint32_t layer, bool global);
  uint32_t engram_heads() const { return num_engram_orders ? num_engram_tables / num_engram_orders : 0; }
  uint32_t engram_seed_stride() const { return engram_seed_heads ? engram_seed_heads : engram_heads(); }
  uint32_t output_rows() const { return out_vocab ? out_vocab : vocab; }
  uint32_t max_engram_order() const;
  // Engram site index of a layer, or -1.
  int site_of_layer(uint32_t layer) const;
  // The Hadamard MLP views a width-N vector as a rows × cols matrix (MODEL.md ba × bb):
  // rows = 1 << (bit_length(N-1)/2), cols = N/rows.
  uint32_t hada_rows() const;
  uint32_t hada_cols() const { return hada_n / hada_rows(); }
};
static_assert(sizeof(Header) == kHeaderBytes, "Header must mirror the 196-byte file layout");

// Name of header field #i (0..48), as FORMAT.md spells it; arrays as
// "engram_orders[2]", "engram_sites[5]".
const char* header_field_name(size_t index);

Header decode_header(std::span<const uint8_t> bytes);  // needs >= 196 bytes
void encode_header(const Header& h, uint8_t* out);     // writes 196 bytes

struct Record {
  Dtype dtype = Dtype::FP16;
  uint8_t ndim = 0;
  uint16_t pad = 0;
  std::array<uint32_t, 4> shape{};
  uint64_t offset = 0;
  uint64_t nbytes = 0;
  uint32_t group = 0;
  uint32_t bits = 0;

  uint64_t elements() const;  // product of the used shape entries (1 for ndim 0)
};
Record decode_record(const uint8_t* bytes);  // reads 44 bytes; dtype stored raw
void encode_record(const Record& r, uint8_t* out);

// "CQ2", "CQ4", "CQ3", "CQ1", "TERNARY", "FP16", "FP32", "RAW".
std::string kind_name(const Record& r);
// "[768, 1024]".
std::string shape_string(const Record& r);

// Bytes that a record's dtype and shape imply (CQ: packed rows + norms);
// 0 when the combination is not representable (unknown dtype, bad CQ width, ...).
uint64_t implied_nbytes(const Record& r);

uint64_t align_up(uint64_t value, uint64_t alignment);

}  // namespace cact
