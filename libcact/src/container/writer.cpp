#include "cact/writer.h"

#include <algorithm>
#include <cstring>

#include "cact/atomic_file.h"
#include "cact/error.h"

namespace cact {

ArchiveStream::ArchiveStream(Sink sink, Header header, std::span<const float> codebooks, std::vector<Record> records)
    : sink_(std::move(sink)), records_(std::move(records)) {
  header.num_tensors = uint32_t(records_.size());
  header.codebook_len = uint32_t(codebooks.size());
  std::vector<uint8_t> head(kHeaderBytes + codebooks.size() * 4 + records_.size() * kRecordBytes);
  encode_header(header, head.data());
  std::memcpy(head.data() + kHeaderBytes, codebooks.data(), codebooks.size() * 4);
  uint64_t end = head.size();
  for (size_t i = 0; i < records_.size(); ++i) {
    Record& r = records_[i];
    r.offset = align_up(end, kBlobAlign);
    encode_record(r, head.data() + kHeaderBytes + codebooks.size() * 4 + i * kRecordBytes);
    end = r.offset + r.nbytes;
  }
  file_bytes_ = end;
  sink_(head);
  position_ = head.size();
}

void ArchiveStream::add(std::span<const uint8_t> blob) {
  if (next_ == records_.size()) fail("archive writer: a blob past the last of " + std::to_string(next_) + " records");
  const Record& r = records_[next_];
  if (blob.size() != r.nbytes) {
    fail("archive writer: blob " + std::to_string(next_) + " has " + std::to_string(blob.size()) +
         " bytes, its record says " + std::to_string(r.nbytes));
  }
  static const uint8_t kZeros[kBlobAlign] = {};
  sink_({kZeros, size_t(r.offset - position_)});
  sink_(blob);
  position_ = r.offset + r.nbytes;
  ++next_;
}

void ArchiveStream::finish() const {
  if (next_ != records_.size()) {
    fail("archive writer: " + std::to_string(next_) + " of " + std::to_string(records_.size()) + " blobs given");
  }
}

namespace {

void emit(Header header, std::span<const float> codebooks, std::span<const TensorData> tensors,
          const ArchiveStream::Sink& sink) {
  std::vector<Record> records(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    records[i] = tensors[i].record;
    records[i].nbytes = tensors[i].bytes.size();
  }
  ArchiveStream stream(sink, header, codebooks, std::move(records));
  for (const TensorData& t : tensors) stream.add(t.bytes);
}

}  // namespace

void write_archive(const std::filesystem::path& path, Header header, std::span<const float> codebooks,
                   std::span<const TensorData> tensors, std::span<const std::filesystem::path> inputs) {
  AtomicFile file(path, inputs);
  emit(header, codebooks, tensors, [&](std::span<const uint8_t> b) { file.write(b); });
  file.commit();
}

std::vector<uint8_t> archive_bytes(Header header, std::span<const float> codebooks,
                                   std::span<const TensorData> tensors) {
  std::vector<uint8_t> out;
  emit(header, codebooks, tensors, [&](std::span<const uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); });
  return out;
}

}  // namespace cact
