#include "text/text_fixtures.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "cact/spm_import.h"
#include "support/test_paths.h"

namespace cact::test {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + p.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> read_lines(const std::filesystem::path& p) {
  std::vector<std::string> lines;
  std::istringstream in(read_file(p));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

namespace {
uint64_t le(const std::string& s, size_t at, size_t n) {
  if (at + n > s.size()) throw std::runtime_error("archive too short");
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(s[at + i])) << (8 * i);
  return v;
}
}  // namespace

RawBlob shipped_tokenizer_blob() {
  const std::string file = read_file(models_dir() / "license-tiny.cact");
  const uint64_t num_tensors = le(file, 4, 4), codebook_len = le(file, 8, 4);
  if (num_tensors == 0) throw std::runtime_error("no tensors");
  RawBlob b;
  b.record = num_tensors - 1;
  const size_t rec = 196 + 4 * codebook_len + 44 * b.record;
  if (le(file, rec, 1) != 4) throw std::runtime_error("last tensor is not RAW");
  b.offset = le(file, rec + 20, 8);
  b.nbytes = le(file, rec + 28, 8);
  if (b.offset + b.nbytes > file.size()) throw std::runtime_error("RAW blob past the end");
  b.bytes.assign(file.begin() + static_cast<std::ptrdiff_t>(b.offset),
                 file.begin() + static_cast<std::ptrdiff_t>(b.offset + b.nbytes));
  return b;
}

std::filesystem::path tok_model_path() { return models_dir() / "tok.model"; }
std::filesystem::path golden_model_path() { return golden_dir() / "tokenizer" / "golden.model"; }

const Tokenizer& shipped_tokenizer() {
  static const Tokenizer tok = Tokenizer::from_blob(shipped_tokenizer_blob().bytes);
  return tok;
}

const Tokenizer& golden_tokenizer() {
  static const Tokenizer tok(import_sentencepiece(golden_model_path()));
  return tok;
}

std::string expected_round_trip(std::string_view x) {
  // Independent of libcact's UTF-8 code on purpose: a straightforward decoder.
  std::string out;
  size_t i = 0;
  while (i < x.size()) {
    const auto b0 = static_cast<uint8_t>(x[i]);
    size_t n = 0;
    uint32_t cp = 0, min = 0;
    if (b0 < 0x80) {
      n = 1;
      cp = b0;
    } else if ((b0 & 0xE0) == 0xC0) {
      n = 2;
      cp = b0 & 0x1Fu;
      min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
      n = 3;
      cp = b0 & 0x0Fu;
      min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
      n = 4;
      cp = b0 & 0x07u;
      min = 0x10000;
    }
    bool ok = n > 0 && i + n <= x.size();
    for (size_t k = 1; ok && k < n; ++k) {
      const auto b = static_cast<uint8_t>(x[i + k]);
      ok = (b & 0xC0) == 0x80;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    ok = ok && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else if (cp == 0x2581) {
      out += ' ';
      i += n;
    } else {
      out.append(x.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace cact::test
