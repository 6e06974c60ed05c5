// SentencePiece import: the shipped blob is reproduced byte for byte, the golden
// model imports, and every refusal of the import policy has a clear message.
#include <doctest/doctest.h>

#include <bit>
#include <string>
#include <vector>

#include "cact/error.h"
#include "cact/spm_import.h"
#include "cact/tokenizer.h"
#include "support/test_paths.h"
#include "text/text_fixtures.h"

using namespace cact;
using cact::test::golden_model_path;
using cact::test::shipped_tokenizer_blob;
using cact::test::tok_model_path;

TEST_CASE("import: serialize(import(tok.model)) is the archive's RAW blob, byte for byte") {
  const auto blob = shipped_tokenizer_blob();
  CHECK(blob.record == 129);
  CHECK(blob.offset == 581248);
  CHECK(blob.nbytes == 12369);
  const TokenizerModel m = import_sentencepiece(tok_model_path());
  const std::vector<uint8_t> ours = serialize_tokenizer(m);
  REQUIRE(ours.size() == blob.bytes.size());
  size_t first_diff = ours.size();
  for (size_t i = 0; i < ours.size(); ++i) {
    if (ours[i] != blob.bytes[i]) {
      first_diff = i;
      break;
    }
  }
  CHECK_MESSAGE(first_diff == ours.size(), "first differing byte at offset " << first_diff);
}

TEST_CASE("import: tok.model fields") {
  const TokenizerModel m = import_sentencepiece(tok_model_path());
  CHECK(m.pieces.size() == 1024);
  CHECK(m.pad_id == 0);
  CHECK(m.eos_id == 1);
  CHECK(m.bos_id == 2);
  CHECK(m.unk_id == 3);
  CHECK(m.add_dummy_prefix);
  CHECK(m.byte_fallback);
  const char* markers[] = {"<|im_start|>", "<|im_end|>",  "<think>",      "</think>",      "<tools>",
                           "</tools>",     "<tool_call>", "</tool_call>", "<tool_result>", "</tool_result>"};
  for (size_t i = 0; i < 10; ++i) {
    CHECK(m.pieces[4 + i].surface == markers[i]);
    CHECK(m.pieces[4 + i].type == PieceType::UserDefined);
  }
  CHECK(m.pieces[14].surface == "<0x00>");
  CHECK(m.pieces[14].type == PieceType::Byte);
}

TEST_CASE("import: the golden model has the requested shape") {
  const TokenizerModel m = import_sentencepiece(golden_model_path());
  CHECK(m.pieces.size() == 2000);
  CHECK(m.pad_id == 0);
  CHECK(m.eos_id == 1);
  CHECK(m.bos_id == 2);
  CHECK(m.unk_id == 3);
  CHECK(m.add_dummy_prefix);
  CHECK(m.byte_fallback);
  CHECK(m.pieces[4].surface == "<|im_start|>");
  CHECK(m.pieces[13].surface == "</tool_result>");
  CHECK(m.pieces[13].type == PieceType::UserDefined);
  // The blob round trip holds for it too.
  const auto blob = serialize_tokenizer(m);
  CHECK(serialize_tokenizer(parse_tokenizer_blob(blob)) == blob);
}

