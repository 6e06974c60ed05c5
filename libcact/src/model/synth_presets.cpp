// Named synthetic geometries: the shipped needle3 and small ones for golden files.
#include "cact/error.h"
#include "cact/synth.h"

namespace cact {
namespace {

Header needle3_geometry() {
  Header h;
  h.kv_window = 256;
  h.kv_bits = 8;
  h.vocab = 8192;
  h.out_vocab = 8192;
  h.d_model = 768;
  h.num_heads = 12;
  h.num_kv_heads = 2;
  h.num_layers = 20;
  h.qk_head_dim = 48;
  h.v_head_dim = 64;
  h.max_seq_len = 8192;
  h.hada_n = 1024;
  h.mhc_lanes = 4;
  h.sliding_window = 1024;
  h.global_mask_lo = (1u << 4) | (1u << 9) | (1u << 14) | (1u << 19);
  h.qkv_conv_taps = 3;
  h.engram_slots = 18432;
  h.engram_sub_dim = 128;
  h.num_engram_tables = 6;
  h.engram_conv_taps = 4;
  h.engram_conv_dilation = 3;
  h.num_engram_orders = 2;
  h.engram_orders = {2, 3, 0, 0};
  h.num_engram_sites = 5;
  h.engram_sites = {3, 7, 11, 15, 19};
  h.rope_theta = 100000.0f;
  return h;
}

// Small enough for golden files (tens of KB), yet every term of the model is
// present: two orders, two sites, conv taps, sliding and global layers.
Header micro_geometry() {
  Header h;
  h.kv_window = 0;
  h.kv_bits = 8;
  h.vocab = 320;
  h.out_vocab = 0;
  h.d_model = 64;
  h.num_heads = 4;
  h.num_kv_heads = 2;
  h.num_layers = 4;
  h.qk_head_dim = 16;
  h.v_head_dim = 16;
  h.max_seq_len = 256;
  h.hada_n = 64;
  h.mhc_lanes = 2;
  h.sliding_window = 16;
  h.global_mask_lo = (1u << 1) | (1u << 3);
  h.qkv_conv_taps = 3;
  h.engram_slots = 61;
  h.engram_sub_dim = 16;
  h.num_engram_tables = 4;
  h.engram_conv_taps = 3;
  h.engram_conv_dilation = 3;
  h.num_engram_orders = 2;
  h.engram_orders = {2, 3, 0, 0};
  h.num_engram_sites = 2;
  h.engram_sites = {0, 2, 0, 0};
  h.rope_theta = 10000.0f;
  return h;
}

}  // namespace

std::vector<std::string> synth_preset_names() {
  return {"needle3", "micro", "micro-notaps", "micro-heads", "micro-mixed"};
}

SynthSpec synth_preset(const std::string& name) {
  SynthSpec s;
  if (name == "needle3") {
    s.geometry = needle3_geometry();
    s.heads = {{HeadKind::confidence, 4, 4, 1}};
    return s;
  }
  s.geometry = micro_geometry();
  if (name == "micro") return s;
  if (name == "micro-notaps") {
    s.geometry.qkv_conv_taps = 0;
    s.geometry.out_vocab = 300;
    s.geometry.kv_window = 32;
    return s;
  }
  if (name == "micro-heads") {
    s.heads = {{HeadKind::confidence, 2, 2, 1}, {HeadKind::router, 2, 3, 3}, {HeadKind::embedding, 3, 2, 64}};
    return s;
  }
  if (name == "micro-mixed") {
    s.block_untied = true;
    s.geometry.num_engram_sites = 1;
    s.geometry.engram_sites = {3, 0, 0, 0};
    s.widths = WidthMap::parse("default=3,q_proj=5,k_proj=1,v_proj=4,embedding=4,tables=5,mhc_phi=2");
    return s;
  }
  std::string known;
  for (const auto& n : synth_preset_names()) known += (known.empty() ? "" : ", ") + n;
  fail("unknown synthetic preset '" + name + "' (known: " + known + ")");
}

}  // namespace cact
