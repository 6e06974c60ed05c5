// Geometry JSON <-> Header (docs/INTERCHANGE.md).
#include "cact/geometry_json.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cact/atomic_file.h"
#include "cact/error.h"
#include "cact/json_input.h"
#include "cact/mapped_file.h"
#include "cact/validate.h"

namespace cact {

namespace {

// A geometry file is about 1 KB; anything near this is not one.
constexpr size_t kMaxGeometryBytes = size_t(1) << 20;

// Header field indices (FORMAT.md).
constexpr size_t kFirstGeometryField = 3;  // after tag, num_tensors, codebook_len
constexpr size_t kGlobalMaskLo = 17, kGlobalMaskHi = 18;
constexpr size_t kNumOrders = 26, kOrders = 27, kNumSites = 31, kSites = 32, kRopeTheta = 48;

void set_field(Header& h, size_t index, uint32_t value) {
  uint8_t raw[kHeaderBytes];
  encode_header(h, raw);
  std::memcpy(raw + 4 * index, &value, 4);
  h = decode_header({raw, kHeaderBytes});
}
uint32_t field_value(const Header& h, size_t index) {
  uint8_t raw[kHeaderBytes];
  encode_header(h, raw);
  uint32_t v;
  std::memcpy(&v, raw + 4 * index, 4);
  return v;
}

// The JSON keys in output order.
std::vector<std::string> geometry_keys() {
  std::vector<std::string> keys;
  for (size_t i = kFirstGeometryField; i < kHeaderFields; ++i) {
    if (i == kGlobalMaskLo)
      keys.emplace_back("global_layers");
    else if (i == kNumOrders)
      keys.emplace_back("engram_orders");
    else if (i == kNumSites)
      keys.emplace_back("engram_sites");
    else if (i == kGlobalMaskHi || (i >= kOrders && i < kNumSites) || (i >= kSites && i < kRopeTheta))
      continue;
    else
      keys.emplace_back(header_field_name(i));
  }
  return keys;
}

uint32_t get_u32(const Json& j, const std::string& who) {
  if (!j.is_number_unsigned()) fail(who + " is " + json_type(j) + ", not a non-negative integer");
  const uint64_t v = j.get<uint64_t>();
  if (v > 0xFFFFFFFFull) fail(who + " " + std::to_string(v) + " does not fit in 32 bits");
  return uint32_t(v);
}

std::vector<uint32_t> get_list(const Json& j, const std::string& who, size_t max_len) {
  if (!j.is_array()) fail(who + " is " + json_type(j) + ", not a list");
  if (j.size() > max_len)
    fail(who + " has " + std::to_string(j.size()) + " entries, at most " + std::to_string(max_len) + " fit the header");
  std::vector<uint32_t> out;
  for (size_t i = 0; i < j.size(); ++i) out.push_back(get_u32(j[i], who + "[" + std::to_string(i) + "]"));
  return out;
}

}  // namespace

std::string geometry_to_json(const Header& h) {
  Json j = Json::object();
  for (size_t i = kFirstGeometryField; i < kHeaderFields; ++i) {
    if (i == kGlobalMaskLo) {
      Json layers = Json::array();
      for (uint32_t l = 0; l < 64; ++l) {
        const uint32_t mask = l < 32 ? h.global_mask_lo : h.global_mask_hi;
        if ((mask >> (l % 32)) & 1u) layers.push_back(l);
      }
      j["global_layers"] = layers;
    } else if (i == kNumOrders) {
      Json orders = Json::array();
      for (uint32_t k = 0; k < h.num_engram_orders && k < 4; ++k) orders.push_back(h.engram_orders[k]);
      j["engram_orders"] = orders;
    } else if (i == kNumSites) {
      Json sites = Json::array();
      for (uint32_t k = 0; k < h.num_engram_sites && k < 16; ++k) sites.push_back(h.engram_sites[k]);
      j["engram_sites"] = sites;
    } else if (i == kRopeTheta) {
      j["rope_theta"] = double(h.rope_theta);  // shortest text that reads back as the same float
    } else if (i == kGlobalMaskHi || (i >= kOrders && i < kNumSites) || (i >= kSites && i < kRopeTheta)) {
      continue;
    } else {
      j[header_field_name(i)] = field_value(h, i);
    }
  }
  // One key per line; short lists stay on one line for readability.
  std::string out = "{\n";
  bool first = true;
  for (const auto& [key, value] : j.items()) {
    if (!first) out += ",\n";
    first = false;
    out += "  " + Json(key).dump() + ": " + value.dump();
  }
  return out + "\n}\n";
}

Header geometry_from_json(std::string_view text, const std::string& source) {
  const Json j = parse_json_limited(text, source, kMaxGeometryBytes);
  if (!j.is_object()) fail(source + ": the geometry must be a JSON object");
  const std::vector<std::string> keys = geometry_keys();
  for (const auto& [key, value] : j.items()) {
    (void)value;
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    if (key == "tag" || key == "num_tensors" || key == "codebook_len") {
      fail(source + ": key \"" + key + "\" is not part of a geometry (the writer sets it)");
    }
    if (key == "global_mask_lo" || key == "global_mask_hi")
      fail(source + ": key \"" + key + "\" is given as \"global_layers\", a list of layers");
    if (key == "num_engram_orders" || key == "num_engram_sites") {
      fail(source + ": key \"" + key + "\" is implied by the length of \"" +
           (key == "num_engram_orders" ? "engram_orders" : "engram_sites") + "\"");
    }
    fail(source + ": unknown key \"" + key + "\"");
  }
  std::string missing;
  for (const std::string& key : keys) {
    if (!j.contains(key)) missing += (missing.empty() ? "" : ", ") + key;
  }
  if (!missing.empty())
    fail(source + ": missing key" + (missing.find(',') != std::string::npos ? "s " : " ") + missing);

  Header h;
  h.tag = kTagNeedle3;
  h.codebook_len = 28;
  h.num_tensors = 0;
  for (size_t i = kFirstGeometryField; i < kHeaderFields; ++i) {
    if (i == kGlobalMaskLo) {
      const auto layers = get_list(j["global_layers"], source + ": global_layers", 64);
      for (size_t k = 0; k < layers.size(); ++k) {
        const std::string who = source + ": global_layers[" + std::to_string(k) + "] " + std::to_string(layers[k]);
        if (layers[k] >= 64) fail(who + " is past the 64 layers the header can mark");
        if (k > 0 && layers[k] <= layers[k - 1])
          fail(who + " is not above the entry before it (ascending, no repeats)");
        h.set_global(layers[k], true);
      }
    } else if (i == kNumOrders) {
      const auto orders = get_list(j["engram_orders"], source + ": engram_orders", 4);
      h.num_engram_orders = uint32_t(orders.size());
      for (size_t k = 0; k < orders.size(); ++k) h.engram_orders[k] = orders[k];
    } else if (i == kNumSites) {
      const auto sites = get_list(j["engram_sites"], source + ": engram_sites", 16);
      h.num_engram_sites = uint32_t(sites.size());
      for (size_t k = 0; k < sites.size(); ++k) h.engram_sites[k] = sites[k];
    } else if (i == kRopeTheta) {
      const Json& v = j["rope_theta"];
      if (!v.is_number()) fail(source + ": rope_theta is " + std::string(v.type_name()) + ", not a number");
      const double d = v.get<double>();
      if (!std::isfinite(d) || std::fabs(d) > 3.4e38)
        fail(source + ": rope_theta " + v.dump() + " is not a finite float");
      h.rope_theta = float(d);
    } else if (i == kGlobalMaskHi || (i >= kOrders && i < kNumSites) || (i >= kSites && i < kRopeTheta)) {
      continue;
    } else {
      set_field(h, i, get_u32(j[header_field_name(i)], source + ": " + header_field_name(i)));
    }
  }
  for (uint32_t l = 0; l < 64; ++l) {
    const uint32_t mask = l < 32 ? h.global_mask_lo : h.global_mask_hi;
    if (((mask >> (l % 32)) & 1u) && l >= h.num_layers) {
      fail(source + ": global_layers names layer " + std::to_string(l) + ", not below num_layers " +
           std::to_string(h.num_layers));
    }
  }
  Header checked = h;
  checked.num_tensors = 1;  // the writer's; any valid count will do for the geometry checks
  const auto problems = check_header(checked);
  if (!problems.empty()) {
    std::string message = problems.front();
    if (message.starts_with("header: ")) message = message.substr(8);
    if (problems.size() > 1) message += " (and " + std::to_string(problems.size() - 1) + " more)";
    fail(source + ": " + message);
  }
  return h;
}

Header read_geometry_file(const std::filesystem::path& path) {
  return geometry_from_json(read_regular_file(path, kMaxGeometryBytes), path.string());
}

void write_geometry_file(const std::filesystem::path& path, const Header& h,
                         std::span<const std::filesystem::path> inputs) {
  const std::string text = geometry_to_json(h);
  AtomicFile file(path, inputs);
  file.write({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  file.commit();
}

}  // namespace cact
