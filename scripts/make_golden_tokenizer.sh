#!/bin/sh
# Regenerate golden/tokenizer/golden.model: a 2000-piece SentencePiece BPE model
# trained on models/corpus.txt with the settings the engine's tokenizer agrees
# with (TOKENIZER.md "Agreement with SentencePiece") and the Needle chat markers.
# Needs Debian's `sentencepiece` package (spm_train). Deterministic: one thread,
# a fixed seed, every input line used in file order (no sampling, no shuffling).
# See docs/TOKENIZER.md.
set -eu

# The model file records --input and --model_prefix verbatim, so both are given as
# paths relative to the repository root: the bytes must not depend on where the
# checkout lives.
cd "$(dirname "$0")/.."
mkdir -p golden/tokenizer

spm_train \
  --input=models/corpus.txt \
  --model_prefix=golden/tokenizer/golden \
  --model_type=bpe \
  --vocab_size=2000 \
  --character_coverage=1.0 \
  --normalization_rule_name=identity \
  --remove_extra_whitespaces=false \
  --add_dummy_prefix=true \
  --byte_fallback=true \
  --split_by_whitespace=true \
  --pad_id=0 --eos_id=1 --bos_id=2 --unk_id=3 \
  --user_defined_symbols='<|im_start|>,<|im_end|>,<think>,</think>,<tools>,</tools>,<tool_call>,</tool_call>,<tool_result>,</tool_result>' \
  --input_sentence_size=0 \
  --shuffle_input_sentence=false \
  --max_sentence_length=16384 \
  --num_threads=1 \
  --random_seed=20240601 \
  --minloglevel=1

rm -f golden/tokenizer/golden.vocab  # a text listing of the same pieces; not needed
sha256sum golden/tokenizer/golden.model
