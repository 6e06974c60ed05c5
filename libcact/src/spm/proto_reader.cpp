#include "spm/proto_reader.h"

#include "cact/error.h"

namespace cact::spm {

uint64_t ProtoReader::varint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= data_.size()) fail(where_ + ": truncated varint at byte " + std::to_string(pos_));
    const auto b = static_cast<uint8_t>(data_[pos_++]);
    v |= static_cast<uint64_t>(b & 0x7Fu) << shift;
    if ((b & 0x80u) == 0) return v;
  }
  fail(where_ + ": varint longer than 10 bytes at byte " + std::to_string(pos_));
}

ProtoField ProtoReader::next() {
  const size_t start = pos_;
  const uint64_t key = varint();
  ProtoField f;
  f.wire = static_cast<uint8_t>(key & 7u);
  if ((key >> 3) == 0 || (key >> 3) > 0x1FFFFFFFu) {
    fail(where_ + ": bad field number in key at byte " + std::to_string(start));
  }
  f.number = static_cast<uint32_t>(key >> 3);
  auto fixed = [&](size_t n) {
    if (data_.size() - pos_ < n) fail(where_ + ": truncated field " + std::to_string(f.number));
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  };
  switch (f.wire) {
    case 0:
      f.value = varint();
      break;
    case 1:
      f.value = fixed(8);
      break;
    case 5:
      f.value = fixed(4);
      break;
    case 2: {
      const uint64_t len = varint();
      if (len > data_.size() - pos_) {
        fail(where_ + ": field " + std::to_string(f.number) + " length " + std::to_string(len) +
             " runs past the end of the message");
      }
      f.bytes = data_.substr(pos_, static_cast<size_t>(len));
      pos_ += static_cast<size_t>(len);
      break;
    }
    default:
      fail(where_ + ": field " + std::to_string(f.number) + " has unsupported wire type " + std::to_string(f.wire));
  }
  return f;
}

}  // namespace cact::spm
