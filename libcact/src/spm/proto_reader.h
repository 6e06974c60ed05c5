#pragma once
// A minimal protobuf wire-format reader: enough to walk a SentencePiece
// ModelProto without the generated classes (Debian's libsentencepiece-dev ships
// no sentencepiece_model.pb.h). Every read is bounds-checked; a malformed
// message is a cact::Error naming `where`.
#include <cstdint>
#include <string>
#include <string_view>

namespace cact::spm {

struct ProtoField {
  uint32_t number = 0;
  uint8_t wire = 0;        // 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
  uint64_t value = 0;      // varint / fixed32 / fixed64 payload
  std::string_view bytes;  // length-delimited payload
};

class ProtoReader {
 public:
  ProtoReader(std::string_view data, std::string where) : data_(data), where_(std::move(where)) {}
  bool done() const { return pos_ >= data_.size(); }
  ProtoField next();

 private:
  uint64_t varint();
  std::string_view data_;
  std::string where_;
  size_t pos_ = 0;
};

}  // namespace cact::spm
