// --bits names the widths to change (docs/WIDTHS.md): without it a rebuilt
// checkpoint keeps the widths it records.
#include <doctest/doctest.h>

#include <filesystem>

#include "support/run_app.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;
using cact::test::run_app;

TEST_CASE("cact-build checkpoint: the checkpoint's recorded widths, unless --bits changes some") {
  const fs::path dir = cact::test::scratch_dir("bits-meaning");
  const std::string tiny = (cact::test::models_dir() / "license-tiny.cact").string();  // every CQ tensor 4 bits
  const auto d = run_app("cact-quant", {"dequantize", tiny, "t.safetensors"}, dir);
  REQUIRE_MESSAGE(d.code == 0, d.err);

  const auto same =
      run_app("cact-build", {"checkpoint", "t.safetensors", "t.json", "same.cact", "--tokenizer", tiny}, dir);
  REQUIRE_MESSAGE(same.code == 0, same.err);
  CHECK(same.err.find("  widths:    the checkpoint's ") != std::string::npos);
  CHECK(run_app("cact-inspect", {"--diff", tiny, "same.cact"}, dir).code == 0);  // not the shipped 2-bit default

  const auto q =
      run_app("cact-build",
              {"checkpoint", "t.safetensors", "t.json", "q.cact", "--tokenizer", tiny, "--bits", "q_proj=2"}, dir);
  REQUIRE_MESSAGE(q.code == 0, q.err);
  const auto diff = run_app("cact-inspect", {"--diff", tiny, "q.cact"}, dir);
  CHECK(diff.code == 1);
  CHECK(diff.out.find(", 4 changed, 0 removed, 0 added, 126 same tensors\n") != std::string::npos);
  CHECK(diff.out.find("layer03.q_proj               CQ4 -> CQ2") != std::string::npos);
}

namespace {
size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("--bits default=3 means the same in cact-build checkpoint and cact-quant requantize") {
  const fs::path dir = cact::test::scratch_dir("bits-one-meaning");
  const std::string tiny = (cact::test::models_dir() / "license-tiny.cact").string();  // 30 CQ tensors, all 4 bits
  REQUIRE(run_app("cact-quant", {"dequantize", tiny, "t.safetensors"}, dir).code == 0);
  const auto built =
      run_app("cact-build",
              {"checkpoint", "t.safetensors", "t.json", "b.cact", "--tokenizer", tiny, "--bits", "default=3"}, dir);
  REQUIRE_MESSAGE(built.code == 0, built.err);
  const auto requantized =
      run_app("cact-quant", {"requantize", tiny, "r.cact", "--bits", "default=3", "--requantize"}, dir);
  REQUIRE_MESSAGE(requantized.code == 0, requantized.err);
  for (const char* out : {"b.cact", "r.cact"}) {
    CAPTURE(out);
    const auto diff = run_app("cact-inspect", {"--diff", tiny, out}, dir);
    // default=3 reaches the embedding too: a key of --bits wins over every key beneath it.
    CHECK(diff.out.find("embedding                    CQ4 -> CQ3") != std::string::npos);
    CHECK(count_of(diff.out, "CQ4 -> CQ3") == 30);
  }
}
