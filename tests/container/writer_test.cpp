// The writer's layout: header fields it owns, 64-byte placement, zero padding,
// deterministic bytes, and a file identical to the in-memory image.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include "cact/codec.h"
#include "cact/format.h"
#include "cact/model.h"
#include "cact/writer.h"
#include "support/run_app.h"
#include "support/test_paths.h"

using namespace cact;

TEST_CASE("header encode/decode is the identity on every field") {
  Header h;
  h.vocab = 11;
  h.engram_sites[15] = 7;
  h.rope_theta = 12345.5f;
  uint8_t raw[kHeaderBytes];
  encode_header(h, raw);
  const Header back = decode_header({raw, kHeaderBytes});
  CHECK(std::memcmp(&back, &h, kHeaderBytes) == 0);
  uint32_t word;
  std::memcpy(&word, raw + 4 * 5, 4);
  CHECK(word == 11);  // field #5 is vocab, at byte 20
  std::memcpy(&word, raw + 4 * 47, 4);
  CHECK(word == 7);
  CHECK(std::string(header_field_name(48)) == "rope_theta");
}

TEST_CASE("records round trip through their 44-byte encoding") {
  Record r;
  r.dtype = Dtype::CQ;
  r.ndim = 2;
  r.shape = {96, 768, 0, 0};
  r.offset = 64 * 1000;
  r.nbytes = 19584;
  r.group = 128;
  r.bits = 2;
  uint8_t raw[kRecordBytes];
  encode_record(r, raw);
  const Record back = decode_record(raw);
  CHECK(back.dtype == r.dtype);
  CHECK(back.shape == r.shape);
  CHECK(back.offset == r.offset);
  CHECK(back.nbytes == r.nbytes);
  CHECK(back.bits == 2);
  CHECK(implied_nbytes(r) == 19584);
  CHECK(kind_name(r) == "CQ2");
  CHECK(shape_string(r) == "[96, 768]");
}

TEST_CASE("writer places blobs at 64-byte boundaries with zero padding, deterministically") {
  const Model source = Model::open(test::models_dir() / "license-tiny.cact");
  std::vector<TensorData> tensors;
  for (size_t i = 0; i < source.records().size(); ++i) tensors.push_back({source.record(i), source.blob(i)});
  const auto image = archive_bytes(source.header(), source.codebooks(), tensors);
  // Re-writing a valid archive's tensors reproduces the file exactly.
  CHECK(image.size() == source.bytes().size());
  CHECK(std::equal(image.begin(), image.end(), source.bytes().begin()));
  const auto dir = test::scratch_dir("writer");
  write_archive(dir / "copy.cact", source.header(), source.codebooks(), tensors);
  const std::string written = test::slurp(dir / "copy.cact");
  CHECK(written == std::string(image.begin(), image.end()));
  // No temporary is left beside the output.
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  CHECK(entries == 1);
}

TEST_CASE("writer refuses to overwrite its input and leaves the input untouched") {
  const auto dir = test::scratch_dir("writer-same");
  std::filesystem::copy_file(test::models_dir() / "license-tiny.cact", dir / "in.cact");
  const std::string before = test::slurp(dir / "in.cact");
  const Model source = Model::open(dir / "in.cact");
  std::vector<TensorData> tensors;
  for (size_t i = 0; i < source.records().size(); ++i) tensors.push_back({source.record(i), source.blob(i)});
  const std::filesystem::path inputs[] = {dir / "in.cact"};
  CHECK_THROWS_WITH(write_archive(dir / "in.cact", source.header(), source.codebooks(), tensors, inputs),
                    doctest::Contains("output path is the input file"));
  CHECK(test::slurp(dir / "in.cact") == before);
}

TEST_CASE("archive stream: the directory first, then the blobs as given, each of its record's size") {
  const Model source = Model::open(test::models_dir() / "license-tiny.cact");
  std::vector<uint8_t> out;
  ArchiveStream stream([&](std::span<const uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); }, source.header(),
                       source.codebooks(), std::vector<Record>(source.records().begin(), source.records().end()));
  CHECK(out.size() == kHeaderBytes + source.codebooks().size() * 4 + source.records().size() * kRecordBytes);
  CHECK(stream.file_bytes() == source.bytes().size());
  const std::string none_given = "0 of " + std::to_string(source.records().size()) + " blobs given";
  CHECK_THROWS_WITH(stream.finish(), doctest::Contains(none_given.c_str()));
  CHECK_THROWS_WITH(stream.add(source.blob(1)), doctest::Contains("blob 0 has"));
  for (size_t i = 0; i < source.records().size(); ++i) stream.add(source.blob(i));
  stream.finish();
  CHECK(std::equal(out.begin(), out.end(), source.bytes().begin(), source.bytes().end()));
  CHECK_THROWS_WITH(stream.add(source.blob(0)), doctest::Contains("past the last"));
}
