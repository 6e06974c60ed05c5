#pragma once
// What each fuzz target does with one input, shared by the libFuzzer entry
// points (fuzz/fuzz_*.cpp) and the regression replay in the normal test suite
// (tests/container/fuzz_regressions_test.cpp). A harness returns normally when the
// input was handled cleanly: accepted, or refused with a cact::Error. Anything
// else (another exception, a failed invariant, a sanitizer report) is a bug.
//
// Invariants are checked with cact_fuzz_require, which aborts with a message so
// that libFuzzer records the input as a crash.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cact/chat.h"
#include "cact/codec.h"
#include "cact/engine.h"
#include "cact/error.h"
#include "cact/geometry_json.h"
#include "cact/json_input.h"
#include "cact/model.h"
#include "cact/safetensors.h"
#include "cact/slice.h"
#include "cact/spm_import.h"
#include "cact/synth.h"
#include "cact/tokenizer.h"
#include "cact/validate.h"
#include "cact/width_map.h"

#ifndef CACT_SOURCE_DIR
#error "CACT_SOURCE_DIR must point at the source tree (models/ holds the golden tokenizer)"
#endif

namespace cact::fuzz {

[[noreturn]] inline void invariant_failed(const char* what, const char* file, int line) {
  std::fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", what, file, line);
  std::abort();
}
#define cact_fuzz_require(cond) ((cond) ? (void)0 : ::cact::fuzz::invariant_failed(#cond, __FILE__, __LINE__))

inline std::vector<uint8_t> read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The inputs the test suite replays for a target: fuzz/regressions/<target>/,
// then the seeds fuzz/corpus/<seeds or target>/, sorted, hidden files skipped.
inline std::vector<std::filesystem::path> replay_inputs(const std::string& target, const std::string& seeds = "") {
  const std::filesystem::path fuzz = std::filesystem::path(CACT_SOURCE_DIR) / "fuzz";
  std::vector<std::filesystem::path> files;
  for (const auto& dir : {fuzz / "regressions" / target, fuzz / "corpus" / (seeds.empty() ? target : seeds)}) {
    if (!std::filesystem::is_directory(dir)) continue;
    std::vector<std::filesystem::path> here;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.is_regular_file() && e.path().filename().string().front() != '.') here.push_back(e.path());
    }
    std::sort(here.begin(), here.end());
    files.insert(files.end(), here.begin(), here.end());
  }
  return files;
}

// Upper bound on the elements a harness dequantises per input, so that one
// execution stays in the millisecond range even for large valid archives.
inline constexpr uint64_t kMaxTouchedElements = uint64_t(1) << 18;

// --- archive: the full check, then every view of a file that passes --------
inline void archive(std::span<const uint8_t> bytes) {
  std::optional<Model> loaded;
  try {
    loaded.emplace(Model::from_bytes(bytes));
  } catch (const Error& e) {
    // Refused: the checker must agree, with one-line messages.
    const std::vector<std::string> problems = check_archive(bytes);
    cact_fuzz_require(!problems.empty());
    cact_fuzz_require(std::string_view(e.what()).starts_with(problems.front()));
    for (const std::string& p : problems) {
      cact_fuzz_require(!p.empty());
      cact_fuzz_require(p.find('\n') == std::string::npos);
    }
    return;
  }
  // Accepted: everything the checks promise must be safe to touch.
  const Model& m = *loaded;
  cact_fuzz_require(m.records().size() == m.canon().size());
  uint64_t touched = 0;
  for (size_t i = 0; i < m.records().size(); ++i) {
    const Record& r = m.record(i);
    const auto blob = m.blob(i);
    cact_fuzz_require(blob.size() == r.nbytes);
    cact_fuzz_require(r.offset % kBlobAlign == 0 && r.offset + r.nbytes <= bytes.size());
    (void)m.label(i);
    if (r.dtype == Dtype::RAW) continue;
    if (r.dtype == Dtype::CQ) {
      // First and last row of every CQ matrix: the view's bounds are what matter.
      const codec::CqMatrix cq = m.matrix(i);
      const std::vector<float> cb = m.codebook_for(r.bits);
      std::vector<float> row(cq.in);
      codec::dequantize_row(cq, 0, cb, row.data());
      codec::dequantize_row(cq, cq.out - 1, cb, row.data());
      continue;
    }
    const uint64_t n = r.elements();
    if (touched + n > kMaxTouchedElements) continue;
    touched += n;
    const std::vector<float> v = m.values(i);
    cact_fuzz_require(v.size() == n);
  }
  const Tokenizer tok = Tokenizer::from_blob(m.tokenizer_blob());
  cact_fuzz_require(tok.size() <= m.header().vocab);
  for (int32_t id : tok.encode("Copyright (C) the free software, <0x41> \xE2\x96\x81 \xFF end")) {
    cact_fuzz_require(id >= 0 && size_t(id) < tok.size());
  }
}

