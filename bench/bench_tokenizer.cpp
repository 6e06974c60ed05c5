// Tokenizer throughput on 100 KB inputs (TOKENIZER.md: "a 100 KB prompt
// tokenises in milliseconds"). Usage: bench_tokenizer [archive.cact]
// (default: models/license-tiny.cact of the source tree). Prints the median of
// several runs per input; no pass/fail, timing stays out of the unit tests.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "cact/error.h"
#include "cact/format.h"
#include "cact/mapped_file.h"
#include "cact/tokenizer.h"
#include "cact/validate.h"

namespace {

constexpr size_t kSize = 100 * 1024;

std::vector<uint8_t> tokenizer_blob(const std::string& path) {
  const cact::MappedFile file(path);
  const auto bytes = file.bytes();
  if (bytes.size() < cact::kHeaderBytes) cact::fail(path + ": too short for a header");
  const cact::Header h = cact::decode_header(bytes);
  if (const auto problems = cact::check_header(h); !problems.empty()) cact::fail(path + ": " + problems.front());
  const uint64_t dir_end = cact::directory_end(h);
  if (dir_end == 0 || dir_end > bytes.size()) cact::fail(path + ": directory runs past the end of the file");
  std::vector<cact::Record> records;
  const size_t dir = cact::kHeaderBytes + 4 * size_t{h.codebook_len};
  for (size_t i = 0; i < h.num_tensors; ++i) records.push_back(cact::decode_record(bytes.data() + dir + 44 * i));
  const auto problems =
      cact::check_records(records, bytes, dir_end, [](size_t i) { return "record " + std::to_string(i); });
  if (!problems.empty()) cact::fail(path + ": " + problems.front());
  const cact::Record& raw = records.back();
  if (raw.dtype != cact::Dtype::RAW) cact::fail(path + ": the last tensor is not RAW");
  const auto* p = bytes.data() + raw.offset;
  return {p, p + raw.nbytes};
}

template <class F>
double median_ms(F&& f, int runs) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

std::string repeat_to_size(const std::string& unit) {
  std::string s;
  while (s.size() + unit.size() <= kSize) s += unit;
  return s;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string src = CACT_SOURCE_DIR;
  const std::string archive = argc > 1 ? argv[1] : src + "/models/license-tiny.cact";
  const cact::Tokenizer tok = cact::Tokenizer::from_blob(tokenizer_blob(archive));

  std::ifstream in(src + "/models/corpus.txt", std::ios::binary);
  std::string corpus((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (corpus.size() < kSize) corpus += corpus;
  corpus.resize(kSize);  // the corpus is ASCII: any cut is a character boundary

  std::mt19937 rng(1);
  std::string random_bytes(kSize, '\0');
  for (auto& c : random_bytes) c = static_cast<char>(rng() % 256);

  const std::vector<std::pair<const char*, std::string>> inputs = {
      {"chat markup, corpus text",
       "<|im_start|>system\nYou are a licence lawyer.<|im_end|>\n<|im_start|>user\n<tools>[]</tools>\n" + corpus +
           "<|im_end|>\n<|im_start|>assistant\n"},
      {"one letter repeated", std::string(kSize, 'a')},
      {"spaces only", std::string(kSize, ' ')},
      {"markers and words", repeat_to_size("<tool_call>{\"name\": \"x\"}</tool_call> the ")},
      {"CJK (byte fallback)", repeat_to_size("\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E")},
      {"random bytes", random_bytes},
  };
  std::printf("%-28s %10s %10s %12s %12s\n", "input (100 KB)", "tokens", "encode ms", "decode ms", "stream ms");
  for (const auto& [name, text] : inputs) {
    std::vector<int32_t> ids;
    const double enc = median_ms([&] { ids = tok.encode(text); }, 7);
    std::string out;
    const double dec = median_ms([&] { out = tok.decode(ids); }, 7);
    const double str = median_ms(
        [&] {
          cact::StreamDecoder d(tok);
          std::string all;
          for (const int32_t id : ids) all += d.push(id);
          all += d.finish();
        },
        7);
    std::printf("%-28s %10zu %10.2f %12.2f %12.2f\n", name, ids.size(), enc, dec, str);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_tokenizer: %s\n", e.what());
  return 1;
}
