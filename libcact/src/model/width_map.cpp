#include "cact/width_map.h"

#include "cact/codec.h"
#include "cact/error.h"

namespace cact {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

uint32_t parse_width(std::string_view key, std::string_view value) {
  if (value == "ternary" || value == "t" || value == "5") return codec::kTernary;
  if (value.size() == 1 && value[0] >= '1' && value[0] <= '4') return uint32_t(value[0] - '0');
  fail("bits map: '" + std::string(key) + "=" + std::string(value) +
       "': width must be 1, 2, 3, 4 or ternary (the widths the format carries)");
}

// The group keys a tensor name belongs to, most specific first.
void keys_of(std::string_view name, std::string_view out[4], size_t& count) {
  count = 0;
  out[count++] = name;
  const size_t dot = name.find('.');
  if (dot != std::string_view::npos) out[count++] = name.substr(dot + 1);
  if (name.starts_with("mhc_phi"))
    out[count++] = "mhc_phi";
  else if (name.find("_head.") != std::string_view::npos)
    out[count++] = "heads";
  else if (name.starts_with("engram"))
    out[count++] = "engram";
  else if (name.starts_with("layer"))
    out[count++] = "layers";
}

}  // namespace

WidthMap::WidthMap() {
  *this = parse(kShipped);
  layers_.back().built_in = true;
}

WidthMap WidthMap::parse(std::string_view text) { return WidthMap(EmptyTag{}).with(text); }

WidthMap WidthMap::with(std::string_view text) const {
  Layer layer;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) fail("bits map: '" + std::string(item) + "' is not key=width");
    const std::string key(trim(item.substr(0, eq)));
    if (key.empty()) fail("bits map: '" + std::string(item) + "' has an empty key");
    // A repeat would silently keep the last.
    if (layer.entries.contains(key)) fail("bits map: key '" + key + "' is given more than once");
    layer.entries[key] = parse_width(key, trim(item.substr(eq + 1)));
  }
  WidthMap m = *this;
  if (!layer.entries.empty()) m.layers_.push_back(std::move(layer));
  return m;
}

void WidthMap::check_keys(const Canon& canon) const {
  for (const Layer& layer : layers_) {
    if (layer.built_in) continue;
    for (const auto& [key, bits] : layer.entries) {
      if (key == "default") continue;
      bool used = false;
      for (const TensorSpec& s : canon.specs()) {
        if (s.dtype != Dtype::CQ) continue;
        std::string_view keys[4];
        size_t n;
        keys_of(s.name, keys, n);
        for (size_t i = 0; i < n && !used; ++i) used = keys[i] == key;
        if (used) break;
      }
      if (!used) fail("bits map: key '" + key + "' names no CQ tensor of this archive");
    }
  }
}

std::optional<uint32_t> WidthMap::find(std::string_view name) const {
  std::string_view keys[4];
  size_t n;
  keys_of(name, keys, n);
  for (auto layer = layers_.rbegin(); layer != layers_.rend(); ++layer) {
    for (size_t i = 0; i < n; ++i) {
      const auto it = layer->entries.find(std::string(keys[i]));
      if (it != layer->entries.end()) return it->second;
    }
    const auto it = layer->entries.find("default");
    if (it != layer->entries.end()) return it->second;
  }
  return std::nullopt;
}

uint32_t WidthMap::bits_for(std::string_view name) const {
  const std::optional<uint32_t> bits = find(name);
  if (!bits) fail("bits map: no width for '" + std::string(name) + "' and no default");
  return *bits;
}

std::string WidthMap::to_string() const {
  std::string s;
  for (auto layer = layers_.rbegin(); layer != layers_.rend(); ++layer) {
    if (!s.empty()) s += " over ";
    bool first = true;
    for (const auto& [key, bits] : layer->entries) {
      s += (first ? "" : ",") + key + "=" + (bits == codec::kTernary ? std::string("ternary") : std::to_string(bits));
      first = false;
    }
  }
  return s;
}

}  // namespace cact
