#pragma once
// An insert-only open-addressing hash index from a key to a non-negative int32
// (a piece id). The tokenizer builds several of these over every piece when it
// is made; std::unordered_map spent most of that time allocating nodes and
// walking chains. Linear probing in one power-of-two array (load <= 1/2), the
// hash's high bits as the home slot, a 32-bit hash tag to skip most compares.
//
// Two kinds of key:
//   FlatIndex<uint64_t>            slots hold the key (16 bytes a slot);
//   FlatIndex<std::string_view, K> slots hold only tag + value (8 bytes): the
//     key of a stored value is K{...}(value), a surface the owner keeps alive
//     (e.g. surfaces[id]), so the table over 8192 pieces is 128 KB, not 384.
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace cact::text {

inline uint64_t flat_hash(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a: pieces are a few bytes long
  for (const char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
  return h;
}
inline uint64_t flat_hash(uint64_t k) { return k ^ (k >> 29); }

// KeyOf for a key stored in the slot itself.
struct StoredKey {};

// KeyOf for ids into a vector of strings, or of records with a `surface`.
template <typename T>
struct SurfaceOf {
  const std::vector<T>* items = nullptr;
  std::string_view operator()(int32_t id) const {
    const T& t = (*items)[static_cast<size_t>(id)];
    if constexpr (std::is_same_v<T, std::string>) {
      return t;
    } else {
      return t.surface;
    }
  }
};

template <typename Key, typename KeyOf = StoredKey>
class FlatIndex {
  static constexpr bool kStored = std::is_same_v<KeyOf, StoredKey>;
  struct KeySlot {
    Key key{};
    uint32_t tag = 0;
    int32_t value = -1;  // -1 = empty
  };
  struct ValueSlot {
    uint32_t tag = 0;
    int32_t value = -1;
  };
  using Slot = std::conditional_t<kStored, KeySlot, ValueSlot>;

 public:
  FlatIndex() = default;
  explicit FlatIndex(KeyOf key_of) : key_of_(key_of) {}

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
  // key and whether this call inserted it. With a KeyOf, key_of(value) must be key.
  std::pair<int32_t, bool> emplace(const Key& key, int32_t value) {
    if (2 * (size_ + 1) > slots_.size()) rehash(slots_.empty() ? 16 : 2 * slots_.size());
    const uint64_t h = flat_hash(key);
    const uint32_t tag = uint32_t(h);
    for (size_t i = home(h);; i = (i + 1) & (slots_.size() - 1)) {
      Slot& s = slots_[i];
      if (s.value < 0) {
        if constexpr (kStored) {
          s = {key, tag, value};
        } else {
          s = {tag, value};
        }
        ++size_;
        return {value, true};
      }
      if (s.tag == tag && key_at(s) == key) return {s.value, false};
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
      if (s.tag == tag && key_at(s) == key) return s.value;
    }
  }
  bool contains(const Key& key) const { return find(key) >= 0; }

 private:
  Key key_at(const Slot& s) const {
    if constexpr (kStored) {
      return s.key;
    } else {
      return key_of_(s.value);
    }
  }
  size_t home(uint64_t h) const { return size_t((h * 0x9E3779B97F4A7C15ull) >> shift_); }
  void rehash(size_t cap) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(cap, Slot{});
    shift_ = 64;
    for (size_t c = cap; c > 1; c >>= 1) --shift_;
    for (const Slot& s : old) {
      if (s.value < 0) continue;
      size_t i = home(flat_hash(key_at(s)));
      while (slots_[i].value >= 0) i = (i + 1) & (cap - 1);
      slots_[i] = s;
    }
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;
  unsigned shift_ = 64;
  [[no_unique_address]] KeyOf key_of_{};
};

}  // namespace cact::text
