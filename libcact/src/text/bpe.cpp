#include "text/bpe.h"

#include <algorithm>

namespace cact::text {
namespace {

// Code point of the valid UTF-8 sequence at p (n bytes).
uint32_t decode_cp(const char* p, uint32_t n) {
  const auto b = [&](uint32_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(p[i])); };
  switch (n) {
    case 1:
      return b(0);
    case 2:
      return ((b(0) & 0x1Fu) << 6) | (b(1) & 0x3Fu);
    case 3:
      return ((b(0) & 0x0Fu) << 12) | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu);
    default:
      return ((b(0) & 0x07u) << 18) | ((b(1) & 0x3Fu) << 12) | ((b(2) & 0x3Fu) << 6) | (b(3) & 0x3Fu);
  }
}

uint64_t join_key(uint32_t x, uint32_t y) { return (uint64_t{x} << 21) | y; }
uint64_t pair_key(int32_t a, int32_t b) {
  return (uint64_t{static_cast<uint32_t>(a)} << 32) | static_cast<uint32_t>(b);
}

// Max-heap order: higher score first; on equal scores the leftmost pair first.
bool heap_less(const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) {
  if (a.score != b.score) return a.score < b.score;
  return a.left > b.left;
}

void maybe_push(std::string_view chunk, const BpeTables& t, BpeScratch& s, int32_t left, int32_t right) {
  if (left < 0 || right < 0) return;
  const auto& l = s.symbols[static_cast<size_t>(left)];
  const auto& r = s.symbols[static_cast<size_t>(right)];
  const uint32_t len = l.len + r.len;
  if (len > t.max_piece_bytes) return;
  int32_t id = -1;
  if (l.id >= 0 && r.id >= 0) {
    id = t.pair_to_piece.find(pair_key(l.id, r.id));
  } else {  // a side that is not a piece itself: only the string can tell
    id = t.pieces.find(chunk.substr(l.begin, len));
  }
  if (id < 0) return;
  s.heap.push_back(
      {t.scores[static_cast<size_t>(id)], static_cast<uint32_t>(left), static_cast<uint32_t>(right), len, id});
  std::push_heap(s.heap.begin(), s.heap.end(), heap_less);
}

int32_t lookup(const BpeTables& t, std::string_view piece) {
  if (piece.size() == 1 && static_cast<unsigned char>(piece[0]) < 0x80) {
    return t.ascii_piece[static_cast<unsigned char>(piece[0])];
  }
  return t.pieces.find(piece);
}

// BPE on a chunk no merge can leave.
void bpe_chunk(std::string_view chunk, const BpeTables& t, BpeScratch& s, std::vector<int32_t>& out) {
  s.symbols.clear();
  s.heap.clear();
  for (uint32_t i = 0; i < chunk.size();) {
    const uint32_t n = utf8_lead_len(static_cast<unsigned char>(chunk[i]));
    const auto idx = static_cast<int32_t>(s.symbols.size());
    s.symbols.push_back({i, n, idx - 1, -1, lookup(t, chunk.substr(i, n))});
    if (idx > 0) s.symbols[static_cast<size_t>(idx - 1)].next = idx;
    i += n;
  }
  for (size_t i = 1; i < s.symbols.size(); ++i) {
    maybe_push(chunk, t, s, static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
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
    l.id = c.id;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) s.symbols[static_cast<size_t>(r.next)].prev = static_cast<int32_t>(c.left);
    maybe_push(chunk, t, s, l.prev, static_cast<int32_t>(c.left));
    maybe_push(chunk, t, s, static_cast<int32_t>(c.left), l.next);
  }

  for (int32_t i = 0; i >= 0; i = s.symbols[static_cast<size_t>(i)].next) {
    const auto& sym = s.symbols[static_cast<size_t>(i)];
    if (sym.id >= 0) {
      out.push_back(sym.id);
    } else if (t.byte_fallback) {
      for (const char ch : chunk.substr(sym.begin, sym.len)) out.push_back(t.byte_ids[static_cast<unsigned char>(ch)]);
    } else {
      out.push_back(t.unk_id);
    }
  }
}

}  // namespace

