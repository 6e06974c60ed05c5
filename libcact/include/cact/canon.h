#pragma once
// The positional canon (MODEL.md): which tensor sits at which position, with
// its name, dtype and shape, derived from the header (and, for the optional
// heads and block-untied factors, from the directory). One piece of code that
// every reader, writer, slicer and the engine share.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cact/format.h"

namespace cact {

enum class LayerSlot : uint8_t {
  norm_in,
  q_proj,
  k_proj,
  v_proj,
  q_taps,
  k_taps,
  v_taps,
  q_norm,
  k_norm,
  gate_proj,
  out_proj,
  post_norm,
  attn_gate,
  pre_hada,
  d1,
  d2,
  b2,
  d3,
  d4,
  w1a,
  w1b,
  w2a,
  w2b,
  w3a,
  w3b,
  cond_v,
  cond_u,
  count
};
enum class SharedSlot : uint8_t {
  mhc_a_pre,
  mhc_a_post,
  mhc_a_res,
  mhc_b_pre,
  mhc_b_post,
  mhc_b_res,
  mhc_phi_pre,
  mhc_phi_post,
  mhc_phi_res,
  hada_p1,
  hada_p2,
  count
};
enum class SiteSlot : uint8_t { tables, key_proj, value_proj, taps, count };
enum class HeadKind : uint32_t { embedding = 1, confidence = 2, router = 3 };
enum class HeadSlot : uint8_t { probes, gain, query, row_bias, proj, bias, calibration, count };

const char* layer_slot_name(LayerSlot s);
const char* shared_slot_name(SharedSlot s);
const char* site_slot_name(SiteSlot s);
const char* head_kind_name(HeadKind k);  // "embedding", "confidence", "router"
const char* head_slot_name(HeadSlot s);

// What the canon expects at one position. For CQ any width is allowed.
struct TensorSpec {
  std::string name;
  Dtype dtype = Dtype::FP16;
  uint8_t ndim = 0;
  std::array<uint32_t, 4> shape{};
};

struct HeadLayout {
  HeadKind kind = HeadKind::confidence;
  std::array<size_t, size_t(HeadSlot::count)> index{};  // calibration = SIZE_MAX unless router
  uint32_t k = 0;                                       // probes per cell row
  uint32_t q = 0;                                       // queries
  uint32_t out = 0;                                     // proj rows
  size_t at(HeadSlot s) const { return index[size_t(s)]; }
};

class Canon {
 public:
  // The canon of a header that passed check_header. `directory` and `file`
  // give the head manifest's codes and the head shapes (k, q, out) and tell
  // whether the Hadamard factors are block-untied; throws cact::Error naming
  // the record when the heads walk does not fit.
  static Canon derive(const Header& h, std::span<const Record> directory, std::span<const uint8_t> file);
  // The canon a writer will produce: heads given explicitly.
  struct HeadRequest {
    HeadKind kind;
    uint32_t k, q, out;
  };
  static Canon make(const Header& h, std::span<const HeadRequest> heads, bool block_untied);

  const std::vector<TensorSpec>& specs() const { return specs_; }
  const TensorSpec& operator[](size_t i) const { return specs_[i]; }
  size_t size() const { return specs_.size(); }

  size_t embedding() const { return 0; }
  size_t layer(uint32_t l, LayerSlot s) const;  // throws for a taps slot when T == 0
  size_t layer_begin(uint32_t l) const { return 1 + size_t(l) * per_layer_; }
  size_t per_layer() const { return per_layer_; }
  size_t shared(SharedSlot s) const { return shared_begin_ + size_t(s); }
  size_t site(uint32_t s, SiteSlot slot) const { return sites_begin_ + size_t(s) * 4 + size_t(slot); }
  size_t final_norm() const { return final_norm_; }
  bool has_heads() const { return !heads_.empty(); }
  size_t manifest() const { return final_norm_ + 1; }  // valid only with heads
  const std::vector<HeadLayout>& heads() const { return heads_; }
  size_t tokenizer() const { return specs_.size() - 1; }
  bool block_untied() const { return block_untied_; }
  bool has_taps() const { return per_layer_ == 27; }

  // Position of a name, or SIZE_MAX.
  size_t find(std::string_view name) const;

  // Tensors through final_norm for a header (no heads, no tokenizer).
  static size_t core_count(const Header& h);

 private:
  Canon() = default;
  void build_core(const Header& h, bool block_untied);
  void add_head(const Header& h, const HeadRequest& r);
  std::vector<TensorSpec> specs_;
  std::vector<HeadLayout> heads_;
  size_t per_layer_ = 24, shared_begin_ = 0, sites_begin_ = 0, final_norm_ = 0;
  bool block_untied_ = false;
};

// Dtype/ndim/shape of every record against the canon (CQ: any width).
std::vector<std::string> check_against_canon(const Canon& canon, std::span<const Record> records);

}  // namespace cact
