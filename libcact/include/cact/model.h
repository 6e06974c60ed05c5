#pragma once
// A checked, read-only .cact archive: header, codebooks, directory, canon and
// zero-copy views of the blobs. Opening runs every check of FORMAT.md and the
// canon; nothing is read that the checks did not cover.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cact/canon.h"
#include "cact/codec.h"
#include "cact/format.h"
#include "cact/mapped_file.h"

namespace cact {

struct TokenizerModel;

// Every problem of a file (empty = valid). Stops early only where later
// checks would read bytes an earlier failure made untrustworthy.
std::vector<std::string> check_archive(std::span<const uint8_t> file);

class Model;
// NaN and infinite values of a checked model (FP16/FP32 tensors, CQ norms),
// one line per tensor naming the count and the first (empty = all finite).
// Not part of check_archive: it reads every value blob (cact-inspect --check).
std::vector<std::string> check_values(const Model& model);

class Model {
 public:
  // Map and check a file; throws cact::Error with the first problem, prefixed by
  // the path. The per-token blobs are advised to 2 MiB pages (advise_huge_pages).
  static Model open(const std::filesystem::path& path);
  // Check a caller's buffer (which must outlive the Model). `file_mapping`:
  // the buffer is a read-only private mapping of a file (or memfd), whose
  // pages drop_pages may give back.
  static Model from_bytes(std::span<const uint8_t> bytes, bool file_mapping = false);

  const Header& header() const { return header_; }
  std::span<const float> codebooks() const { return codebooks_; }
  std::span<const Record> records() const { return records_; }
  const Record& record(size_t i) const { return records_[i]; }
  const Canon& canon() const { return *canon_; }
  std::span<const uint8_t> bytes() const { return bytes_; }
  std::span<const uint8_t> blob(size_t i) const;
  const std::string& name(size_t i) const { return canon_->specs()[i].name; }
  // "record 37 (layer01.v_proj)".
  std::string label(size_t i) const;
  // Gives back the resident pages of record i's blob, so that a tool reading an
  // archive once, tensor by tensor, holds only the current one (drop_mapped_pages;
  // nothing for from_bytes of ordinary memory). The blob stays readable.
  void drop_pages(size_t i) const;

  // Views. Throw cact::Error if the record's dtype does not fit.
  codec::CqMatrix matrix(size_t i) const;
  std::vector<float> codebook_for(uint32_t bits) const;
  // Every value of a tensor as floats (FP16/FP32 converted, CQ dequantised).
  std::vector<float> values(size_t i) const;
  std::span<const uint8_t> tokenizer_blob() const { return blob(canon_->tokenizer()); }
  // The tokenizer blob as parsed (and checked) when the archive was opened.
  const TokenizerModel& tokenizer_model() const { return *tokenizer_; }
  // Map now every page the forward pass reads for each token (all blobs but the
  // engram tables, of which a token reads a few rows): one madvise
  // (MADV_POPULATE_READ) per run of such blobs, instead of a page fault every
  // few pages during the first prefill. Advisory: false if the system refused
  // (before Linux 5.14, or not Linux), and the pages then fault in as read.
  bool prefault_dense() const;
  // Whether record i is read whole for every token: true for all blobs but the
  // engram tables (gathered a few rows per token). The rule prefault_dense uses.
  bool read_whole_per_token(size_t i) const;

 private:
  Model() = default;
  void load(std::span<const uint8_t> bytes);
  // Paging advice for a mapped file (advisory, errors ignored): MADV_HUGEPAGE
  // on the whole mapping before it is read, then MADV_NOHUGEPAGE on the whole
  // 2 MiB blocks inside the engram tables.
  static void advise_huge_pages(std::span<const uint8_t> mapping);
  void advise_small_tables() const;
  std::shared_ptr<MappedFile> file_;
  bool file_mapping_ = false;  // bytes_ map a file read-only (open, or from_bytes told so)
  std::span<const uint8_t> bytes_;
  Header header_{};
  std::vector<float> codebooks_;
  std::vector<Record> records_;
  std::shared_ptr<const Canon> canon_;
  std::shared_ptr<const TokenizerModel> tokenizer_;
};

}  // namespace cact
