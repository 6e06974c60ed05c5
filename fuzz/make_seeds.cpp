// Writes the seed corpora fuzz/corpus/<target>/ from the bundled models and
// golden files (scripts/fuzz.sh --seeds runs it; the outputs are committed).
// Seeds are small valid inputs: the fuzzer learns the formats from them.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cact/geometry_json.h"
#include "cact/model.h"
#include "cact/safetensors.h"
#include "cact/spm_import.h"
#include "cact/synth.h"
#include "cact/tokenizer.h"

namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write(const fs::path& p, const void* data, size_t size) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), std::streamsize(size));
  std::printf("%8zu  %s\n", size, p.c_str());
}
void write(const fs::path& p, const std::vector<uint8_t>& b) { write(p, b.data(), b.size()); }
void write(const fs::path& p, const std::string& s) { write(p, s.data(), s.size()); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_seeds SOURCE_DIR CORPUS_DIR\n");
    return 2;
  }
  const fs::path src = argv[1], out = argv[2];
  try {
    // archive: the synthetic micro geometries (every canon feature: taps or
    // none, probe heads, CQ1/CQ3/ternary, block-untied factors).
    for (const char* preset : {"micro", "micro-notaps", "micro-heads", "micro-mixed"}) {
      write(out / "archive" / (std::string(preset) + ".cact"), cact::synth_archive_bytes(cact::synth_preset(preset)));
    }
    // archive_layout: the header, codebooks and directory (plus a little) of each micro archive.
    for (const char* preset : {"micro", "micro-notaps", "micro-heads", "micro-mixed"}) {
      std::vector<uint8_t> b = cact::synth_archive_bytes(cact::synth_preset(preset));
      const cact::Model m = cact::Model::from_bytes(b);
      b.resize(size_t(m.record(0).offset) + 64);
      write(out / "archive_layout" / (std::string(preset) + ".head"), b);
    }
    // tokenizer_blob: the shipped RAW blob, the golden SentencePiece model as
    // a RAW blob, and a small synthetic one.
    const std::vector<uint8_t> tiny = read_all(src / "models" / "license-tiny.cact");
    const cact::Model model = cact::Model::from_bytes(tiny);
    const auto raw = model.tokenizer_blob();
    write(out / "tokenizer_blob" / "license-tiny.raw", std::vector<uint8_t>(raw.begin(), raw.end()));
    write(out / "tokenizer_blob" / "golden.raw",
          cact::serialize_tokenizer(cact::import_sentencepiece(src / "golden" / "tokenizer" / "golden.model")));
    write(out / "tokenizer_blob" / "synthetic-300.raw", cact::serialize_tokenizer(cact::synthetic_tokenizer(300)));
    // tokenizer_encode: text of the kinds the tokenizer meets.
    const fs::path enc = out / "tokenizer_encode";
    write(enc / "license.txt", std::string("This program is free software; you can redistribute it and/or modify\n"
                                           "it under the terms of the GNU General Public License as published by"));
    write(enc / "chat.txt",
          std::string("<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nhi  there<|im_end|>\n"));
    write(enc / "unicode.txt",
          std::string("na\xC3\xAFve caf\xC3\xA9 \xE2\x96\x81 \xF0\x9F\x98\x80 \xE4\xB8\xAD\xE6\x96\x87"));
    write(enc / "invalid-utf8.txt", std::string("\x80\xBF\xC0\xAF\xED\xA0\x80\xF4\x90\x80\x80\xFF tail"));
    write(enc / "spaces.txt", std::string("   leading and  double  spaces   "));
    // spm_import: the SentencePiece models the project ships.
    write(out / "spm_import" / "tok.model", read_all(src / "models" / "tok.model"));
    write(out / "spm_import" / "golden.model", read_all(src / "golden" / "tokenizer" / "golden.model"));
    // safetensors: small checkpoints of each weight dtype, with metadata.
    {
      namespace st = cact::safetensors;
      const std::vector<float> v = {1.0f, -2.5f, 0.0f, 3.25f, 1e-3f, -7.0f};
      std::vector<st::OwnedTensor> ts = {st::f32_tensor("embedding", {2, 3}, v), st::f32_tensor("final_norm", {6}, v)};
      st::OwnedTensor h{{"layer00.norm_in", st::DType::F16, {2}}, {0x00, 0x3C, 0x00, 0xC0}};
      st::OwnedTensor b{{"layer00.post_norm", st::DType::BF16, {2}}, {0x80, 0x3F, 0x00, 0xC0}};
      ts.push_back(h);
      ts.push_back(b);
      write(out / "safetensors" / "small.safetensors", st::serialize(ts, {{"format", "pt"}, {"source", "make_seeds"}}));
      write(out / "safetensors" / "empty.safetensors", st::serialize({}));
    }
    // geometry_json: the tiny model's and the micro geometry.
    write(out / "geometry_json" / "license-tiny.json", cact::geometry_to_json(model.header()));
    write(out / "geometry_json" / "micro.json", cact::geometry_to_json(cact::synth_preset("micro").geometry));
    // engine: patch lists over the micro-heads blobs ([u8 len][u24 pos][bytes]...,
    // after 4 bytes of token / numerics choice).
    write(out / "engine" / "no-patch", std::vector<uint8_t>{0, 5, 17, 200});
    write(out / "engine" / "float-no-patch", std::vector<uint8_t>{1, 5, 17, 200});
    write(out / "engine" / "inf-nan-halves",
          std::vector<uint8_t>{0, 1, 2, 3, 8, 0x40, 0x00, 0x00, 0x00, 0x7C, 0x00, 0xFC, 0x00, 0x7E, 0xFF, 0x7B});
    write(out / "engine" / "big-norms",
          std::vector<uint8_t>{1, 9, 9, 9, 6, 0x00, 0x10, 0x00, 0xFF, 0x7B, 0xFF, 0x7B, 0xFF, 0x7B});
    // cli_text: --blocks lists and --bits width maps.
    write(out / "cli_text" / "blocks", std::string("0,4,9,19"));
    write(out / "cli_text" / "bits-shipped", std::string("default=2,embedding=4,mhc_phi=4,heads=4"));
    write(out / "cli_text" / "bits-mixed", std::string("q_proj=3,layer01.k_proj=t,tables=1,default=ternary"));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
