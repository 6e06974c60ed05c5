// SentencePiece ModelProto -> TokenizerModel (policy in cact/spm_import.h).
// The proto is walked with our own wire reader (field numbers from
// sentencepiece_model.proto); libsentencepiece then loads the same bytes as a
// cross-check of what we read.
#include <sentencepiece_processor.h>
#include <bit>
#include <string>

#include "base/quote.h"
#include "cact/error.h"
#include "cact/mapped_file.h"
#include "cact/spm_import.h"
#include "spm/proto_reader.h"

namespace cact {
namespace {

// sentencepiece_model.proto enums.
enum SpmModelType : uint64_t { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };
enum SpmPieceType : uint64_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct SpmPiece {
  std::string surface;
  float score = 0.0f;
  uint64_t type = kNormal;
};

struct SpmTrainer {  // defaults as in the proto
  uint64_t model_type = kUnigram;
  bool treat_whitespace_as_suffix = false;
  bool byte_fallback = false;
  int64_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;
};

struct SpmNormalizer {
  bool present = false;
  std::string name;
  size_t charsmap_bytes = 0;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

void expect_wire(const spm::ProtoField& f, uint8_t wire, const std::string& where, const char* field) {
  if (f.wire != wire) {
    fail(where + ": " + field + " (field " + std::to_string(f.number) + ") has wire type " + std::to_string(f.wire) +
         ", expected " + std::to_string(wire));
  }
}

// int32 fields are sign-extended to 64 bits on the wire.
int64_t as_int32(uint64_t v) { return static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v))); }

SpmPiece read_piece(std::string_view msg, const std::string& where) {
  SpmPiece p;
  spm::ProtoReader r(msg, where);
  while (!r.done()) {
    const auto f = r.next();
    switch (f.number) {
      case 1:
        expect_wire(f, 2, where, "piece");
        p.surface = std::string(f.bytes);
        break;
      case 2:
        expect_wire(f, 5, where, "score");
        p.score = std::bit_cast<float>(static_cast<uint32_t>(f.value));
        break;
      case 3:
        expect_wire(f, 0, where, "type");
        p.type = f.value;
        break;
      default:
        break;
    }
  }
  return p;
}

void read_trainer(std::string_view msg, const std::string& where, SpmTrainer& t) {
  spm::ProtoReader r(msg, where);
  while (!r.done()) {
    const auto f = r.next();
    switch (f.number) {
      case 3:
        expect_wire(f, 0, where, "model_type");
        t.model_type = f.value;
        break;
      case 24:
        expect_wire(f, 0, where, "treat_whitespace_as_suffix");
        t.treat_whitespace_as_suffix = f.value != 0;
        break;
      case 35:
        expect_wire(f, 0, where, "byte_fallback");
        t.byte_fallback = f.value != 0;
        break;
      case 40:
        expect_wire(f, 0, where, "unk_id");
        t.unk_id = as_int32(f.value);
        break;
      case 41:
        expect_wire(f, 0, where, "bos_id");
        t.bos_id = as_int32(f.value);
        break;
      case 42:
        expect_wire(f, 0, where, "eos_id");
        t.eos_id = as_int32(f.value);
        break;
      case 43:
        expect_wire(f, 0, where, "pad_id");
        t.pad_id = as_int32(f.value);
        break;
      default:
        break;
    }
  }
}

void read_normalizer(std::string_view msg, const std::string& where, SpmNormalizer& n) {
  n.present = true;
  spm::ProtoReader r(msg, where);
  while (!r.done()) {
    const auto f = r.next();
    switch (f.number) {
      case 1:
        expect_wire(f, 2, where, "name");
        n.name = std::string(f.bytes);
        break;
      case 2:
        expect_wire(f, 2, where, "precompiled_charsmap");
        n.charsmap_bytes = f.bytes.size();
        break;
      case 3:
        expect_wire(f, 0, where, "add_dummy_prefix");
        n.add_dummy_prefix = f.value != 0;
        break;
      case 4:
        expect_wire(f, 0, where, "remove_extra_whitespaces");
        n.remove_extra_whitespaces = f.value != 0;
        break;
      case 5:
        expect_wire(f, 0, where, "escape_whitespaces");
        n.escape_whitespaces = f.value != 0;
        break;
      default:
        break;
    }
  }
}

const char* model_type_name(uint64_t t) {
  switch (t) {
    case kUnigram:
      return "UNIGRAM";
    case kBpe:
      return "BPE";
    case kWord:
      return "WORD";
    case kChar:
      return "CHAR";
    default:
      return "unknown";
  }
}

}  // namespace

