#pragma once
// Seeded synthetic archives of any geometry: the full canon, weights drawn at
// scales that keep activations finite through deep stacks, CQ widths from a
// WidthMap, optional heads, a synthetic (or given) tokenizer. Deterministic:
// the same spec gives the same bytes on every platform (integer RNG, no libm
// in the sampling). See docs/SYNTH.md.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cact/canon.h"
#include "cact/format.h"
#include "cact/tokenizer.h"
#include "cact/width_map.h"

namespace cact {

struct SynthSpec {
  Header geometry;  // num_tensors and codebook_len are filled in
  uint64_t seed = 1;
  std::vector<Canon::HeadRequest> heads;
  bool block_untied = false;
  WidthMap widths;
  std::optional<TokenizerModel> tokenizer;  // default: synthetic byte-level BPE vocabulary
};

// Named presets: "needle3" (the shipped geometry: 581 tensors), "micro",
// "micro-notaps", "micro-heads", "micro-mixed" (CQ1/CQ3/ternary, untied factors).
SynthSpec synth_preset(const std::string& name);
std::vector<std::string> synth_preset_names();

// One header field from "field=value" (cact-build synth --set), by its
// FORMAT.md name: a decimal integer 0..2^32-1 ("010" is ten), rope_theta a
// float. Throws cact::Error "field: ..." (not a field, computed by the writer,
// not a number, out of range). The geometry's own checks come later.
void set_header_field(Header& h, std::string_view assignment);

// A synthetic tokenizer with `pieces` pieces (>= 270): specials 0-3, the ten
// chat markers, 256 byte pieces, then "▁", letters and frequent English pairs.
TokenizerModel synthetic_tokenizer(uint32_t pieces);

std::vector<uint8_t> synth_archive_bytes(const SynthSpec& spec);
void write_synth_archive(const std::filesystem::path& path, const SynthSpec& spec);

}  // namespace cact
