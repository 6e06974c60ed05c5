#include "chat/vocab_surfaces.h"

#include <algorithm>

#include "base/utf8.h"

namespace cact::chat {

namespace {

constexpr std::array<std::string_view, kMarkerCount> kMarkerSurfaces = {
    "<|im_start|>", "<|im_end|>",  "<think>",      "</think>",      "<tools>",
    "</tools>",     "<tool_call>", "</tool_call>", "<tool_result>", "</tool_result>"};

// What an id prints: its surface with ▁ as a space, a BYTE piece's byte, or
// nothing for CONTROL/UNKNOWN pieces.
std::string rendered(const Tokenizer& tok, int32_t id) {
  const std::string_view raw = tok.piece_bytes(id);
  const PieceType type = tok.model().pieces[size_t(id)].type;
  if (type != PieceType::Normal && type != PieceType::UserDefined) return std::string(raw);
  std::string out;
  for (size_t i = 0; i < raw.size();) {
    if (raw.substr(i).starts_with(kSpaceMark)) {
      out += ' ';
      i += kSpaceMark.size();
    } else {
      out += raw[i++];
    }
  }
  return out;
}

// Code points of `bytes` when it may stand anywhere inside a JSON string's
// quotes, else 0.
uint32_t plain_string_code_points(std::string_view bytes) {
  uint32_t cps = 0;
  for (size_t i = 0; i < bytes.size(); ++cps) {
    const auto c = static_cast<uint8_t>(bytes[i]);
    if (c == '"' || c == '\\' || c < 0x20) return 0;
    const size_t len = valid_utf8_len(bytes.substr(i));
    if (len == 0) return 0;
    i += len;
  }
  return cps;
}

}  // namespace

std::string_view marker_surface(Marker m) { return kMarkerSurfaces[size_t(m)]; }

MarkerGuard::MarkerGuard() {
  // The trie of the marker surfaces; node 0 is the root.
  std::vector<std::array<uint8_t, 256>> child(1);
  std::vector<bool> complete(1, false);
  for (const std::string_view surface : kMarkerSurfaces) {
    size_t node = 0;
    for (const char ch : surface) {
      const auto c = static_cast<uint8_t>(ch);
      if (child[node][c] == 0) {
        child[node][c] = static_cast<uint8_t>(child.size());
        child.emplace_back();
        complete.push_back(false);
      }
      node = child[node][c];
    }
    complete[node] = true;
  }
  const uint8_t after_lt = child[0]['<'];
  table_.assign(child.size() * 256, 0);
  extensions_.resize(child.size());
  for (size_t node = 0; node < child.size(); ++node) {
    for (size_t c = 0; c < 256; ++c) {
      const uint8_t next = child[node][c];
      uint8_t to = c == '<' ? after_lt : 0;
      if (next != 0) {
        to = complete[next] ? kSpelled : next;
        if (node != 0) extensions_[node].push_back(static_cast<uint8_t>(c));
      }
      table_[node * 256 + c] = to;
    }
  }
}

uint8_t MarkerGuard::run(uint8_t state, std::string_view bytes) const {
  for (const char c : bytes) {
    state = step(state, static_cast<uint8_t>(c));
    if (state == kSpelled) break;
  }
  return state;
}

VocabSurfaces::VocabSurfaces(const Tokenizer& tok) {
  const size_t n = tok.size();
  kinds_.assign(n, PieceKind::none);
  markers_of_.assign(n, Marker::im_start);
  offsets_.reserve(n + 1);
  marker_ids_.fill(-1);
  eos_id_ = static_cast<int32_t>(tok.model().eos_id);
  for (size_t m = 0; m < kMarkerCount; ++m) {
    const int32_t id = tok.find(kMarkerSurfaces[m]);
    if (id >= 0 && tok.model().pieces[size_t(id)].type == PieceType::UserDefined) {
      marker_ids_[m] = id;
      kinds_[size_t(id)] = PieceKind::marker;
      markers_of_[size_t(id)] = static_cast<Marker>(m);
    }
  }
  std::vector<std::vector<int32_t>> buckets(256);
  std::vector<std::pair<uint32_t, int32_t>> plain;  // (code points, id)
  text_without_lt_.assign(n, 0);
  plain_tail_cp_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<int32_t>(i);
    offsets_.push_back(static_cast<uint32_t>(bytes_.size()));
    if (kinds_[i] == PieceKind::marker) continue;
    if (id == eos_id_) {
      kinds_[i] = PieceKind::eos;
      continue;
    }
    const std::string b = rendered(tok, id);
    if (b.empty()) continue;
    kinds_[i] = PieceKind::text;
    bytes_ += b;
    const auto first = static_cast<uint8_t>(b[0]);
    buckets[first].push_back(id);
    if (b.size() == 1) single_byte_[first] = 1;
    if (b == "\n") newlines_.push_back(id);
    if (b.find('<') == std::string::npos) {
      text_without_lt_[i] = 1;
    } else {
      holding_lt_.push_back(id);
    }
    plain_tail_cp_[i] = plain_string_code_points(std::string_view(b).substr(1));
    if (const uint32_t cps = plain_string_code_points(b); cps > 0) {
      plain.emplace_back(cps, id);
    } else {
      not_plain_string_.push_back(id);
    }
  }
  offsets_.push_back(static_cast<uint32_t>(bytes_.size()));
  for (size_t c = 0; c < 256; ++c) {
    first_byte_offsets_[c] = static_cast<uint32_t>(by_first_byte_.size());
    by_first_byte_.insert(by_first_byte_.end(), buckets[c].begin(), buckets[c].end());
  }
  first_byte_offsets_[256] = static_cast<uint32_t>(by_first_byte_.size());
  for (size_t i = 0; i < n; ++i) {
    if (kinds_[i] == PieceKind::text) sorted_ids_.push_back(static_cast<int32_t>(i));
  }
  std::sort(sorted_ids_.begin(), sorted_ids_.end(), [&](int32_t a, int32_t b) { return bytes(a) < bytes(b); });
  trie_.resize(1);
  build_trie(0, 0, sorted_ids_.size(), 0);
  std::stable_sort(plain.begin(), plain.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const uint32_t max_cp = plain.empty() ? 0 : plain.back().first;
  plain_cp_offsets_.assign(size_t{max_cp} + 2, 0);
  for (const auto& [cps, id] : plain) plain_by_cp_.push_back(id);
  for (uint32_t c = 0, k = 0; c <= max_cp + 1; ++c) {
    while (k < plain.size() && plain[k].first < c) ++k;
    plain_cp_offsets_[c] = k;
  }
}

// The pieces sorted_ids_[lo, hi) share their first `depth` bytes (the path to
// `node`); those no longer than that end here, the rest go to one child per
// next byte, the children allocated side by side before any is filled.
void VocabSurfaces::build_trie(size_t node, size_t lo, size_t hi, size_t depth) {
  size_t end_here = lo;
  while (end_here < hi && bytes(sorted_ids_[end_here]).size() == depth) ++end_here;
  trie_[node].first_id = static_cast<uint32_t>(lo);
  trie_[node].id_count = static_cast<uint32_t>(end_here - lo);
  trie_[node].subtree_end = static_cast<uint32_t>(hi);
  std::vector<std::pair<size_t, size_t>> groups;
  for (size_t i = end_here; i < hi;) {
    size_t j = i + 1;
    while (j < hi && bytes(sorted_ids_[j])[depth] == bytes(sorted_ids_[i])[depth]) ++j;
    groups.emplace_back(i, j);
    i = j;
  }
  const size_t first = trie_.size();
  trie_[node].first_child = static_cast<uint32_t>(first);
  trie_[node].child_count = static_cast<uint32_t>(groups.size());
  trie_.resize(first + groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    trie_[first + g].byte = static_cast<uint8_t>(bytes(sorted_ids_[groups[g].first])[depth]);
    build_trie(first + g, groups[g].first, groups[g].second, depth + 1);
  }
}

std::span<const int32_t> VocabSurfaces::plain_string(uint32_t min_cp, uint32_t max_cp) const {
  const auto top = static_cast<uint32_t>(plain_cp_offsets_.size() - 1);  // one past the longest
  min_cp = std::min(min_cp, top);
  max_cp = std::min(max_cp, top - 1);
  if (min_cp > max_cp) return {};
  const uint32_t begin = plain_cp_offsets_[min_cp], end = plain_cp_offsets_[max_cp + 1];
  return std::span(plain_by_cp_).subspan(begin, end - begin);
}

}  // namespace cact::chat