TokenizerModel import_sentencepiece_proto(std::string_view serialized, std::string_view name_view) {
  const std::string who = "spm import " + std::string(name_view);
  std::vector<SpmPiece> pieces;
  SpmTrainer trainer;
  SpmNormalizer norm, denorm;
  bool have_trainer = false;
  {
    spm::ProtoReader r(serialized, who);
    while (!r.done()) {
      const auto f = r.next();
      switch (f.number) {
        case 1:
          expect_wire(f, 2, who, "pieces");
          pieces.push_back(read_piece(f.bytes, who + ": piece " + std::to_string(pieces.size())));
          break;
        case 2:
          expect_wire(f, 2, who, "trainer_spec");
          read_trainer(f.bytes, who + ": trainer_spec", trainer);
          have_trainer = true;
          break;
        case 3:
          expect_wire(f, 2, who, "normalizer_spec");
          read_normalizer(f.bytes, who + ": normalizer_spec", norm);
          break;
        case 5:
          expect_wire(f, 2, who, "denormalizer_spec");
          read_normalizer(f.bytes, who + ": denormalizer_spec", denorm);
          break;
        default:
          break;
      }
    }
  }

  // Policy checks, most fundamental first.
  if (pieces.empty()) fail(who + ": the model has no pieces");
  if (!have_trainer) fail(who + ": the model has no trainer_spec, so its model type is unknown");
  if (trainer.model_type != kBpe) {
    fail(who + ": model_type is " + model_type_name(trainer.model_type) + "; only BPE models can be imported");
  }
  const std::string rule = norm.name.empty() ? std::string("(unnamed)") : norm.name;
  if (norm.charsmap_bytes != 0) {
    fail(who + ": normalizer_spec uses rule '" + rule + "' (a " + std::to_string(norm.charsmap_bytes) +
         "-byte charsmap); only identity normalisation is supported");
  }
  if (norm.remove_extra_whitespaces) {
    fail(who +
         ": normalizer_spec.remove_extra_whitespaces is true; the engine never collapses whitespace "
         "(train with --remove_extra_whitespaces=false)");
  }
  if (!norm.escape_whitespaces) {
    fail(who + ": normalizer_spec.escape_whitespaces is false; the engine always maps ' ' to U+2581");
  }
  if (denorm.present && denorm.charsmap_bytes != 0) {
    fail(who + ": denormalizer_spec has a " + std::to_string(denorm.charsmap_bytes) +
         "-byte charsmap; only identity denormalisation is supported");
  }
  if (trainer.treat_whitespace_as_suffix) {
    fail(who + ": trainer_spec.treat_whitespace_as_suffix is true; the engine puts U+2581 in front of words");
  }

  const auto n = static_cast<int64_t>(pieces.size());
  struct Id {
    const char* name;
    const char* flag;
    int64_t id;
  };
  for (const Id& s : {Id{"pad", "--pad_id", trainer.pad_id}, Id{"eos", "--eos_id", trainer.eos_id},
                      Id{"bos", "--bos_id", trainer.bos_id}, Id{"unk", "--unk_id", trainer.unk_id}}) {
    if (s.id < 0) {
      fail(who + ": the model has no " + s.name + " piece (" + s.name + "_id = " + std::to_string(s.id) +
           "); the RAW format needs pad, eos, bos and unk: retrain with " + s.flag + "=N");
    }
    if (s.id >= n) {
      fail(who + ": " + s.name + "_id " + std::to_string(s.id) + " is not below the piece count " + std::to_string(n));
    }
  }

  TokenizerModel m;
  m.pad_id = static_cast<uint32_t>(trainer.pad_id);
  m.eos_id = static_cast<uint32_t>(trainer.eos_id);
  m.bos_id = static_cast<uint32_t>(trainer.bos_id);
  m.unk_id = static_cast<uint32_t>(trainer.unk_id);
  m.add_dummy_prefix = norm.add_dummy_prefix;
  m.byte_fallback = trainer.byte_fallback;
  m.pieces.reserve(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    const SpmPiece& sp = pieces[i];
    Piece p;
    p.surface = sp.surface;
    p.score = sp.score;
    switch (sp.type) {
      case kNormal:
        p.type = PieceType::Normal;
        break;
      case kUnknown:
        p.type = PieceType::Unknown;
        break;
      case kControl:
        p.type = PieceType::Control;
        break;
      case kUserDefined:
        p.type = PieceType::UserDefined;
        break;
      case kByte:
        p.type = PieceType::Byte;
        break;
      case kUnused:
        fail(who + ": piece " + std::to_string(i) + " " + quote_bytes(sp.surface) +
             " is UNUSED; the RAW format has no UNUSED type");
      default:
        fail(who + ": piece " + std::to_string(i) + " has unknown SentencePiece type " + std::to_string(sp.type));
    }
    m.pieces.push_back(std::move(p));
  }
  check_tokenizer_model(m, who);

  // Cross-check against libsentencepiece's own reading of the same bytes.
  sentencepiece::SentencePieceProcessor sp;
  const auto status = sp.LoadFromSerializedProto(serialized);
  if (!status.ok()) fail(who + ": libsentencepiece refuses the model: " + status.ToString());
  if (sp.GetPieceSize() != n || sp.unk_id() != trainer.unk_id || sp.bos_id() != trainer.bos_id ||
      sp.eos_id() != trainer.eos_id || sp.pad_id() != trainer.pad_id) {
    fail(who + ": libsentencepiece reads the model differently (piece count or special ids)");
  }
  for (int i = 0; i < sp.GetPieceSize(); ++i) {
    const auto& p = m.pieces[static_cast<size_t>(i)];
    if (sp.IdToPiece(i) != p.surface || std::bit_cast<uint32_t>(sp.GetScore(i)) != std::bit_cast<uint32_t>(p.score)) {
      fail(who + ": libsentencepiece reads piece " + std::to_string(i) + " differently");
    }
  }
  return m;
}

TokenizerModel import_sentencepiece(const std::filesystem::path& model_file) {
  // A FIFO or a device is refused before reading; the bound is far above any
  // SentencePiece model (the vocabulary is at most 2^22 pieces).
  constexpr size_t kMaxModelBytes = size_t(512) << 20;
  const std::string bytes = read_regular_file(model_file, kMaxModelBytes, "spm import " + model_file.string());
  return import_sentencepiece_proto(bytes, model_file.string());
}

}  // namespace cact