// --- archive_layout: fuzz the header and directory of a real archive -------
// The input overlays the start of fuzz/corpus/archive/micro-heads.cact (header,
// codebooks, directory and the first blobs); the rest of the file is kept, so
// most executions reach the record, canon and heads checks instead of dying at
// a random tag. Seeds: the first bytes of the micro archives.
inline const std::vector<uint8_t>& layout_base() {
  static const std::vector<uint8_t> base =
      read_all(std::filesystem::path(CACT_SOURCE_DIR) / "fuzz" / "corpus" / "archive" / "micro-heads.cact");
  return base;
}

inline void archive_layout(std::span<const uint8_t> bytes) {
  const std::vector<uint8_t>& base = layout_base();
  std::vector<uint8_t> file(bytes.begin(), bytes.end());
  if (file.size() < base.size()) file.insert(file.end(), base.begin() + std::ptrdiff_t(file.size()), base.end());
  archive(file);
}

// --- tokenizer_blob: strict parse, then use the parsed tokenizer ------------
inline void tokenizer_blob(std::span<const uint8_t> bytes) {
  TokenizerModel model;
  try {
    model = parse_tokenizer_blob(bytes);
  } catch (const Error&) {
    return;
  }
  // A blob that parses must survive a round trip and every operation.
  const std::vector<uint8_t> again = serialize_tokenizer(model);
  cact_fuzz_require(again.size() == bytes.size());
  cact_fuzz_require(std::equal(again.begin(), again.end(), bytes.begin()));
  const Tokenizer tok(model);
  const std::string_view samples[] = {"",
                                      " ",
                                      "hello world",
                                      "  two  spaces ",
                                      "\xC3\xA9t\xC3\xA9 \xF0\x9F\x98\x80",
                                      "\x80\xFF bad",
                                      "<|im_start|>user\nhi<|im_end|>"};
  for (std::string_view s : samples) {
    const std::vector<int32_t> ids = tok.encode(s);
    for (int32_t id : ids) cact_fuzz_require(id >= 0 && size_t(id) < tok.size());
    (void)tok.decode(ids);
  }
  // Decoding arbitrary valid ids, one by one through the stream decoder too.
  std::vector<int32_t> all;
  for (size_t i = 0; i < tok.size() && i < 4096; ++i) all.push_back(int32_t(i));
  (void)tok.decode(all);
  StreamDecoder stream(tok);
  for (int32_t id : all) (void)stream.push(id);
  (void)stream.finish();
}

// --- tokenizer_encode: arbitrary bytes through the shipped tokenizer --------

// The golden tokenizer: the RAW blob of models/license-tiny.cact.
inline const Tokenizer& golden_tokenizer() {
  static const Tokenizer tok = [] {
    static const std::vector<uint8_t> file =
        read_all(std::filesystem::path(CACT_SOURCE_DIR) / "models" / "license-tiny.cact");
    const Model m = Model::from_bytes(file);
    return Tokenizer::from_blob(m.tokenizer_blob());
  }();
  return tok;
}

// What decode(encode(x)) gives for any x (TOKENIZER.md): each byte that
// starts no valid UTF-8 sequence becomes U+FFFD, U+2581 becomes a space.
// Written independently of libcact's UTF-8 code.
inline std::string round_trip_of(std::string_view x) {
  std::string out;
  size_t i = 0;
  while (i < x.size()) {
    const auto lead = static_cast<uint8_t>(x[i]);
    size_t len = 0;
    uint32_t cp = 0, lowest = 0;
    if (lead < 0x80) {
      len = 1, cp = lead;
    } else if (lead >= 0xC0 && lead < 0xE0) {
      len = 2, cp = lead & 0x1Fu, lowest = 0x80;
    } else if (lead >= 0xE0 && lead < 0xF0) {
      len = 3, cp = lead & 0x0Fu, lowest = 0x800;
    } else if (lead >= 0xF0 && lead < 0xF8) {
      len = 4, cp = lead & 0x07u, lowest = 0x10000;
    }
    bool valid = len > 0 && i + len <= x.size();
    for (size_t k = 1; valid && k < len; ++k) {
      const auto c = static_cast<uint8_t>(x[i + k]);
      valid = (c & 0xC0) == 0x80;
      cp = cp << 6 | (c & 0x3Fu);
    }
    valid = valid && cp >= lowest && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
    if (!valid) {
      out += "\xEF\xBF\xBD";
      i += 1;
    } else {
      if (cp == 0x2581) {
        out += ' ';
      } else {
        out.append(x.substr(i, len));
      }
      i += len;
    }
  }
  return out;
}