// ---- Refusals, on hand-made ModelProtos (protobuf wire format, field numbers
// from sentencepiece_model.proto).
namespace {

struct Pb {
  std::string b;
  void varint(uint64_t v) {
    while (v >= 0x80) {
      b += static_cast<char>((v & 0x7F) | 0x80);
      v >>= 7;
    }
    b += static_cast<char>(v);
  }
  Pb& vint(uint32_t field, int64_t v) {
    varint(uint64_t{field} << 3);
    varint(static_cast<uint64_t>(v));
    return *this;
  }
  Pb& bytes(uint32_t field, std::string_view s) {
    varint((uint64_t{field} << 3) | 2);
    varint(s.size());
    b += s;
    return *this;
  }
  Pb& f32(uint32_t field, float f) {
    varint((uint64_t{field} << 3) | 5);
    const auto u = std::bit_cast<uint32_t>(f);
    for (int i = 0; i < 4; ++i) b += static_cast<char>(u >> (8 * i));
    return *this;
  }
};

struct SpmOptions {
  int64_t model_type = 2;  // BPE
  int64_t pad_id = 0;
  bool write_remove_extra_ws = true;  // write remove_extra_whitespaces = false
  std::string charsmap;
  std::string rule = "identity";
  bool escape_ws = true;
  bool ws_suffix = false;
  bool unused_piece = false;
};

std::string tiny_proto(const SpmOptions& o) {
  Pb model;
  struct P {
    const char* s;
    float score;
    int type;
  };
  const P pieces[] = {{"<pad>", 0, 3}, {"</s>", 0, 3},          {"<s>", 0, 3}, {"<unk>", 0, 2},
                      {"<x>", 0, 4},   {"\xE2\x96\x81", -1, 1}, {"a", -2, 1},  {"ab", -3, o.unused_piece ? 5 : 1},
                      {"b", -4, 1}};
  for (const auto& p : pieces) {
    Pb sp;
    sp.bytes(1, p.s).f32(2, p.score).vint(3, p.type);
    model.bytes(1, sp.b);
  }
  Pb trainer;
  trainer.vint(3, o.model_type).vint(4, 9).vint(40, 3).vint(41, 2).vint(42, 1).vint(43, o.pad_id);
  if (o.ws_suffix) trainer.vint(24, 1);
  model.bytes(2, trainer.b);
  Pb norm;
  norm.bytes(1, o.rule);
  if (!o.charsmap.empty()) norm.bytes(2, o.charsmap);
  norm.vint(3, 1);
  if (o.write_remove_extra_ws) norm.vint(4, 0);
  if (!o.escape_ws) norm.vint(5, 0);
  model.bytes(3, norm.b);
  return model.b;
}

std::string import_error(const std::string& proto) {
  try {
    import_sentencepiece_proto(proto, "tiny");
  } catch (const cact::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("import: a minimal hand-made BPE model imports") {
  const TokenizerModel m = import_sentencepiece_proto(tiny_proto({}), "tiny");
  REQUIRE(m.pieces.size() == 9);
  CHECK(m.unk_id == 3);
  CHECK(m.pad_id == 0);
  CHECK_FALSE(m.byte_fallback);  // absent: the proto default
  CHECK(m.add_dummy_prefix);
  CHECK(m.pieces[4].type == PieceType::UserDefined);
  CHECK(m.pieces[6].score == -2.0f);
  const Tokenizer tok(m);
  CHECK(tok.encode("ab a") == std::vector<int32_t>{5, 7, 5, 6});
  CHECK(tok.encode("c") == std::vector<int32_t>{5, 3});  // no byte fallback: unk
}

TEST_CASE("import: refusals name the file and the field") {
  {
    SpmOptions o;
    o.model_type = 1;
    CHECK(import_error(tiny_proto(o)) == "spm import tiny: model_type is UNIGRAM; only BPE models can be imported");
  }
  {
    SpmOptions o;
    o.model_type = 4;
    CHECK(import_error(tiny_proto(o)) == "spm import tiny: model_type is CHAR; only BPE models can be imported");
  }
  {
    SpmOptions o;
    o.rule = "nmt_nfkc";
    o.charsmap = "\x01\x02\x03\x04";
    CHECK(import_error(tiny_proto(o)) ==
          "spm import tiny: normalizer_spec uses rule 'nmt_nfkc' (a 4-byte charsmap); only identity normalisation is "
          "supported");
  }
  {
    SpmOptions o;
    o.write_remove_extra_ws = false;  // the proto default is true
    CHECK(import_error(tiny_proto(o)) ==
          "spm import tiny: normalizer_spec.remove_extra_whitespaces is true; the engine never collapses whitespace "
          "(train with --remove_extra_whitespaces=false)");
  }
  {
    SpmOptions o;
    o.escape_ws = false;
    CHECK(import_error(tiny_proto(o)) ==
          "spm import tiny: normalizer_spec.escape_whitespaces is false; the engine always maps ' ' to U+2581");
  }
  {
    SpmOptions o;
    o.ws_suffix = true;
    CHECK(import_error(tiny_proto(o)) ==
          "spm import tiny: trainer_spec.treat_whitespace_as_suffix is true; the engine puts U+2581 in front of words");
  }
  {
    SpmOptions o;
    o.pad_id = -1;
    CHECK(import_error(tiny_proto(o)) ==
          "spm import tiny: the model has no pad piece (pad_id = -1); the RAW format needs pad, eos, bos and unk: "
          "retrain with --pad_id=N");
  }
  {
    SpmOptions o;
    o.pad_id = 9;
    CHECK(import_error(tiny_proto(o)) == "spm import tiny: pad_id 9 is not below the piece count 9");
  }
  {
    SpmOptions o;
    o.pad_id = 6;  // names the NORMAL piece "a"
    CHECK(import_error(tiny_proto(o)) == "spm import tiny: pad_id 6 names piece \"a\" of type NORMAL, not CONTROL");
  }
  {
    SpmOptions o;
    o.unused_piece = true;
    CHECK(import_error(tiny_proto(o)) ==
          "spm import tiny: piece 7 \"ab\" is UNUSED; the RAW format has no UNUSED type");
  }
  {
    const std::string p = tiny_proto({});
    CHECK(import_error(p.substr(0, 5)) == "spm import tiny: field 1 length 14 runs past the end of the message");
    CHECK(import_error("") == "spm import tiny: the model has no pieces");
    CHECK(import_error("\xFF") == "spm import tiny: truncated varint at byte 1");
  }
  CHECK_THROWS_WITH_AS(import_sentencepiece("/nonexistent/x.model"),
                       "spm import /nonexistent/x.model: cannot open: No such file or directory", cact::Error);
}
