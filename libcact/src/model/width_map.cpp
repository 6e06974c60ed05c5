#include "cact/width_map.h"

#include <set>

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
  if (name.starts_with("mhc_phi")) out[count++] = "mhc_phi";
  else if (name.find("_head.") != std::string_view::npos) out[count++] = "heads";
  else if (name.starts_with("engram")) out[count++] = "engram";
  else if (name.starts_with("layer")) out[count++] = "layers";
}

}  // namespace

WidthMap::WidthMap() {
  *this = parse(kShipped);
  user_keys_.clear();
}

WidthMap WidthMap::parse(std::string_view text) {
  WidthMap m = WidthMap::empty();
  return m.with(text);
}

WidthMap WidthMap::with(std::string_view text) const {
  WidthMap m = *this;
  std::set<std::string, std::less<>> given;  // keys of this text: a repeat would silently keep the last
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) fail("bits map: '" + std::string(item) + "' is not key=width");
    const std::string_view key = trim(item.substr(0, eq));
    if (key.empty()) fail("bits map: '" + std::string(item) + "' has an empty key");
    if (!given.emplace(key).second) fail("bits map: key '" + std::string(key) + "' is given more than once");
    m.entries_[std::string(key)] = parse_width(key, trim(item.substr(eq + 1)));
    m.user_keys_.insert(std::string(key));
  }
  return m;
}

void WidthMap::check_keys(const Canon& canon) const {
  for (const auto& [key, bits] : entries_) {
    if (key == "default" || !user_keys_.count(key)) continue;
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

std::optional<uint32_t> WidthMap::find(std::string_view name) const {
  std::string_view keys[4];
  size_t n;
  keys_of(name, keys, n);
  for (size_t i = 0; i < n; ++i) {
    const auto it = entries_.find(std::string(keys[i]));
    if (it != entries_.end()) return it->second;
  }
  const auto it = entries_.find("default");
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

uint32_t WidthMap::bits_for(std::string_view name) const {
  const std::optional<uint32_t> bits = find(name);
  if (!bits) fail("bits map: no width for '" + std::string(name) + "' and no default");
  return *bits;
}

std::string WidthMap::to_string() const {
  std::string s;
  for (const auto& [key, bits] : entries_) {
    if (!s.empty()) s += ",";
    s += key + "=" + (bits == codec::kTernary ? std::string("ternary") : std::to_string(bits));
  }
  return s;
}

}  // namespace cact