inline void tokenizer_encode(std::span<const uint8_t> bytes) {
  const Tokenizer& tok = golden_tokenizer();
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const std::vector<int32_t> ids = tok.encode(text);
  for (int32_t id : ids) cact_fuzz_require(id >= 0 && size_t(id) < tok.size());
  cact_fuzz_require(tok.decode(ids) == round_trip_of(text));
  // The streaming decoder gives the same text.
  StreamDecoder stream(tok);
  std::string streamed;
  for (int32_t id : ids) streamed += stream.push(id);
  streamed += stream.finish();
  cact_fuzz_require(streamed == tok.decode(ids));
}

// --- spm_import: a SentencePiece ModelProto from an untrusted file ----------
inline void spm_import(std::span<const uint8_t> bytes) {
  TokenizerModel model;
  try {
    model = import_sentencepiece_proto(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                                       "fuzz.model");
  } catch (const Error&) {
    return;
  }
  // An imported model is one the RAW format and the tokenizer accept.
  const std::vector<uint8_t> blob = serialize_tokenizer(model);
  const Tokenizer tok = Tokenizer::from_blob(blob);
  for (int32_t id : tok.encode("hello world \xC3\xA9 \xFF")) cact_fuzz_require(id >= 0 && size_t(id) < tok.size());
}

// --- safetensors: the strict checkpoint reader ------------------------------
inline void safetensors(std::span<const uint8_t> bytes) {
  std::optional<safetensors::File> file;
  try {
    file.emplace(safetensors::File::from_bytes(bytes, "fuzz.safetensors"));
  } catch (const Error&) {
    return;
  }
  // Accepted: every view lies inside the buffer and has the size its dtype and shape imply.
  uint64_t touched = 0;
  for (const safetensors::TensorView& t : file->tensors()) {
    cact_fuzz_require(t.data.size() == safetensors::dtype_size(t.dtype) * t.elements());
    cact_fuzz_require(t.data.empty() ||
                      (t.data.data() >= bytes.data() && t.data.data() + t.data.size() <= bytes.data() + bytes.size()));
    cact_fuzz_require(file->find(t.name) == &t);
    (void)t.shape_string();
    if (safetensors::is_weight_dtype(t.dtype) && touched + t.elements() <= kMaxTouchedElements) {
      touched += t.elements();
      cact_fuzz_require(safetensors::to_float(t).size() == t.elements());
    }
  }
}

// --- geometry_json: the geometry companion of a checkpoint ------------------
inline void geometry_json(std::span<const uint8_t> bytes) {
  Header h;
  try {
    h = geometry_from_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), "fuzz.json");
  } catch (const Error&) {
    return;
  }
  // A parsed geometry is sane by check_header's rules (num_tensors is the writer's: set it)
  // and survives a round trip.
  Header checked = h;
  checked.num_tensors = 1;
  cact_fuzz_require(check_header(checked).empty());
  const Header again = geometry_from_json(geometry_to_json(h), "round trip");
  cact_fuzz_require(std::memcmp(&again, &h, sizeof h) == 0);
}

// --- slice: plan and cut a fuzzed archive; the output must pass the check ---
inline void slice(std::span<const uint8_t> bytes) {
  std::optional<Model> loaded;
  try {
    loaded.emplace(Model::from_bytes(bytes));
  } catch (const Error&) {
    return;
  }
  const Model& m = *loaded;
  const uint32_t L = m.header().num_layers;
  std::vector<std::vector<uint32_t>> requests;
  if (L >= 2) requests.push_back(rung(L, 2));
  std::vector<uint32_t> every(L);
  for (uint32_t l = 0; l < L; ++l) every[l] = l;
  requests.push_back(every);
  if (L >= 3) requests.push_back({1});  // a single middle block: drops the first and last
  for (const auto& blocks : requests) {
    for (uint32_t context : {0u, 8u}) {
      SlicePlan plan;
      try {
        plan = plan_slice(m, blocks, context);
      } catch (const Error&) {
        continue;  // a request this archive cannot honour is refused cleanly
      }
      const std::vector<uint8_t> out = slice_bytes(m, plan);
      cact_fuzz_require(out.size() == plan.output_bytes);
      const std::vector<std::string> problems = check_archive(out);
      if (!problems.empty()) std::fprintf(stderr, "sliced archive fails its check: %s\n", problems.front().c_str());
      cact_fuzz_require(problems.empty());
    }
  }
}