void BpeTables::build(const TokenizerModel& model, const std::vector<std::string>& surfaces) {
  const size_t n = model.pieces.size();
  scores.clear();
  pieces = FlatIndex<std::string_view, SurfaceOf<std::string>>(SurfaceOf<std::string>{&surfaces});
  pair_to_piece.clear();
  other_join.clear();
  ascii_join.fill(0);
  byte_ids.fill(-1);
  ascii_piece.fill(-1);
  byte_fallback = model.byte_fallback;
  unk_id = static_cast<int32_t>(model.unk_id);
  max_piece_bytes = 0;
  scores.reserve(n);
  pieces.reserve(n);
  pair_to_piece.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Piece& p = model.pieces[i];
    scores.push_back(p.score);
    const std::string_view s = surfaces[i];
    const auto id = static_cast<int32_t>(i);
    if (p.type == PieceType::Normal || p.type == PieceType::UserDefined) {
      pieces.emplace(s, id);
      max_piece_bytes = std::max(max_piece_bytes, s.size());
      if (s.size() == 1 && static_cast<unsigned char>(s[0]) < 0x80) ascii_piece[static_cast<unsigned char>(s[0])] = id;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const PieceType type = model.pieces[i].type;
    if (type == PieceType::Byte) {
      const std::string_view s = surfaces[i];
      // "<0xNN>", already validated.
      const auto hex = [](char c) { return c <= '9' ? c - '0' : c - 'A' + 10; };
      byte_ids[static_cast<size_t>(hex(s[3]) * 16 + hex(s[4]))] = static_cast<int32_t>(i);
    }
    if (type != PieceType::Normal && type != PieceType::UserDefined) continue;
    const std::string_view s = surfaces[i];
    // Every split at a code point boundary into two pieces, and every adjacent code point pair.
    uint32_t prev_cp = 0;
    for (uint32_t k = 0; k < s.size();) {
      const uint32_t len = utf8_lead_len(static_cast<unsigned char>(s[k]));
      const uint32_t cp = decode_cp(s.data() + k, len);
      if (k > 0) {
        const int32_t a = pieces.find(s.substr(0, k));
        const int32_t b = a < 0 ? -1 : pieces.find(s.substr(k));
        if (b >= 0) pair_to_piece.emplace(pair_key(a, b), static_cast<int32_t>(i));
        if (prev_cp < 128 && cp < 128) {
          const size_t bit = prev_cp * 128 + cp;
          ascii_join[bit / 64] |= uint64_t{1} << (bit % 64);
        } else {
          other_join.emplace(join_key(prev_cp, cp), 0);
        }
      }
      prev_cp = cp;
      k += len;
    }
  }
}

bool BpeTables::may_join(uint32_t x, uint32_t y) const {
  if (x < 128 && y < 128) {
    const size_t bit = x * 128 + y;
    return (ascii_join[bit / 64] >> (bit % 64)) & 1u;
  }
  return other_join.contains(join_key(x, y));
}

void bpe_segment(std::string_view seg, const BpeTables& t, BpeScratch& s, std::vector<int32_t>& out) {
  size_t chunk_begin = 0;
  uint32_t prev_cp = 0;
  for (size_t i = 0; i < seg.size();) {
    const uint32_t n = utf8_lead_len(static_cast<unsigned char>(seg[i]));
    const uint32_t cp = decode_cp(seg.data() + i, n);
    if (i > chunk_begin && !t.may_join(prev_cp, cp)) {
      bpe_chunk(seg.substr(chunk_begin, i - chunk_begin), t, s, out);
      chunk_begin = i;
    }
    prev_cp = cp;
    i += n;
  }
  if (chunk_begin < seg.size()) bpe_chunk(seg.substr(chunk_begin), t, s, out);
}

}  // namespace cact::text
