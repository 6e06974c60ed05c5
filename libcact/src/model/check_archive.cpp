// The full check of an archive: structure, canon, ternary crumbs, tokenizer.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "cact/canon.h"
#include "cact/codec.h"
#include "cact/error.h"
#include "cact/model.h"
#include "cact/tokenizer.h"
#include "cact/validate.h"
#include "model/checked_parts.h"

namespace cact {

namespace {
std::vector<float> read_codebooks(const Header& h, std::span<const uint8_t> file) {
  std::vector<float> cb(h.codebook_len);
  std::memcpy(cb.data(), file.data() + kHeaderBytes, cb.size() * 4);
  return cb;
}

std::vector<Record> read_records(const Header& h, std::span<const uint8_t> file) {
  std::vector<Record> records(h.num_tensors);
  const uint8_t* p = file.data() + kHeaderBytes + size_t(h.codebook_len) * 4;
  for (size_t i = 0; i < records.size(); ++i) records[i] = decode_record(p + i * kRecordBytes);
  return records;
}

// A ternary blob whose packed crumbs include the invalid value 2.
bool has_invalid_crumb(std::span<const uint8_t> packed) {
  for (uint8_t byte : packed) {
    for (int shift = 0; shift < 8; shift += 2) {
      if (((byte >> shift) & 3) == 2) return true;
    }
  }
  return false;
}
// Empty when `blob` (n FP32 values) is a permutation of 0..n-1, else what breaks it.
std::string permutation_problem(std::span<const uint8_t> blob, uint32_t n) {
  std::vector<bool> seen(n, false);
  for (uint32_t k = 0; k < n && size_t(k) * 4 + 4 <= blob.size(); ++k) {
    float f;
    std::memcpy(&f, blob.data() + size_t(k) * 4, 4);
    const bool index = f >= 0.0f && f < float(n) && std::floor(f) == f;
    if (!index || seen[size_t(f)]) {
      char value[32];
      std::snprintf(value, sizeof value, "%g", double(f));
      return "entry " + std::to_string(k) + " (" + value + ") " +
             (index ? "repeats an earlier entry" : "is not an integer in 0.." + std::to_string(n - 1)) +
             ": not a permutation of 0.." + std::to_string(n - 1);
    }
    seen[size_t(f)] = true;
  }
  return {};
}
// Where a file whose directory describes a well-formed layout ends: every
// blob at the next 64-byte boundary after the previous one, of the size its
// dtype and shape imply. 0 when the directory describes no such layout.
uint64_t layout_end(std::span<const Record> records, uint64_t dir_end) {
  uint64_t end = dir_end;
  for (const Record& r : records) {
    const uint64_t implied = implied_nbytes(r);
    if (implied == 0 || implied != r.nbytes || r.offset != align_up(end, kBlobAlign)) return 0;
    if (r.nbytes > UINT64_MAX - r.offset) return 0;
    end = r.offset + r.nbytes;
  }
  return end;
}
}  // namespace

std::vector<std::string> check_archive(std::span<const uint8_t> file) { return check_archive(file, nullptr); }

std::vector<std::string> check_archive(std::span<const uint8_t> file, CheckedParts* parts) {
  if (file.size() < kHeaderBytes) {
    if (file.size() >= 4) {
      uint32_t tag;
      std::memcpy(&tag, file.data(), 4);
      if (tag == kTagNeedle2) {
        Header h;
        h.tag = tag;
        return check_header(h);
      }
    }
    return {"file: " + std::to_string(file.size()) + " bytes, shorter than the 196-byte header"};
  }
  const Header h = decode_header(file);
  std::vector<std::string> problems = check_header(h);
  if (!problems.empty()) return problems;
  const uint64_t dir_end = directory_end(h);
  if (dir_end > file.size()) {
    return {"file: " + std::to_string(file.size()) + " bytes, but header, codebooks and " +
            std::to_string(h.num_tensors) + " directory records need " + std::to_string(dir_end)};
  }
  const std::vector<float> codebooks = read_codebooks(h, file);
  const std::vector<Record> records = read_records(h, file);
  // A sound directory whose blobs run past the end: a cut file (an interrupted
  // download or copy). That is the one problem to report; what else would
  // fail (blobs past the end, the placement after them, the canon's reads)
  // follows from it.
  const uint64_t whole = layout_end(records, dir_end);
  if (whole > file.size()) {
    problems.push_back("truncated: " + std::to_string(file.size()) + " of " + std::to_string(whole) + " bytes");
    for (auto& p : check_codebooks(codebooks)) problems.push_back(p);
    return problems;
  }
  for (auto& p : check_codebooks(codebooks)) problems.push_back(p);
  // Names for messages come from the canon when it can be derived.
  std::shared_ptr<Canon> canon;
  std::string canon_problem;
  try {
    canon = std::make_shared<Canon>(Canon::derive(h, records, file));
  } catch (const Error& e) {
    canon_problem = e.what();
  }
  auto namer = [&](size_t i) {
    std::string label = "record " + std::to_string(i);
    if (canon && i < canon->size()) label += " (" + (*canon)[i].name + ")";
    return label;
  };
  // A directory the geometry cannot explain (wrong tensor count, broken heads
  // walk) is the root cause of the placement errors that follow it: say it first.
  if (!canon) problems.push_back(canon_problem);
  const size_t before_records = problems.size();
  for (auto& p : check_records(records, file, dir_end, namer)) problems.push_back(p);
  const bool records_ok = problems.size() == before_records;
  if (!canon) return problems;
  const size_t before_canon = problems.size();
  for (auto& p : check_against_canon(*canon, records)) problems.push_back(p);
  if (!records_ok || problems.size() != before_canon) return problems;
  // Content checks that the layout alone cannot show.
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    if (r.dtype == Dtype::CQ && r.bits == codec::kTernary) {
      const uint64_t packed =
          uint64_t(r.shape[0]) * codec::packed_row_bytes(codec::padded_in(r.shape[1], r.group), r.bits);
      if (has_invalid_crumb(file.subspan(r.offset, packed)))
        problems.push_back(namer(i) + ": ternary blob holds the invalid crumb 2");
    }
  }
  // The Hadamard-MLP permutations (FP32 [hada_n]): each entry an exact integer,
  // every one of 0..hada_n-1 once. The engine indexes with them.
  for (SharedSlot slot : {SharedSlot::hada_p1, SharedSlot::hada_p2}) {
    const size_t i = canon->shared(slot);
    const std::string problem = permutation_problem(file.subspan(records[i].offset, records[i].nbytes), h.hada_n);
    if (!problem.empty()) problems.push_back(namer(i) + ": " + problem);
  }
  const Record& tok = records.back();
  try {
    auto t = std::make_shared<const TokenizerModel>(parse_tokenizer_blob(file.subspan(tok.offset, tok.nbytes)));
    if (t->pieces.size() > h.vocab) {
      problems.push_back(namer(records.size() - 1) + ": tokenizer has " + std::to_string(t->pieces.size()) +
                         " pieces, more than vocab " + std::to_string(h.vocab));
    }
    if (parts != nullptr && problems.empty()) {
      parts->canon = std::move(canon);
      parts->tokenizer = std::move(t);
    }
  } catch (const Error& e) {
    problems.push_back(namer(records.size() - 1) + ": " + e.what());
  }
  return problems;
}

}  // namespace cact
