#include "cact/model.h"

#include <cstring>

#include "cact/error.h"
#include "cact/half.h"
#include "cact/mapped_file.h"
#include "cact/tokenizer.h"
#include "model/checked_parts.h"

namespace cact {

Model Model::open(const std::filesystem::path& path) {
  Model m;
  m.file_ = std::make_shared<MappedFile>(path);
  m.file_mapping_ = true;
  advise_huge_pages(m.file_->bytes());
  try {
    m.load(m.file_->bytes());
  } catch (const Error& e) {
    fail(path.string() + ": " + e.what());
  }
  m.advise_small_tables();
  return m;
}

Model Model::from_bytes(std::span<const uint8_t> bytes, bool file_mapping) {
  Model m;
  m.file_mapping_ = file_mapping;
  m.load(bytes);
  return m;
}

void Model::load(std::span<const uint8_t> bytes) {
  CheckedParts parts;
  const std::vector<std::string> problems = check_archive(bytes, &parts);
  if (!problems.empty()) {
    std::string message = problems.front();
    if (problems.size() > 1)
      message += " (and " + std::to_string(problems.size() - 1) + " more problems; cact-inspect --check lists them)";
    fail(message);
  }
  bytes_ = bytes;
  header_ = decode_header(bytes);
  codebooks_.resize(header_.codebook_len);
  std::memcpy(codebooks_.data(), bytes.data() + kHeaderBytes, codebooks_.size() * 4);
  records_.resize(header_.num_tensors);
  const uint8_t* p = bytes.data() + kHeaderBytes + codebooks_.size() * 4;
  for (size_t i = 0; i < records_.size(); ++i) records_[i] = decode_record(p + i * kRecordBytes);
  canon_ = std::move(parts.canon);
  tokenizer_ = std::move(parts.tokenizer);
}

std::span<const uint8_t> Model::blob(size_t i) const {
  const Record& r = records_.at(i);
  return bytes_.subspan(r.offset, r.nbytes);
}

void Model::drop_pages(size_t i) const {
  if (file_mapping_) drop_mapped_pages(blob(i));
}

std::string Model::label(size_t i) const { return "record " + std::to_string(i) + " (" + name(i) + ")"; }

codec::CqMatrix Model::matrix(size_t i) const {
  const Record& r = records_.at(i);
  if (r.dtype != Dtype::CQ) fail(label(i) + " is " + kind_name(r) + ", not a CQ matrix");
  return codec::view_matrix(blob(i), r.shape[0], r.shape[1], r.bits, r.group);
}

std::vector<float> Model::codebook_for(uint32_t bits) const { return codec::codebook_for(bits, codebooks_); }

std::vector<float> Model::values(size_t i) const {
  const Record& r = records_.at(i);
  const auto b = blob(i);
  std::vector<float> out;
  switch (r.dtype) {
    case Dtype::FP16:
      out.resize(r.elements());
      halves_to_floats(b.data(), out.size(), out.data());
      break;
    case Dtype::FP32:
      out.resize(r.elements());
      std::memcpy(out.data(), b.data(), out.size() * 4);
      break;
    case Dtype::CQ: {
      const codec::CqMatrix m = matrix(i);
      const std::vector<float> cb = codebook_for(r.bits);
      out.resize(size_t(m.out) * m.in);
      for (uint32_t row = 0; row < m.out; ++row) codec::dequantize_row(m, row, cb, out.data() + size_t(row) * m.in);
      break;
    }
    case Dtype::RAW:
      fail(label(i) + " is RAW and has no numeric values");
  }
  return out;
}

}  // namespace cact
