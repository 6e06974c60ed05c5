// Structural validation of a .cact: header geometry, codebooks, directory.
#include "cact/validate.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "cact/codec.h"

namespace cact {
namespace {

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

std::string field(const char* name, uint64_t value, const char* why) {
  return "header: " + std::string(name) + " " + std::to_string(value) + " " + why;
}

// Limits far past any model this format is meant for; they keep every product
// of geometry fields well inside 64 bits.
constexpr uint32_t kMaxDim = 1u << 16;
constexpr uint32_t kMaxVocab = 1u << 22;
constexpr uint32_t kMaxSeq = 1u << 22;
constexpr uint32_t kMaxTensors = 1u << 20;

}  // namespace

uint64_t directory_end(const Header& h) {
  return kHeaderBytes + uint64_t(h.codebook_len) * 4 + uint64_t(h.num_tensors) * kRecordBytes;
}

std::vector<std::string> check_header(const Header& h) {
  std::vector<std::string> p;
  if (h.tag == kTagNeedle2) {
    return {"header: tag " + hex(h.tag) + " is a Needle 2 archive (120-byte header); this tool reads Needle 3 (" +
            hex(kTagNeedle3) + ")"};
  }
  if (h.tag != kTagNeedle3) {
    return {"header: tag " + hex(h.tag) + " is not a .cact archive tag (Needle 3 is " + hex(kTagNeedle3) + ")"};
  }
  auto range = [&](const char* name, uint64_t v, uint64_t lo, uint64_t hi) {
    if (v < lo || v > hi) {
      p.push_back(field(name, v, ("is outside " + std::to_string(lo) + ".." + std::to_string(hi)).c_str()));
      return false;
    }
    return true;
  };
  if (h.codebook_len != 28) p.push_back(field("codebook_len", h.codebook_len, "must be 28 for Needle 3"));
  range("num_tensors", h.num_tensors, 1, kMaxTensors);
  range("vocab", h.vocab, 1, kMaxVocab);
  if (h.out_vocab > h.vocab)
    p.push_back(field("out_vocab", h.out_vocab, ("exceeds vocab " + std::to_string(h.vocab)).c_str()));
  range("d_model", h.d_model, 1, kMaxDim);
  const bool heads_in_range = range("num_heads", h.num_heads, 1, 1024);
  const bool kv_heads_in_range = range("num_kv_heads", h.num_kv_heads, 1, 1024);  // both reported
  const bool heads_ok = heads_in_range && kv_heads_in_range;
  if (heads_ok && h.num_heads % h.num_kv_heads != 0) {
    p.push_back(field("num_heads", h.num_heads,
                      ("is not divisible by num_kv_heads " + std::to_string(h.num_kv_heads)).c_str()));
  }
  range("num_layers", h.num_layers, 1, 64);
  if (range("qk_head_dim", h.qk_head_dim, 2, 4096) && h.qk_head_dim % 2 != 0) {
    p.push_back(field("qk_head_dim", h.qk_head_dim, "must be even (rotate-half RoPE)"));
  }
  range("v_head_dim", h.v_head_dim, 1, 4096);
  if (uint64_t(h.num_heads) * h.qk_head_dim > kMaxDim || uint64_t(h.num_heads) * h.v_head_dim > kMaxDim) {
    p.push_back("header: num_heads x head width exceeds " + std::to_string(kMaxDim));
  }
  range("max_seq_len", h.max_seq_len, 1, kMaxSeq);
  if (!std::has_single_bit(h.hada_n) || h.hada_n < h.d_model || h.hada_n > 2 * kMaxDim) {
    p.push_back(field("hada_n", h.hada_n, ("must be a power of two >= d_model " + std::to_string(h.d_model)).c_str()));
  }
  range("mhc_lanes", h.mhc_lanes, 1, 16);
  if (h.kv_bits != 8 && (h.kv_bits < 2 || h.kv_bits > 4))
    p.push_back(field("kv_bits", h.kv_bits, "must be 8, 2, 3 or 4"));
  range("qkv_conv_taps", h.qkv_conv_taps, 0, 16);
  const uint64_t layer_bits = h.num_layers >= 64 ? ~uint64_t(0) : ((uint64_t(1) << h.num_layers) - 1);
  const uint64_t mask = uint64_t(h.global_mask_hi) << 32 | h.global_mask_lo;
  if (h.num_layers <= 64 && (mask & ~layer_bits) != 0) {
    p.push_back("header: global_mask sets layers at or past num_layers " + std::to_string(h.num_layers));
  }
  if (!std::isfinite(h.rope_theta) || h.rope_theta <= 1.0f) {
    p.push_back("header: rope_theta " + std::to_string(h.rope_theta) + " must be finite and > 1");
  }
  // Engram geometry.
  if (range("num_engram_sites", h.num_engram_sites, 0, 16)) {
    for (uint32_t s = h.num_engram_sites; s < 16; ++s) {
      if (h.engram_sites[s] != 0)
        p.push_back(field(header_field_name(32 + s), h.engram_sites[s], "is past num_engram_sites and must be 0"));
    }
    for (uint32_t s = 0; s < h.num_engram_sites; ++s) {
      if (h.engram_sites[s] >= h.num_layers) {
        p.push_back(field(header_field_name(32 + s), h.engram_sites[s],
                          ("is not below num_layers " + std::to_string(h.num_layers)).c_str()));
      }
      if (s > 0 && h.engram_sites[s] <= h.engram_sites[s - 1]) {
        p.push_back(field(header_field_name(32 + s), h.engram_sites[s],
                          ("is not above " + std::string(header_field_name(31 + s)) + " " +
                           std::to_string(h.engram_sites[s - 1]) + " (sites must be ascending)")
                              .c_str()));
      }
    }
  }
  if (h.num_engram_sites > 0) {
    if (range("num_engram_orders", h.num_engram_orders, 1, 4)) {
      for (uint32_t i = 0; i < 4; ++i) {
        const uint32_t o = h.engram_orders[i];
        if (i < h.num_engram_orders ? (o < 1 || o > 4) : o != 0) {
          p.push_back(field(header_field_name(27 + i), o,
                            i < h.num_engram_orders ? "must be 1..4" : "is unused and must be 0"));
        }
      }
      if (h.num_engram_tables == 0 || h.num_engram_tables % h.num_engram_orders != 0) {
        p.push_back(
            field("num_engram_tables", h.num_engram_tables, "must be a positive multiple of num_engram_orders"));
      }
    }
    range("engram_slots", h.engram_slots, 1, 1u << 24);
    range("engram_sub_dim", h.engram_sub_dim, 1, kMaxDim);
    if (uint64_t(h.num_engram_tables) * h.engram_sub_dim != h.d_model) {
      p.push_back("header: num_engram_tables x engram_sub_dim (" + std::to_string(h.num_engram_tables) + " x " +
                  std::to_string(h.engram_sub_dim) + ") must equal d_model " + std::to_string(h.d_model));
    }
    // Table rows (tables x slots) are a u32 shape entry of the canon.
    if (uint64_t(h.num_engram_tables) * h.engram_slots > UINT32_MAX) {
      p.push_back("header: num_engram_tables x engram_slots (" + std::to_string(h.num_engram_tables) + " x " +
                  std::to_string(h.engram_slots) + ") exceeds " + std::to_string(UINT32_MAX) + " table rows");
    }
    range("engram_conv_taps", h.engram_conv_taps, 1, 16);
    range("engram_conv_dilation", h.engram_conv_dilation, 1, 16);
    range("engram_seed_heads", h.engram_seed_heads, 0, 1u << 16);
  }
  return p;
}

std::vector<std::string> check_codebooks(std::span<const float> cb) {
  std::vector<std::string> p;
  const size_t offsets[3] = {0, 4, 12}, counts[3] = {4, 8, 16};
  for (size_t b = 0; b < 3; ++b) {
    for (size_t i = 0; i < counts[b] && offsets[b] + i < cb.size(); ++i) {
      const size_t k = offsets[b] + i;
      if (!std::isfinite(cb[k])) {
        p.push_back("codebooks: entry " + std::to_string(k) + " is not finite");
      } else if (i > 0 && !(cb[k] > cb[k - 1])) {
        p.push_back("codebooks: entry " + std::to_string(k) + " (" + std::to_string(cb[k]) +
                    ") is not above the one before it in the " + std::to_string(b + 2) + "-bit codebook");
      }
    }
  }
  return p;
}

std::vector<std::string> check_records(std::span<const Record> records, std::span<const uint8_t> file, uint64_t dir_end,
                                       const RecordNamer& name) {
  std::vector<std::string> p;
  const uint64_t size = file.size();
  uint64_t previous_end = dir_end;
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    const std::string who = name(i) + ": ";
    const size_t before = p.size();
    if (!known_dtype(uint8_t(r.dtype)))
      p.push_back(who + "dtype " + std::to_string(unsigned(r.dtype)) + " is unknown (1 FP16, 2 FP32, 3 CQ, 4 RAW)");
    if (r.pad != 0) p.push_back(who + "pad " + std::to_string(r.pad) + " must be 0");
    if (r.ndim > 4) p.push_back(who + "ndim " + std::to_string(r.ndim) + " exceeds 4");
    for (size_t d = std::min<size_t>(r.ndim, 4); d < 4; ++d) {
      if (r.shape[d] != 0)
        p.push_back(who + "shape[" + std::to_string(d) + "] " + std::to_string(r.shape[d]) +
                    " is unused and must be 0");
    }
    for (size_t d = 0; d < std::min<size_t>(r.ndim, 4); ++d) {
      if (r.shape[d] == 0) p.push_back(who + "shape[" + std::to_string(d) + "] is 0");
    }
    if (r.dtype == Dtype::RAW && r.ndim != 0) p.push_back(who + "RAW tensor must have ndim 0");
    if (r.dtype == Dtype::CQ) {
      if (r.ndim != 2) p.push_back(who + "CQ tensor must have ndim 2, has " + std::to_string(r.ndim));
      // The Hadamard rotation of a group needs a power of two (the butterfly would run past a group of 24).
      if (r.group < 8 || r.group > 4096 || !std::has_single_bit(r.group)) {
        p.push_back(who + "CQ group " + std::to_string(r.group) + " is not supported (a power of two, 8..4096)");
      }
      if (!codec::valid_bits(r.bits))
        p.push_back(who + "CQ bits " + std::to_string(r.bits) + " is not a supported width (1, 2, 3, 4, 5 = ternary)");
    } else if (known_dtype(uint8_t(r.dtype)) && (r.group != 0 || r.bits != 0)) {
      p.push_back(who + "group/bits must be 0 for " + dtype_name(r.dtype));
    }
    if (p.size() == before) {
      const uint64_t implied = implied_nbytes(r);
      if (r.dtype != Dtype::RAW && implied != r.nbytes) {
        p.push_back(who + "nbytes " + std::to_string(r.nbytes) + ", expected " + std::to_string(implied) + " for " +
                    kind_name(r) + " " + shape_string(r));
      }
    }
    // Placement: exactly at the next 64-byte boundary after the previous region.
    const uint64_t expected_offset = align_up(previous_end, kBlobAlign);
    if (r.offset % kBlobAlign != 0) {
      p.push_back(who + "offset " + std::to_string(r.offset) + " is not a multiple of 64");
    } else if (r.offset < dir_end) {
      p.push_back(who + "offset " + std::to_string(r.offset) + " lies inside the header/directory (ends at " +
                  std::to_string(dir_end) + ")");
    } else if (r.offset != expected_offset) {
      p.push_back(who + "offset " + std::to_string(r.offset) + ", expected " + std::to_string(expected_offset) +
                  (r.offset < expected_offset ? " (overlaps the previous blob)" : " (gap after the previous blob)"));
    }
    if (r.offset > size || r.nbytes > size - r.offset) {
      p.push_back(who + "blob [" + std::to_string(r.offset) + ", +" + std::to_string(r.nbytes) +
                  ") runs past the end of the file (" + std::to_string(size) + " bytes)");
      previous_end = size;
      continue;
    }
    if (r.offset >= previous_end) {
      for (uint64_t b = previous_end; b < r.offset; ++b) {
        if (file[b] != 0) {
          p.push_back(who + "padding byte at " + std::to_string(b) + " before the blob is not zero");
          break;
        }
      }
    }
    previous_end = std::max(previous_end, r.offset + r.nbytes);
  }
  if (previous_end < size) {
    const uint64_t extra = size - previous_end;
    bool zero = extra < kBlobAlign;
    for (uint64_t b = previous_end; zero && b < size; ++b) zero = file[b] == 0;
    if (!zero)
      p.push_back("file: " + std::to_string(extra) + " unexpected bytes after the last blob (ends at " +
                  std::to_string(previous_end) + ")");
  }
  return p;
}

}  // namespace cact
