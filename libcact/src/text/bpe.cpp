#include "text/bpe.h"

#include <algorithm>

namespace cact::text {
namespace {

// Max-heap order: higher score first; on equal scores the leftmost pair first.
bool heap_less(const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) {
  if (a.score != b.score) return a.score < b.score;
  return a.left > b.left;
}

void maybe_push(std::string_view seg, const BpeTables& t, BpeScratch& s, int32_t left, int32_t right) {
  if (left < 0 || right < 0) return;
  const auto& l = s.symbols[static_cast<size_t>(left)];
  const auto& r = s.symbols[static_cast<size_t>(right)];
  const uint32_t len = l.len + r.len;
  if (len > t.max_piece_bytes) return;
  const auto it = t.pieces.find(seg.substr(l.begin, len));
  if (it == t.pieces.end()) return;
  s.heap.push_back({t.scores[static_cast<size_t>(it->second)], static_cast<uint32_t>(left),
                    static_cast<uint32_t>(right), len});
  std::push_heap(s.heap.begin(), s.heap.end(), heap_less);
}

}  // namespace

void bpe_segment(std::string_view seg, const BpeTables& t, BpeScratch& s, std::vector<int32_t>& out) {
  if (seg.empty()) return;
  // One symbol per code point, doubly linked.
  s.symbols.clear();
  s.heap.clear();
  for (uint32_t i = 0; i < seg.size();) {
    const uint32_t n = std::min<uint32_t>(utf8_lead_len(static_cast<unsigned char>(seg[i])),
                                          static_cast<uint32_t>(seg.size()) - i);
    const auto idx = static_cast<int32_t>(s.symbols.size());
    s.symbols.push_back({i, n, idx - 1, -1});
    if (idx > 0) s.symbols[static_cast<size_t>(idx - 1)].next = idx;
    i += n;
  }
  for (size_t i = 1; i < s.symbols.size(); ++i) {
    maybe_push(seg, t, s, static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
  }

  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), heap_less);
    const BpeScratch::Candidate c = s.heap.back();
    s.heap.pop_back();
    auto& l = s.symbols[c.left];
    auto& r = s.symbols[c.right];
    // Stale: one side was merged away, or one side grew since the pair was pushed.
    if (l.len == 0 || r.len == 0 || l.next != static_cast<int32_t>(c.right) || l.len + r.len != c.len) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) s.symbols[static_cast<size_t>(r.next)].prev = static_cast<int32_t>(c.left);
    maybe_push(seg, t, s, l.prev, static_cast<int32_t>(c.left));
    maybe_push(seg, t, s, static_cast<int32_t>(c.left), l.next);
  }

  for (int32_t i = 0; i >= 0; i = s.symbols[static_cast<size_t>(i)].next) {
    const auto& sym = s.symbols[static_cast<size_t>(i)];
    const std::string_view piece = seg.substr(sym.begin, sym.len);
    const auto it = t.pieces.find(piece);
    if (it != t.pieces.end()) {
      out.push_back(it->second);
    } else if (t.byte_fallback) {
      for (const char ch : piece) out.push_back(t.byte_ids[static_cast<unsigned char>(ch)]);
    } else {
      out.push_back(t.unk_id);
    }
  }
}

}  // namespace cact::text
