#include "cact/writer.h"

#include <cstring>
#include <functional>

#include "cact/atomic_file.h"

namespace cact {
namespace {

// Emits the archive through two callbacks so the file and in-memory writers
// share one layout.
void emit(Header header, std::span<const float> codebooks, std::span<const TensorData> tensors,
          const std::function<void(std::span<const uint8_t>)>& write, const std::function<void(uint64_t)>& zeros) {
  header.num_tensors = uint32_t(tensors.size());
  header.codebook_len = uint32_t(codebooks.size());
  std::vector<uint8_t> head(kHeaderBytes + codebooks.size() * 4 + tensors.size() * kRecordBytes);
  encode_header(header, head.data());
  std::memcpy(head.data() + kHeaderBytes, codebooks.data(), codebooks.size() * 4);
  uint64_t position = head.size();
  std::vector<uint64_t> offsets(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    Record r = tensors[i].record;
    offsets[i] = align_up(position, kBlobAlign);
    r.offset = offsets[i];
    r.nbytes = tensors[i].bytes.size();
    encode_record(r, head.data() + kHeaderBytes + codebooks.size() * 4 + i * kRecordBytes);
    position = r.offset + r.nbytes;
  }
  write(head);
  position = head.size();
  for (size_t i = 0; i < tensors.size(); ++i) {
    zeros(offsets[i] - position);
    write(tensors[i].bytes);
    position = offsets[i] + tensors[i].bytes.size();
  }
}

}  // namespace

void write_archive(const std::filesystem::path& path, Header header, std::span<const float> codebooks,
                   std::span<const TensorData> tensors, std::span<const std::filesystem::path> inputs) {
  AtomicFile file(path, inputs);
  emit(
      header, codebooks, tensors, [&](std::span<const uint8_t> b) { file.write(b); },
      [&](uint64_t n) { file.write_zeros(n); });
  file.commit();
}

std::vector<uint8_t> archive_bytes(Header header, std::span<const float> codebooks,
                                   std::span<const TensorData> tensors) {
  std::vector<uint8_t> out;
  emit(
      header, codebooks, tensors, [&](std::span<const uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); },
      [&](uint64_t n) { out.insert(out.end(), n, 0); });
  return out;
}

}  // namespace cact
