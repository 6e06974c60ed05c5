#pragma once
// An insert-only open-addressing hash index from a key (a string_view into
// storage the owner keeps alive, or a 64-bit integer) to a non-negative int32
// (a piece id). The tokenizer builds several of these over every piece when it
// is made; std::unordered_map spent most of that time allocating nodes and
// walking chains. Linear probing in one power-of-two array, the hash's high
// bits as the home slot, a 32-bit hash tag to skip most key compares.
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace cact::text {

inline uint64_t flat_hash(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a: pieces are a few bytes long
  for (const char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
  return h;
}
inline uint64_t flat_hash(uint64_t k) { return k ^ (k >> 29); }

template <typename Key>
class FlatIndex {
 public:
  // Room for n keys without growing.
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    if (cap > slots_.size()) rehash(cap);
  }
  void clear() {
    slots_.clear();
    size_ = 0;
  }
  size_t size() const { return size_; }

  // Stores (key, value) unless key is present. Returns the value stored for
  // key and whether this call inserted it.
  std::pair<int32_t, bool> emplace(const Key& key, int32_t value) {
    if (2 * (size_ + 1) > slots_.size()) rehash(slots_.empty() ? 16 : 2 * slots_.size());
    const uint64_t h = flat_hash(key);
    const uint32_t tag = uint32_t(h);
    for (size_t i = home(h);; i = (i + 1) & (slots_.size() - 1)) {
      Slot& s = slots_[i];
      if (s.value < 0) {
        s = {key, tag, value};
        ++size_;
        return {value, true};
      }
      if (s.tag == tag && s.key == key) return {s.value, false};
    }
  }
  // The value of key, or -1.
  int32_t find(const Key& key) const {
    if (slots_.empty()) return -1;
    const uint64_t h = flat_hash(key);
    const uint32_t tag = uint32_t(h);
    for (size_t i = home(h);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.value < 0) return -1;
      if (s.tag == tag && s.key == key) return s.value;
    }
  }
  bool contains(const Key& key) const { return find(key) >= 0; }

 private:
  struct Slot {
    Key key{};
    uint32_t tag = 0;
    int32_t value = -1;  // -1 = empty
  };
  size_t home(uint64_t h) const { return size_t((h * 0x9E3779B97F4A7C15ull) >> shift_); }
  void rehash(size_t cap) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(cap, Slot{});
    shift_ = 64;
    for (size_t c = cap; c > 1; c >>= 1) --shift_;
    for (const Slot& s : old) {
      if (s.value < 0) continue;
      size_t i = home(flat_hash(s.key));
      while (slots_[i].value >= 0) i = (i + 1) & (cap - 1);
      slots_[i] = s;
    }
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;
  unsigned shift_ = 64;
};

}  // namespace cact::text
