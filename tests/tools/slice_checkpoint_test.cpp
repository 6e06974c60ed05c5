// The interchange invariant of slicing: slicing an archive gives the same bytes
// as exporting it to a float checkpoint (cact-quant dequantize), slicing that
// checkpoint the same way (renaming layerNN / engramS tensors, selecting the
// mHC and head rows, editing the geometry JSON), and building it back
// (cact-build checkpoint --bits checkpoint). The checkpoint slicer below is
// written from MODEL.md independently of libcact's slicer.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cact/checkpoint.h"
#include "cact/geometry_json.h"
#include "cact/safetensors.h"
#include "cact/synth.h"
#include "support/run_app.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;
using V = std::vector<uint32_t>;

namespace {

struct Renamer {
  V blocks;       // kept source layers
  V site_layers;  // source layers of engram sites, in site order
  const V* all_sites = nullptr;

  std::optional<uint32_t> new_layer(uint32_t old) const {
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (blocks[i] == old) return uint32_t(i);
    }
    return std::nullopt;
  }
  // New name, or nullopt when the tensor is dropped.
  std::optional<std::string> operator()(const std::string& name) const {
    unsigned index = 0;
    int used = 0;
    char buf[64];
    if (std::sscanf(name.c_str(), "layer%2u.%n", &index, &used) == 1 && used == 8) {
      const auto l = new_layer(index);
      if (!l) return std::nullopt;
      std::snprintf(buf, sizeof buf, "layer%02u.", *l);
      return buf + name.substr(8);
    }
    if (std::sscanf(name.c_str(), "engram%u.%n", &index, &used) == 1 && used > 0) {
      uint32_t new_site = 0;
      for (uint32_t s = 0; s < site_layers.size(); ++s) {
        if (!new_layer(site_layers[s])) continue;
        if (s == index) return "engram" + std::to_string(new_site) + "." + name.substr(size_t(used));
        ++new_site;
      }
      return std::nullopt;
    }
    return name;
  }
};

// Keeps `units` of `groups` equal slices along `axis`.
std::vector<uint8_t> select_axis(const cact::safetensors::TensorView& t, size_t axis, uint64_t groups, const V& units,
                                 std::vector<uint64_t>& shape) {
  shape = t.shape;
  const size_t elem = cact::safetensors::dtype_size(t.dtype);
  uint64_t outer = 1, inner = elem;
  for (size_t i = 0; i < axis; ++i) outer *= t.shape[i];
  for (size_t i = axis + 1; i < t.shape.size(); ++i) inner *= t.shape[i];
  const uint64_t per_unit = t.shape[axis] / groups;
  REQUIRE(per_unit * groups == t.shape[axis]);
  std::vector<uint8_t> out;
  for (uint64_t o = 0; o < outer; ++o) {
    for (uint32_t u : units) {
      const uint8_t* p = t.data.data() + (o * t.shape[axis] + u * per_unit) * inner;
      out.insert(out.end(), p, p + per_unit * inner);
    }
  }
  shape[axis] = per_unit * units.size();
  return out;
}