// --- engine: a few tokens through a micro archive whose weights are fuzzed --
// The input is a list of patches [u8 len][u24 position][len bytes] applied to
// the blob region of fuzz/corpus/archive/micro-heads.cact (header, directory
// and the tokenizer blob are kept), so the geometry stays valid and the
// weights, norms, permutations and conv taps take arbitrary values. The first
// four bytes choose the tokens and the numerics.
inline void engine(std::span<const uint8_t> bytes) {
  static const std::vector<uint8_t> base = layout_base();
  static const std::pair<uint64_t, uint64_t> region = [] {
    const Model m = Model::from_bytes(base);
    return std::pair<uint64_t, uint64_t>(m.record(0).offset, m.record(m.records().size() - 1).offset);
  }();
  if (bytes.size() < 4) return;
  std::vector<uint8_t> file = base;
  const uint64_t span = region.second - region.first;
  size_t at = 4;
  while (at + 4 <= bytes.size()) {
    const size_t len = bytes[at];
    const uint64_t pos = uint64_t(bytes[at + 1]) | uint64_t(bytes[at + 2]) << 8 | uint64_t(bytes[at + 3]) << 16;
    at += 4;
    for (size_t k = 0; k < len && at < bytes.size(); ++k, ++at) file[region.first + (pos + k) % span] = bytes[at];
  }
  std::optional<Model> loaded;
  try {
    loaded.emplace(Model::from_bytes(file));
  } catch (const Error&) {
    return;  // e.g. an invalid ternary crumb: refused by the check
  }
  const Model& m = *loaded;
  EngineOptions options;
  options.numerics = (bytes[0] & 1) ? Numerics::reference : Numerics::int8;
  const uint32_t vocab = m.header().vocab;
  const int32_t tokens[3] = {int32_t(bytes[1] % vocab), int32_t(bytes[2] % vocab), int32_t(bytes[3] % vocab)};
  try {
    const Engine engine(m, options);
    SessionOptions so;
    so.context = 8;
    Session session(engine, so);
    const auto logits = session.prefill(std::span(tokens, 2));
    cact_fuzz_require(logits.size() == engine.output_rows());
    cact_fuzz_require(session.step(tokens[2]).size() == engine.output_rows());
    // Ids outside the vocabulary are refused before any state changes.
    const uint32_t before = session.position();
    for (int32_t bad : {int32_t(vocab), -1}) {
      bool refused = false;
      try {
        (void)session.step(bad);
      } catch (const Error&) {
        refused = true;
      }
      cact_fuzz_require(refused && session.position() == before);
    }
    for (HeadKind k : {HeadKind::embedding, HeadKind::confidence, HeadKind::router}) {
      if (session.has_head(k)) (void)session.head_output(k);
    }
  } catch (const Error&) {
    // Refused cleanly (e.g. hada_p1 is not a permutation).
  }
}

// --- synth: any sane small geometry makes an archive that passes the check --
// The input is geometry JSON (as for geometry_json); geometries whose tensors
// hold more than 2^21 elements, or whose vocab cannot hold the synthetic
// tokenizer, are skipped to keep executions fast.
inline void synth(std::span<const uint8_t> bytes) {
  SynthSpec spec;
  try {
    spec.geometry =
        geometry_from_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), "fuzz.json");
  } catch (const Error&) {
    return;
  }
  if (spec.geometry.vocab < 270) return;
  uint64_t elements = 0;
  const Canon canon = Canon::make(spec.geometry, {}, false);
  for (const TensorSpec& t : canon.specs()) {
    uint64_t n = 1;
    for (uint8_t d = 0; d < t.ndim; ++d) n *= t.shape[d];
    elements += n;
    if (elements > (uint64_t(1) << 21)) return;
  }
  spec.seed = bytes.size();
  std::vector<uint8_t> archive;
  try {
    archive = synth_archive_bytes(spec);
  } catch (const Error& e) {
    std::fprintf(stderr, "synth refused a checked geometry: %s\n", e.what());
    invariant_failed("synth refused a geometry that geometry_from_json accepted", __FILE__, __LINE__);
  }
  const std::vector<std::string> problems = check_archive(archive);
  if (!problems.empty()) std::fprintf(stderr, "synthetic archive fails its check: %s\n", problems.front().c_str());
  cact_fuzz_require(problems.empty());
  Header h = decode_header(archive);
  h.num_tensors = spec.geometry.num_tensors;
  cact_fuzz_require(std::memcmp(&h, &spec.geometry, sizeof h) == 0);
}

