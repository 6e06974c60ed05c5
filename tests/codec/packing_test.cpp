// Packing layouts against hand-made byte vectors (FORMAT.md "CQ blob").
#include <doctest/doctest.h>

#include <vector>

#include "cact/codec.h"

using namespace cact::codec;

TEST_CASE("4-bit packing: low nibble is the even column") {
  const uint8_t idx[4] = {0x1, 0xA, 0xF, 0x3};
  uint8_t out[2];
  pack_indices(idx, 4, 4, out);
  CHECK(out[0] == 0xA1);
  CHECK(out[1] == 0x3F);
}

TEST_CASE("2-bit packing: four indices per byte, first in the low bits") {
  const uint8_t idx[8] = {1, 2, 3, 0, 3, 3, 0, 1};
  uint8_t out[2];
  pack_indices(idx, 8, 2, out);
  CHECK(out[0] == uint8_t(1 | 2 << 2 | 3 << 4 | 0 << 6));
  CHECK(out[1] == uint8_t(3 | 3 << 2 | 0 << 4 | 1 << 6));
}

TEST_CASE("1-bit packing: eight indices per byte, LSB first") {
  const uint8_t idx[8] = {1, 0, 0, 0, 0, 0, 0, 1};
  uint8_t out[1];
  pack_indices(idx, 8, 1, out);
  CHECK(out[0] == 0x81);
}

TEST_CASE("3-bit packing is one continuous LSB-first stream across bytes") {
  const uint8_t idx[8] = {7, 1, 6, 2, 5, 3, 4, 0};
  uint8_t out[3];
  pack_indices(idx, 8, 3, out);
  uint32_t stream = 0;
  for (int k = 0; k < 8; ++k) stream |= uint32_t(idx[k]) << (3 * k);
  CHECK(out[0] == (stream & 0xFF));
  CHECK(out[1] == ((stream >> 8) & 0xFF));
  CHECK(out[2] == ((stream >> 16) & 0xFF));
  uint8_t back[8];
  CHECK(unpack_indices(out, 8, 3, back));
  for (int k = 0; k < 8; ++k) CHECK(back[k] == idx[k]);
}

TEST_CASE("ternary crumbs: trits 0,1,2 are stored as crumbs 3,0,1; crumb 2 is rejected") {
  const uint8_t trits[4] = {0, 1, 2, 1};
  uint8_t out[1];
  pack_indices(trits, 4, kTernary, out);
  CHECK(out[0] == uint8_t(3 | 0 << 2 | 1 << 4 | 0 << 6));
  uint8_t back[4];
  CHECK(unpack_indices(out, 4, kTernary, back));
  for (int k = 0; k < 4; ++k) CHECK(back[k] == trits[k]);
  const uint8_t invalid = 2 << 4;
  CHECK_FALSE(unpack_indices(&invalid, 4, kTernary, back));
  CHECK(crumb_to_trit(2) == -1);
}

TEST_CASE("round trip of random indices at every width, whole bytes or a ragged tail") {
  uint32_t state = 12345;
  for (uint32_t bits : {1u, 2u, 3u, 4u, kTernary}) {
    for (size_t n : {size_t(1000), size_t(999), size_t(997), size_t(7), size_t(1)}) {
      CAPTURE(bits);
      CAPTURE(n);
      std::vector<uint8_t> idx(n), back(n);
      for (auto& v : idx) {
        state = state * 1664525u + 1013904223u;
        v = uint8_t((state >> 16) % levels(bits));
      }
      std::vector<uint8_t> packed((idx.size() * index_bits(bits) + 7) / 8);
      pack_indices(idx.data(), idx.size(), bits, packed.data());
      CHECK(unpack_indices(packed.data(), idx.size(), bits, back.data()));
      CHECK(idx == back);
    }
  }
}

TEST_CASE("blob sizes: packed rows then FP16 norms, in padded to the group") {
  CHECK(blob_bytes(64, 128, 4, 128) == 4224);     // license-tiny k_proj
  CHECK(blob_bytes(2048, 64, 4, 128) == 135168);  // license-tiny engram tables, in padded to 128
  CHECK(blob_bytes(96, 768, 2, 128) == 96 * 192 + 96 * 6 * 2);
  CHECK(blob_bytes(10, 100, 5, 128) == 10 * 32 + 10 * 2);  // ternary: 2 bits per index
  CHECK(blob_bytes(1, 128, 6, 128) == 0);
  CHECK(blob_bytes(1, 128, 2, 0) == 0);
}
