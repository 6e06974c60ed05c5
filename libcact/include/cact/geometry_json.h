#pragma once
// The geometry of a model as JSON, the companion of a safetensors checkpoint
// (docs/INTERCHANGE.md "Geometry JSON"). Keys are the header field names of
// FORMAT.md (header_field_name) with three exceptions that are lists instead
// of masks / fixed arrays: "global_layers" (the layers whose bit is set in
// global_mask_lo/hi), "engram_orders" and "engram_sites" (their used entries;
// num_engram_orders / num_engram_sites are their lengths). tag, num_tensors
// and codebook_len are the writer's business and are not part of it.
// Every key is required; unknown and duplicate keys are refused.
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "cact/format.h"

namespace cact {

// Pretty-printed JSON object, keys in header order, ending with a newline.
std::string geometry_to_json(const Header& h);

// Parses and checks a geometry (every field sane by check_header's rules);
// `source` prefixes messages. The result has tag and codebook_len set and
// num_tensors 0 (the writer sets it).
Header geometry_from_json(std::string_view text, const std::string& source = "geometry");

Header read_geometry_file(const std::filesystem::path& path);
// Atomic; refuses to overwrite one of `inputs`.
void write_geometry_file(const std::filesystem::path& path, const Header& h,
                         std::span<const std::filesystem::path> inputs = {});

}  // namespace cact
