#include <fmt/format.h>

#include "render.h"

namespace cact::inspect {
namespace {

std::string join(const std::vector<uint32_t>& v) {
  std::string s;
  for (uint32_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s.empty() ? "none" : s;
}

void summary(std::string& o, const Report& r) {
  const Model& m = *r.model;
  const Header& h = m.header();
  const ArchiveSummary s = summarize(m);
  o += fmt::format("{}: {} archive (tag 0x{:08X}), {} bytes, {} tensors\n", r.path, s.generation, h.tag, s.file_bytes,
                   s.tensors);
  o += fmt::format("geometry   {} layers, d_model {}, {} heads / {} kv heads, head dims qk {} v {}, context {}\n",
                   h.num_layers, h.d_model, h.num_heads, h.num_kv_heads, h.qk_head_dim, h.v_head_dim, h.max_seq_len);
  o += fmt::format("attention  sliding window {}, global layers {}, rope_theta {}, qkv conv taps {}\n",
                   h.sliding_window ? std::to_string(h.sliding_window) : std::string("none (all global)"),
                   h.sliding_window ? join(s.global_layers) : std::string("all"), h.rope_theta, h.qkv_conv_taps);
  o += fmt::format("residual   {} lanes (mHC); Hadamard MLP width {} ({}x{} by {}x{} factors{})\n", h.mhc_lanes,
                   h.hada_n, h.hada_rows(), h.hada_rows(), h.hada_cols(), h.hada_cols(),
                   m.canon().block_untied() ? ", block-untied" : "");
  if (h.num_engram_sites > 0) {
    std::vector<uint32_t> sites(h.engram_sites.begin(), h.engram_sites.begin() + h.num_engram_sites);
    std::vector<uint32_t> orders(h.engram_orders.begin(), h.engram_orders.begin() + h.num_engram_orders);
    o +=
        fmt::format("engram     {} sites (layers {}), orders {}, {} tables x {} slots x {}, conv {} taps dilation {}\n",
                    h.num_engram_sites, join(sites), join(orders), h.num_engram_tables, h.engram_slots,
                    h.engram_sub_dim, h.engram_conv_taps, h.engram_conv_dilation);
  } else {
    o += "engram     none\n";
  }
  o += fmt::format("kv cache   {} (kv_bits {}), kv_window {}\n",
                   h.kv_bits == 8 ? "int8" : fmt::format("CQ{}", h.kv_bits), h.kv_bits,
                   h.kv_window ? std::to_string(h.kv_window) : std::string("0 (sized from memory)"));
  o += fmt::format("vocab      {} (output head: {} rows)\n", h.vocab, h.output_rows());
  std::string heads;
  for (const HeadLayout& hl : s.heads) {
    heads += fmt::format("{}{} (k {}, q {}, out {})", heads.empty() ? "" : ", ", head_kind_name(hl.kind), hl.k, hl.q,
                         hl.out);
  }
  o += fmt::format("heads      {}\n", heads.empty() ? "none" : heads);
  const TokenizerSummary& t = s.tokenizer;
  o += fmt::format(
      "tokenizer  {} pieces; pad {}, eos {}, bos {}, unk {}; {} user-defined; {} byte pieces; dummy prefix {}; byte "
      "fallback {}\n",
      t.pieces, t.pad_id, t.eos_id, t.bos_id, t.unk_id, t.user_defined.size(), t.byte_pieces,
      t.add_dummy_prefix ? "on" : "off", t.byte_fallback ? "on" : "off");
  o += "bytes by kind\n";
  for (const auto& [kind, total] : s.by_kind) {
    o += fmt::format("  {:<8} {:>5} tensors {:>10.3f} MB\n", kind, total.count, double(total.bytes) / 1e6);
  }
}

void table(std::string& o, const Report& r) {
  o += fmt::format("{:>5}  {:<28} {:<8} {:<18} {:>10} {:>10}  {}\n", "#", "name", "kind", "shape", "offset", "bytes",
                   "xxh64");
  for (const TensorRow& row : tensor_rows(*r.model, true)) {
    o += fmt::format("{:>5}  {:<28} {:<8} {:<18} {:>10} {:>10}  {}\n", row.index, row.name, row.kind, row.shape,
                     row.offset, row.nbytes, row.xxh64);
  }
}

void values(std::string& o, const Report& r) {
  const auto& [name, st] = *r.tensor;
  o += fmt::format("{}: {} values, min {:.6g}, max {:.6g}, mean {:.6g}, rms {:.6g}\n", name, st.count, st.min, st.max,
                   st.mean, st.rms);
  const size_t n = r.value_limit ? std::min(r.value_limit, st.count) : st.count;
  for (size_t i = 0; i < n; ++i)
    o += fmt::format("{:.6g}{}", st.values[i], (i + 1) % 8 == 0 || i + 1 == n ? "\n" : " ");
  if (n < st.count) o += fmt::format("... ({} more; --limit 0 prints all)\n", st.count - n);
}

}  // namespace

std::string render_text(const Report& r) {
  std::string o;
  if (r.problems) {
    if (r.problems->empty()) {
      o += fmt::format("{}: check passed (header, codebooks, directory, canon, blobs, tokenizer, finite values)\n",
                       r.path);
    } else {
      for (const std::string& p : *r.problems) o += fmt::format("{}: {}\n", r.path, p);
      return o;
    }
  }
  if (r.tensor) {
    values(o, r);
    return o;
  }
  if (r.problems && !r.tensors) return o;
  summary(o, r);
  if (r.tensors) table(o, r);
  return o;
}

}  // namespace cact::inspect