// --- cli_text: the small text languages of the tools' flags -----------------
// The input is used as a --blocks list (cact-slice) and as a --bits width map
// (cact-build, cact-quant): each parses or is refused with an Error; a parsed
// width map round-trips through to_string and answers bits_for with a valid width.
inline void cli_text(std::span<const uint8_t> bytes) {
  const std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  try {
    const std::vector<uint32_t> blocks = parse_block_list(text);
    for (uint32_t layers : {1u, 4u, 20u, 64u}) {
      try {
        (void)check_blocks(blocks, layers);
      } catch (const Error&) {
      }
    }
  } catch (const Error&) {
  }
  try {
    const WidthMap map = WidthMap::parse(text);
    const WidthMap again = WidthMap::parse(map.to_string());
    const WidthMap over_shipped = WidthMap().with(text);
    for (const char* name :
         {"embedding", "layer03.q_proj", "mhc_phi_res", "engram1.tables", "confidence_head.probes"}) {
      cact_fuzz_require(again.find(name) == map.find(name));
      // A key that matches wins over the shipped map; otherwise the shipped width stays.
      cact_fuzz_require(over_shipped.bits_for(name) == map.find(name).value_or(WidthMap().bits_for(name)));
      const uint32_t bits = map.bits_for(name);
      cact_fuzz_require(bits >= 1 && bits <= 5);
    }
    try {
      map.check_keys(Canon::make(decode_header(layout_base()), {}, false));
    } catch (const Error&) {
    }
  } catch (const Error&) {
  }
  // As a --set value: one header field set, or an Error.
  try {
    Header h = decode_header(layout_base());
    set_header_field(h, text);
  } catch (const Error&) {
  }
}

// --- json_input: the one JSON reader every JSON input goes through ----------
// Parse or Error (never another exception, never a deep recursion); a parsed
// value printed compactly parses again to the same value.
inline void json_input(std::span<const uint8_t> bytes) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  constexpr size_t kLimit = size_t(1) << 20;
  try {
    const Json value = parse_json_limited(text, "fuzz", kLimit);
    const std::string again = compact(value);
    cact_fuzz_require(parse_json_limited(again, "again", again.size()) == value);
  } catch (const Error&) {
  }
}

// --- tool_list: --tools FILE, --tools-json, a request's "tools" -------------
// A list or an Error; an accepted list's compact form is accepted again with
// the same tools.
inline void tool_list(std::span<const uint8_t> bytes) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  try {
    const chat::ToolList list = chat::parse_tool_list(text, "fuzz");
    const chat::ToolList again = chat::parse_tool_list(list.compact_json, "again");
    cact_fuzz_require(again.tools.size() == list.tools.size());
    for (size_t i = 0; i < list.tools.size(); ++i) cact_fuzz_require(again.tools[i].name == list.tools[i].name);
  } catch (const Error&) {
  }
}

// --- chat_request: the library's part of a cact-run --jsonl request line ---
// The line through the shared reader, then the fields the library checks (a
// "tools" list, a "tool_choice"): each accepted or an Error.
inline void chat_request(std::span<const uint8_t> bytes) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  try {
    const Json req = parse_json_limited(text, "request", size_t(16) << 20);
    if (!req.is_object()) return;
    if (const auto tools = req.find("tools"); tools != req.end())
      (void)chat::parse_tool_list(tools->dump(), "\"tools\"");
    if (const auto choice = req.find("tool_choice"); choice != req.end() && choice->is_string()) {
      (void)chat::parse_tool_choice(choice->get<std::string>());
    }
  } catch (const Error&) {
  }
}

// --- transcript: a saved conversation (--load, /load) ------------------------
inline void transcript(std::span<const uint8_t> bytes) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  try {
    const chat::Transcript t = chat::parse_transcript(text, "fuzz");
    cact_fuzz_require(t.tools.tools.empty() || !t.tools.compact_json.empty());
  } catch (const Error&) {
  }
}

}  // namespace cact::fuzz
