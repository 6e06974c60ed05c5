#pragma once
// Shared inputs of the text-layer tests: the shipped archive's RAW blob, the two
// SentencePiece models (shipped tok.model and the golden one) and helpers.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "cact/tokenizer.h"

namespace cact::test {

std::string read_file(const std::filesystem::path& p);
std::vector<std::string> read_lines(const std::filesystem::path& p);

// The last directory record's blob of models/license-tiny.cact (the RAW tokenizer),
// located by walking the header and directory (FORMAT.md).
struct RawBlob {
  uint64_t record = 0, offset = 0, nbytes = 0;
  std::vector<uint8_t> bytes;
};
RawBlob shipped_tokenizer_blob();

std::filesystem::path tok_model_path();     // models/tok.model
std::filesystem::path golden_model_path();  // golden/tokenizer/golden.model

// Parsed once per process.
const Tokenizer& shipped_tokenizer();  // from the archive's blob
const Tokenizer& golden_tokenizer();   // imported from golden.model

// What decode(encode(x)) must give for any x: each byte that starts no valid
// UTF-8 sequence becomes U+FFFD, and U+2581 becomes a space.
std::string expected_round_trip(std::string_view x);

}  // namespace cact::test
