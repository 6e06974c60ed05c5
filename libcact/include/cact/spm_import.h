#pragma once
// SentencePiece -> TokenizerModel, for cact-build and as a test oracle. Lives in
// its own library (cact_spm, links libsentencepiece); the engine never needs it.
//
// Import policy (docs/TOKENIZER.md):
//  - only BPE models (model_type = BPE); UNIGRAM, WORD and CHAR are refused;
//  - only identity normalisation: no precompiled charsmap (normaliser or
//    denormaliser), remove_extra_whitespaces = false, escape_whitespaces = true,
//    treat_whitespace_as_suffix = false; anything else is refused, because the
//    engine's encoder does no normalisation beyond ' ' -> '▁' and the dummy prefix;
//  - pad, eos, bos and unk must all exist: a disabled id (-1, e.g. SentencePiece's
//    default pad_id) is refused rather than mapped to some other piece;
//  - UNUSED pieces are refused (the RAW format has no such type);
//  - piece surfaces, scores (bit for bit) and types are copied in id order,
//    add_dummy_prefix and byte_fallback from the model's specs.
// Every refusal is a cact::Error naming the file and the offending field.
#include <filesystem>
#include <string_view>

#include "cact/tokenizer.h"

namespace cact {

TokenizerModel import_sentencepiece(const std::filesystem::path& model_file);

// The same from a serialized ModelProto; `name` is used in error messages.
TokenizerModel import_sentencepiece_proto(std::string_view serialized, std::string_view name);

}  // namespace cact