// Slices an exported checkpoint + geometry to `blocks`.
void slice_checkpoint(const fs::path& in, const fs::path& geometry_in, const V& blocks, const fs::path& out,
                      const fs::path& geometry_out) {
  const auto ck = cact::safetensors::File::open(in);
  const cact::Header g = cact::read_geometry_file(geometry_in);
  const uint32_t L = g.num_layers;
  Renamer rename;
  rename.blocks = blocks;
  for (uint32_t s = 0; s < g.num_engram_sites; ++s) rename.site_layers.push_back(g.engram_sites[s]);
  V cells{0};
  for (uint32_t l : blocks) cells.push_back(l + 1);

  std::vector<cact::safetensors::OwnedTensor> tensors;
  for (const auto& t : ck.tensors()) {
    const auto name = rename(t.name);
    if (!name) continue;
    cact::safetensors::OwnedTensor o;
    o.spec.name = *name;
    o.spec.dtype = t.dtype;
    if (t.name.starts_with("mhc_a_") || t.name.starts_with("mhc_b_") || t.name.starts_with("mhc_phi_")) {
      o.bytes = select_axis(t, 0, L, blocks, o.spec.shape);  // n or n*n rows of a layer are one unit
    } else if (t.name.ends_with("_head.probes") || t.name.ends_with("_head.gain")) {
      o.bytes = select_axis(t, 0, L + 1, cells, o.spec.shape);
    } else if (t.name.ends_with("_head.row_bias")) {
      o.bytes = select_axis(t, 1, L + 1, cells, o.spec.shape);
    } else {
      o.spec.shape = t.shape;
      o.bytes.assign(t.data.begin(), t.data.end());
    }
    tensors.push_back(std::move(o));
  }
  // The width map names tensors too.
  auto metadata = ck.metadata();
  std::string bits, entry;
  std::istringstream entries(metadata.at(cact::kBitsMetadataKey));
  while (std::getline(entries, entry, ',')) {
    const size_t eq = entry.find('=');
    const auto key = rename(entry.substr(0, eq));
    if (key) bits += (bits.empty() ? "" : ",") + *key + entry.substr(eq);
  }
  metadata[cact::kBitsMetadataKey] = bits;
  const std::vector<uint8_t> bytes = cact::safetensors::serialize(tensors, metadata);
  std::ofstream(out, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));

  cact::Header h = g;
  h.num_layers = uint32_t(blocks.size());
  h.global_mask_lo = h.global_mask_hi = 0;
  for (uint32_t i = 0; i < blocks.size(); ++i) h.set_global(i, g.is_global(blocks[i]));
  h.engram_sites.fill(0);
  h.num_engram_sites = 0;
  for (uint32_t layer : rename.site_layers) {
    if (const auto l = rename.new_layer(layer)) h.engram_sites[h.num_engram_sites++] = *l;
  }
  cact::write_geometry_file(geometry_out, h);
}

void check_invariant(const fs::path& archive, const fs::path& dir,
                     const std::vector<std::pair<std::string, V>>& cases) {
  const fs::path ck = dir / "ck.safetensors", geometry = dir / "ck.json";
  const auto dq = cact::test::run_app("cact-quant", {"dequantize", archive, ck});
  REQUIRE_MESSAGE(dq.code == 0, dq.err);
  // Precondition: the export rebuilds the archive exactly.
  const auto re = cact::test::run_app(
      "cact-build", {"checkpoint", ck, geometry, dir / "re.cact", "--tokenizer", archive, "--bits", "checkpoint"});
  REQUIRE_MESSAGE(re.code == 0, re.err);
  REQUIRE(cact::test::slurp(dir / "re.cact") == cact::test::slurp(archive));

  for (const auto& [flag_value, blocks] : cases) {
    CAPTURE(flag_value);
    const fs::path sliced_ck = dir / "s.safetensors", sliced_geometry = dir / "s.json";
    slice_checkpoint(ck, geometry, blocks, sliced_ck, sliced_geometry);
    const auto built = cact::test::run_app("cact-build", {"checkpoint", sliced_ck, sliced_geometry, dir / "built.cact",
                                                          "--tokenizer", archive, "--bits", "checkpoint"});
    REQUIRE_MESSAGE(built.code == 0, built.err);
    const bool layers = flag_value.find(',') == std::string::npos;
    const auto sliced =
        cact::test::run_app("cact-slice", {archive, dir / "sliced.cact", layers ? "--layers" : "--blocks", flag_value});
    REQUIRE_MESSAGE(sliced.code == 0, sliced.err);
    CHECK(cact::test::slurp(dir / "built.cact") == cact::test::slurp(dir / "sliced.cact"));
  }
}

}  // namespace

TEST_CASE("cact-slice: slicing the archive equals building from the sliced checkpoint (license-tiny)") {
  const fs::path dir = cact::test::scratch_dir("slice-ckpt");
  check_invariant(cact::test::models_dir() / "license-tiny.cact", dir,
                  {{"2", {0, 3}}, {"3", {0, 1, 3}}, {"1,2", {1, 2}}, {"2,3", {2, 3}}});
}

TEST_CASE("cact-slice: slicing the archive equals building from the sliced checkpoint (heads, mixed widths)") {
  const fs::path dir = cact::test::scratch_dir("slice-ckpt");
  cact::SynthSpec spec = cact::synth_preset("micro-heads");
  // Per-tensor widths so the width map names layers and sites.
  spec.widths = cact::WidthMap::parse("default=2,embedding=4,mhc_phi=4,heads=4,layer03.q_proj=3,engram1.tables=4");
  cact::write_synth_archive(dir / "heads.cact", spec);
  check_invariant(dir / "heads.cact", dir, {{"2", {0, 3}}, {"3", {0, 1, 3}}, {"1,3", {1, 3}}, {"0,2", {0, 2}}});
}
