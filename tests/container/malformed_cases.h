#pragma once
// A table of hand-made malformed archives, each derived from the bundled
// models/license-tiny.cact by mutating bytes (or, where the layout must stay
// consistent, by re-emitting it with archive_bytes), and the exact first
// message check_archive must give for it. Shared by the container tests
// (malformed_*_test.cpp) and the tool tests (tests/tools/hostile_apps_test.cpp).
//
// Layout of the tiny archive (FORMAT.md): header 0..196, 28 f32 codebooks
// 196..308, 130 records of 44 bytes 308..6028, blobs from 6080, 64-aligned.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cact/codec.h"
#include "cact/format.h"
#include "cact/model.h"
#include "cact/tokenizer.h"
#include "cact/writer.h"
#include "support/test_paths.h"

namespace cact::test::malformed {

using Bytes = std::vector<uint8_t>;

inline Bytes read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::filesystem::path& p, const Bytes& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

// The pristine archive, read once.
inline const Bytes& tiny() {
  static const Bytes bytes = read_bytes(models_dir() / "license-tiny.cact");
  return bytes;
}

// A checked view of the pristine archive (names, records, blobs).
inline const Model& tiny_model() {
  static const Model model = Model::from_bytes(tiny());
  return model;
}

// Byte offset of a header field by its FORMAT.md name ("kv_bits", "engram_sites[1]").
inline size_t hdr(std::string_view name) {
  for (size_t i = 0; i < kHeaderFields; ++i) {
    if (name == header_field_name(i)) return 4 * i;
  }
  throw std::logic_error("no header field " + std::string(name));
}

inline constexpr size_t kCodebooksAt = kHeaderBytes;
inline constexpr size_t kDirectoryAt = kHeaderBytes + 28 * 4;  // 308

// Field offsets inside a 44-byte record.
enum RecordField : size_t {
  kDtype = 0,
  kNdim = 1,
  kPad = 2,
  kShape = 4,
  kOffset = 20,
  kNbytes = 28,
  kGroup = 36,
  kBits = 40
};
inline size_t rec(size_t index, RecordField f) { return kDirectoryAt + index * kRecordBytes + f; }

template <typename T>
void put(Bytes& b, size_t at, T value) {
  std::memcpy(b.data() + at, &value, sizeof value);
}
template <typename T>
T get(const Bytes& b, size_t at) {
  T value;
  std::memcpy(&value, b.data() + at, sizeof value);
  return value;
}

// "record 2 (layer00.q_proj)".
inline std::string who(size_t i) { return tiny_model().label(i); }

struct Case {
  std::string name;
  Bytes bytes;
  std::string expected;  // the first message of check_archive
  bool prefix = false;   // expected is a stable prefix of it
};

// Re-emit the tiny archive with archive_bytes after changing its tensors:
// offsets and nbytes are recomputed, so the layout stays consistent.
inline Bytes reemit(const std::function<void(std::vector<TensorData>&, std::vector<Bytes>&)>& change) {
  const Model& m = tiny_model();
  std::vector<TensorData> tensors(m.records().size());
  std::vector<Bytes> storage(m.records().size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    storage[i].assign(m.blob(i).begin(), m.blob(i).end());
    tensors[i].record = m.record(i);
  }
  change(tensors, storage);
  for (size_t i = 0; i < tensors.size(); ++i) tensors[i].bytes = storage[i];
  return archive_bytes(m.header(), m.codebooks(), tensors);
}

// The tiny archive with layer00.q_proj (record 2) stored as a valid ternary
// matrix of zeros; `poison` puts the invalid crumb 2 into its first byte.
inline Bytes ternary_archive(bool poison) {
  return reemit([&](std::vector<TensorData>& t, std::vector<Bytes>& s) {
    Record& r = t[2].record;
    r.bits = codec::kTernary;
    s[2].assign(codec::blob_bytes(r.shape[0], r.shape[1], r.bits, r.group), 0);
    if (poison) s[2][0] = 0x02;  // crumb 2 in the lowest two bits
  });
}

inline Bytes tokenizer_archive(const std::function<void(TokenizerModel&)>& change) {
  return reemit([&](std::vector<TensorData>&, std::vector<Bytes>& s) {
    TokenizerModel tm = parse_tokenizer_blob(s.back());
    change(tm);
    s.back() = serialize_tokenizer(tm);
  });
}

inline Bytes raw_tokenizer_archive(const Bytes& blob) {
  return reemit([&](std::vector<TensorData>&, std::vector<Bytes>& s) { s.back() = blob; });
}

// Every hand-made case. Header fields first, then codebooks, records,
// placement, truncation, tokenizer, content, non-archives.
inline std::vector<Case> all_cases() {
  std::vector<Case> cases;
  const Bytes& base = tiny();
  const Model& m = tiny_model();
  const uint64_t file_size = base.size();
  auto mutate = [&](std::string name, const std::function<void(Bytes&)>& f, std::string expected, bool prefix = false) {
    Bytes b = base;
    f(b);
    cases.push_back({std::move(name), std::move(b), std::move(expected), prefix});
  };
  auto field = [&](const char* name, uint32_t value, std::string expected) {
    mutate(
        std::string("header ") + name + " = " + std::to_string(value),
        [&](Bytes& b) { put<uint32_t>(b, hdr(name), value); }, std::move(expected));
  };

  // --- Header: tag ---------------------------------------------------------
  const std::string needle2 =
      "header: tag 0x05E12A83 is a Needle 2 archive (120-byte header); this tool reads Needle 3 (0x05E12A84)";
  mutate(
      "tag Needle 2", [](Bytes& b) { put<uint32_t>(b, 0, kTagNeedle2); }, needle2);
  mutate(
      "tag Needle 2, 120-byte file",
      [](Bytes& b) {
        put<uint32_t>(b, 0, kTagNeedle2);
        b.resize(kNeedle2HeaderBytes);
      },
      needle2);
  mutate(
      "tag unknown", [](Bytes& b) { put<uint32_t>(b, 0, 0xDEADBEEF); },
      "header: tag 0xDEADBEEF is not a .cact archive tag (Needle 3 is 0x05E12A84)");
  mutate(
      "tag byte-swapped", [](Bytes& b) { put<uint32_t>(b, 0, 0x842AE105); },
      "header: tag 0x842AE105 is not a .cact archive tag (Needle 3 is 0x05E12A84)");

  // --- Header: counts and geometry -----------------------------------------
  field("codebook_len", 16, "header: codebook_len 16 must be 28 for Needle 3");
  field("codebook_len", 0xFFFFFFFF, "header: codebook_len 4294967295 must be 28 for Needle 3");
  field("num_tensors", 0, "header: num_tensors 0 is outside 1..1048576");
  field("num_tensors", 0xFFFFFFFF, "header: num_tensors 4294967295 is outside 1..1048576");
  field("num_tensors", 100000, "file: 593617 bytes, but header, codebooks and 100000 directory records need 4400308");
  field("num_tensors", 129,
        "directory: 129 tensors, but the geometry needs at least 130 (129 through final_norm, then the tokenizer)");
  field("num_tensors", 131, "record 129 (heads.manifest): expected FP16 [h] with 1 <= h <= 16 inside the file");
  field("vocab", 0, "header: vocab 0 is outside 1..4194304");
  field("vocab", 1u << 23, "header: vocab 8388608 is outside 1..4194304");
  field("out_vocab", 1025, "header: out_vocab 1025 exceeds vocab 1024");
  field("d_model", 0, "header: d_model 0 is outside 1..65536");
  field("d_model", 1u << 17, "header: d_model 131072 is outside 1..65536");
  field("num_heads", 0, "header: num_heads 0 is outside 1..1024");
  field("num_kv_heads", 0, "header: num_kv_heads 0 is outside 1..1024");
  field("num_kv_heads", 3, "header: num_heads 4 is not divisible by num_kv_heads 3");
  field("num_layers", 0, "header: num_layers 0 is outside 1..64");
  field("num_layers", 65, "header: num_layers 65 is outside 1..64");
  field("qk_head_dim", 0, "header: qk_head_dim 0 is outside 2..4096");
  field("qk_head_dim", 33, "header: qk_head_dim 33 must be even (rotate-half RoPE)");
  field("v_head_dim", 0, "header: v_head_dim 0 is outside 1..4096");
  field("max_seq_len", 0, "header: max_seq_len 0 is outside 1..4194304");
  field("hada_n", 0, "header: hada_n 0 must be a power of two >= d_model 128");
  field("hada_n", 192, "header: hada_n 192 must be a power of two >= d_model 128");
  field("hada_n", 64, "header: hada_n 64 must be a power of two >= d_model 128");
  field("mhc_lanes", 0, "header: mhc_lanes 0 is outside 1..16");
  field("mhc_lanes", 17, "header: mhc_lanes 17 is outside 1..16");
  field("kv_bits", 5, "header: kv_bits 5 must be 8, 2, 3 or 4");
  field("kv_bits", 0, "header: kv_bits 0 must be 8, 2, 3 or 4");
  field("qkv_conv_taps", 17, "header: qkv_conv_taps 17 is outside 0..16");
  field("global_mask_lo", 1u << 4, "header: global_mask sets layers at or past num_layers 4");
  field("global_mask_hi", 1, "header: global_mask sets layers at or past num_layers 4");
  mutate(
      "header rope_theta = NaN",
      [](Bytes& b) { put<float>(b, hdr("rope_theta"), std::numeric_limits<float>::quiet_NaN()); },
      "header: rope_theta nan must be finite and > 1");
  mutate(
      "header rope_theta = inf",
      [](Bytes& b) { put<float>(b, hdr("rope_theta"), std::numeric_limits<float>::infinity()); },
      "header: rope_theta inf must be finite and > 1");
  mutate(
      "header rope_theta = 0.5", [](Bytes& b) { put<float>(b, hdr("rope_theta"), 0.5f); },
      "header: rope_theta 0.500000 must be finite and > 1");
  // Engram geometry (the tiny model: sites 0 and 2, orders 2 and 3, 2 tables x 64, 1024 slots).
  field("num_engram_sites", 17, "header: num_engram_sites 17 is outside 0..16");
  field("engram_sites[0]", 2, "header: engram_sites[1] 2 is not above engram_sites[0] 2 (sites must be ascending)");
  field("engram_sites[1]", 4, "header: engram_sites[1] 4 is not below num_layers 4");
  field("engram_sites[2]", 3, "header: engram_sites[2] 3 is past num_engram_sites and must be 0");
  field("num_engram_orders", 0, "header: num_engram_orders 0 is outside 1..4");
  field("num_engram_orders", 5, "header: num_engram_orders 5 is outside 1..4");
  field("engram_orders[0]", 0, "header: engram_orders[0] 0 must be 1..4");
  field("engram_orders[1]", 5, "header: engram_orders[1] 5 must be 1..4");
  field("engram_orders[2]", 1, "header: engram_orders[2] 1 is unused and must be 0");
  field("num_engram_tables", 3, "header: num_engram_tables 3 must be a positive multiple of num_engram_orders");
  field("num_engram_tables", 0, "header: num_engram_tables 0 must be a positive multiple of num_engram_orders");
  field("engram_sub_dim", 32, "header: num_engram_tables x engram_sub_dim (2 x 32) must equal d_model 128");
  field("engram_sub_dim", 0, "header: engram_sub_dim 0 is outside 1..65536");
  field("engram_slots", 0, "header: engram_slots 0 is outside 1..16777216");
  field("engram_conv_taps", 0, "header: engram_conv_taps 0 is outside 1..16");
  field("engram_conv_dilation", 0, "header: engram_conv_dilation 0 is outside 1..16");
  field("engram_seed_heads", 1u << 20, "header: engram_seed_heads 1048576 is outside 0..65536");
  // A geometry whose engram table rows (tables x slots) overflow 32 bits.
  mutate(
      "header engram tables x slots overflow",
      [](Bytes& b) {
        put<uint32_t>(b, hdr("d_model"), 512);
        put<uint32_t>(b, hdr("hada_n"), 512);
        put<uint32_t>(b, hdr("num_engram_tables"), 512);
        put<uint32_t>(b, hdr("engram_sub_dim"), 1);
        put<uint32_t>(b, hdr("engram_slots"), 1u << 24);
      },
      "header: num_engram_tables x engram_slots (512 x 16777216) exceeds 4294967295 table rows");

  // --- Codebooks -----------------------------------------------------------
  mutate(
      "codebook entry 1 NaN",
      [](Bytes& b) { put<float>(b, kCodebooksAt + 4, std::numeric_limits<float>::quiet_NaN()); },
      "codebooks: entry 1 is not finite");
  mutate(
      "codebook entry 27 -inf",
      [](Bytes& b) { put<float>(b, kCodebooksAt + 27 * 4, -std::numeric_limits<float>::infinity()); },
      "codebooks: entry 27 is not finite");
  mutate(
      "codebook 2-bit not ascending",
      [](Bytes& b) {
        const float a = get<float>(b, kCodebooksAt + 2 * 4), c = get<float>(b, kCodebooksAt + 3 * 4);
        put<float>(b, kCodebooksAt + 2 * 4, c);
        put<float>(b, kCodebooksAt + 3 * 4, a);
      },
      "codebooks: entry 3 (0.040020) is not above the one before it in the 2-bit codebook");
  mutate(
      "codebook 4-bit repeated entry",
      [](Bytes& b) { put<float>(b, kCodebooksAt + 20 * 4, get<float>(b, kCodebooksAt + 19 * 4)); },
      "codebooks: entry 20 (-0.011349) is not above the one before it in the 4-bit codebook");

  // --- Records: fields -----------------------------------------------------
  // Record 1 is layer00.norm_in (FP16 [128]), record 2 layer00.q_proj (CQ4 [128, 128]).
  mutate(
      "record dtype 9", [](Bytes& b) { put<uint8_t>(b, rec(1, kDtype), 9); },
      who(1) + ": dtype 9 is unknown (1 FP16, 2 FP32, 3 CQ, 4 RAW)");
  mutate(
      "record dtype 0", [](Bytes& b) { put<uint8_t>(b, rec(1, kDtype), 0); },
      who(1) + ": dtype 0 is unknown (1 FP16, 2 FP32, 3 CQ, 4 RAW)");
  mutate(
      "record pad 1", [](Bytes& b) { put<uint16_t>(b, rec(1, kPad), 1); }, who(1) + ": pad 1 must be 0");
  mutate(
      "record ndim 5", [](Bytes& b) { put<uint8_t>(b, rec(1, kNdim), 5); }, who(1) + ": ndim 5 exceeds 4");
  mutate(
      "record ndim 255", [](Bytes& b) { put<uint8_t>(b, rec(2, kNdim), 255); }, who(2) + ": ndim 255 exceeds 4");
  mutate(
      "record unused shape entry", [](Bytes& b) { put<uint32_t>(b, rec(1, kShape) + 8, 7); },
      who(1) + ": shape[2] 7 is unused and must be 0");
  mutate(
      "record zero dimension", [](Bytes& b) { put<uint32_t>(b, rec(1, kShape), 0); }, who(1) + ": shape[0] is 0");
  mutate(
      "record CQ zero dimension", [](Bytes& b) { put<uint32_t>(b, rec(2, kShape) + 4, 0); },
      who(2) + ": shape[1] is 0");
  mutate(
      "record FP16 with group", [](Bytes& b) { put<uint32_t>(b, rec(1, kGroup), 128); },
      who(1) + ": group/bits must be 0 for FP16");
  mutate(
      "record RAW with ndim 1",
      [](Bytes& b) {
        put<uint8_t>(b, rec(129, kNdim), 1);
        put<uint32_t>(b, rec(129, kShape), 12369);
      },
      who(129) + ": RAW tensor must have ndim 0");
  mutate(
      "record CQ ndim 3",
      [](Bytes& b) {
        put<uint8_t>(b, rec(2, kNdim), 3);
        put<uint32_t>(b, rec(2, kShape) + 8, 1);
      },
      who(2) + ": CQ tensor must have ndim 2, has 3");
  mutate(
      "record CQ bits 6", [](Bytes& b) { put<uint32_t>(b, rec(2, kBits), 6); },
      who(2) + ": CQ bits 6 is not a supported width (1, 2, 3, 4, 5 = ternary)");
  mutate(
      "record CQ bits 0", [](Bytes& b) { put<uint32_t>(b, rec(2, kBits), 0); },
      who(2) + ": CQ bits 0 is not a supported width (1, 2, 3, 4, 5 = ternary)");
  mutate(
      "record CQ group 0", [](Bytes& b) { put<uint32_t>(b, rec(2, kGroup), 0); },
      who(2) + ": CQ group 0 is not supported (a power of two, 8..4096)");
  mutate(
      "record CQ group 24 (not a power of two)", [](Bytes& b) { put<uint32_t>(b, rec(2, kGroup), 24); },
      who(2) + ": CQ group 24 is not supported (a power of two, 8..4096)");
  mutate(
      "record CQ group 8192", [](Bytes& b) { put<uint32_t>(b, rec(2, kGroup), 8192); },
      who(2) + ": CQ group 8192 is not supported (a power of two, 8..4096)");
  mutate(
      "record CQ width changed, size kept", [](Bytes& b) { put<uint32_t>(b, rec(2, kBits), 2); },
      who(2) + ": nbytes 8448, expected 4352 for CQ2 [128, 128]");
  mutate(
      "record nbytes too big", [](Bytes& b) { put<uint64_t>(b, rec(1, kNbytes), 258); },
      who(1) + ": nbytes 258, expected 256 for FP16 [128]");
  mutate(
      "record nbytes too small", [](Bytes& b) { put<uint64_t>(b, rec(1, kNbytes), 254); },
      who(1) + ": nbytes 254, expected 256 for FP16 [128]");
  mutate(
      "record nbytes huge", [](Bytes& b) { put<uint64_t>(b, rec(1, kNbytes), ~uint64_t(0)); },
      who(1) + ": nbytes 18446744073709551615, expected 256 for FP16 [128]");
  mutate(
      "record shape vs canon",
      [](Bytes& b) {
        put<uint8_t>(b, rec(1, kNdim), 2);
        put<uint32_t>(b, rec(1, kShape), 2);
        put<uint32_t>(b, rec(1, kShape) + 4, 64);
      },
      who(1) + ": shape [2, 64], expected [128]");
  mutate(
      "record CQ shape vs canon",
      [](Bytes& b) {
        put<uint32_t>(b, rec(3, kShape), 32);  // k_proj [64, 128] -> [32, 256]: same CQ4 size
        put<uint32_t>(b, rec(3, kShape) + 4, 256);
      },
      who(3) + ": shape [32, 256], expected [64, 128]");
  mutate(
      "record dtype vs canon",
      [](Bytes& b) {
        put<uint8_t>(b, rec(1, kDtype), uint8_t(Dtype::FP32));
        put<uint32_t>(b, rec(1, kShape), 64);
      },
      who(1) + ": dtype FP32, expected FP16");
  mutate(
      "record tokenizer not RAW",
      [](Bytes& b) {
        put<uint8_t>(b, rec(127, kDtype), uint8_t(Dtype::RAW));  // engram1.taps FP16 [4, 128] -> RAW
        put<uint8_t>(b, rec(127, kNdim), 0);
        put<uint64_t>(b, rec(127, kShape), 0);
      },
      who(127) + ": dtype RAW, expected FP16");

  // --- Records: placement --------------------------------------------------
  const uint64_t off1 = m.record(1).offset, off2 = m.record(2).offset;
  mutate(
      "record offset misaligned", [&](Bytes& b) { put<uint64_t>(b, rec(1, kOffset), off1 + 4); },
      who(1) + ": offset " + std::to_string(off1 + 4) + " is not a multiple of 64");
  mutate(
      "record offset inside the directory", [](Bytes& b) { put<uint64_t>(b, rec(0, kOffset), 64); },
      who(0) + ": offset 64 lies inside the header/directory (ends at 6028)");
  mutate(
      "record offset 0", [](Bytes& b) { put<uint64_t>(b, rec(5, kOffset), 0); },
      who(5) + ": offset 0 lies inside the header/directory (ends at 6028)");
  mutate(
      "record overlap", [&](Bytes& b) { put<uint64_t>(b, rec(2, kOffset), off1); },
      who(2) + ": offset " + std::to_string(off1) + ", expected " + std::to_string(off2) +
          " (overlaps the previous blob)");
  mutate(
      "record gap", [&](Bytes& b) { put<uint64_t>(b, rec(1, kOffset), off1 + 64); },
      who(1) + ": offset " + std::to_string(off1 + 64) + ", expected " + std::to_string(off1) +
          " (gap after the previous blob)");
  mutate(
      "record offset past end", [&](Bytes& b) { put<uint64_t>(b, rec(129, kOffset), 1u << 30); },
      who(129) + ": offset 1073741824, expected 581248 (gap after the previous blob)");
  const uint64_t tok_off = m.record(129).offset;
  mutate(
      "record offset + nbytes wraps u64",
      [&](Bytes& b) { put<uint64_t>(b, rec(129, kNbytes), ~uint64_t(0) - tok_off + 100); },
      who(129) + ": blob [581248, +" + std::to_string(~uint64_t(0) - tok_off + 100) +
          ") runs past the end of the file (593617 bytes)");
  mutate(
      "record offset near 2^64",
      [&](Bytes& b) {
        put<uint64_t>(b, rec(129, kOffset), ~uint64_t(63));
        put<uint64_t>(b, rec(129, kNbytes), 128);
      },
      who(129) + ": offset 18446744073709551552, expected 581248 (gap after the previous blob)");
  // Layer00.attn_gate (record 13, 2 bytes) is followed by 62 bytes of padding.
  const uint64_t pad_at = m.record(13).offset + 2 + 17;
  mutate(
      "padding byte not zero", [&](Bytes& b) { b[pad_at] = 0x5A; },
      who(14) + ": padding byte at " + std::to_string(pad_at) + " before the blob is not zero");
  mutate(
      "directory padding not zero", [](Bytes& b) { b[6040] = 1; },
      who(0) + ": padding byte at 6040 before the blob is not zero");
  mutate(
      "trailing garbage", [](Bytes& b) { b.insert(b.end(), 100, 0xAB); },
      "file: 100 unexpected bytes after the last blob (ends at 593617)");
  mutate(
      "trailing 64 zero bytes", [](Bytes& b) { b.insert(b.end(), 64, 0); },
      "file: 64 unexpected bytes after the last blob (ends at 593617)");

  // --- Truncation at every region boundary ---------------------------------
  auto truncated = [&](uint64_t size, std::string expected, bool prefix = false) {
    mutate(
        "truncated to " + std::to_string(size) + " bytes", [&](Bytes& b) { b.resize(size); }, std::move(expected),
        prefix);
  };
  truncated(0, "file: 0 bytes, shorter than the 196-byte header");
  truncated(3, "file: 3 bytes, shorter than the 196-byte header");
  truncated(100, "file: 100 bytes, shorter than the 196-byte header");
  truncated(195, "file: 195 bytes, shorter than the 196-byte header");
  for (uint64_t size : {uint64_t(196), uint64_t(250), uint64_t(308), uint64_t(4000), uint64_t(6027)}) {
    truncated(size,
              "file: " + std::to_string(size) + " bytes, but header, codebooks and 130 directory records need 6028");
  }
  // A cut file is one problem, whichever blob the cut falls in (check_archive.cpp).
  auto past_end = [&](size_t, uint64_t size) {
    return "truncated: " + std::to_string(size) + " of " + std::to_string(file_size) + " bytes";
  };
  truncated(6028, past_end(0, 6028));
  for (size_t i = 0; i < m.records().size(); ++i) {
    const Record& r = m.record(i);
    truncated(r.offset, past_end(i, r.offset));                                                  // blob start
    if (r.nbytes > 1) truncated(r.offset + r.nbytes / 2, past_end(i, r.offset + r.nbytes / 2));  // mid-blob
    if (i > 0 && m.record(i - 1).offset + m.record(i - 1).nbytes < r.offset) {
      truncated(m.record(i - 1).offset + m.record(i - 1).nbytes + 1,
                past_end(i, m.record(i - 1).offset + m.record(i - 1).nbytes + 1));  // in padding
    }
  }
  truncated(file_size - 1, past_end(129, file_size - 1));  // the last byte

  // --- Tokenizer blob lying about sizes ------------------------------------
  const std::string tok = who(129) + ": tokenizer blob: ";
  mutate(
      "tokenizer n_pieces 2^32-1", [&](Bytes& b) { put<uint32_t>(b, tok_off, 0xFFFFFFFF); },
      tok + "n_pieces 4294967295 needs at least 30064771089 bytes but the blob has 12369");
  mutate(
      "tokenizer n_pieces 0", [&](Bytes& b) { put<uint32_t>(b, tok_off, 0); },
      tok + "n_pieces 0: a tokenizer needs at least one piece");
  mutate(
      "tokenizer n_pieces one too many", [&](Bytes& b) { put<uint32_t>(b, tok_off, 1025); },
      tok + "piece 1024 record at offset 12369 runs past the end of the blob (12369 bytes)");
  mutate(
      "tokenizer n_pieces too few", [&](Bytes& b) { put<uint32_t>(b, tok_off, 1000); }, tok, /*prefix=*/true);
  mutate(
      "tokenizer surface_len past end", [&](Bytes& b) { put<uint16_t>(b, tok_off + 24 + 5, 0xFFFF); },
      tok + "piece 0 surface_len 65535 runs past the end of the blob (12369 bytes)");
  mutate(
      "tokenizer special id >= n_pieces", [&](Bytes& b) { put<uint32_t>(b, tok_off + 16, 5000); },
      tok + "unk_id 5000 is not below n_pieces 1024");
  mutate(
      "tokenizer eos id huge", [&](Bytes& b) { put<uint32_t>(b, tok_off + 8, 0xFFFFFFFF); },
      tok + "eos_id 4294967295 is not below n_pieces 1024");
  mutate(
      "tokenizer piece type 7", [&](Bytes& b) { put<uint8_t>(b, tok_off + 24 + 4, 7); },
      tok + "piece 0 has type 7 (known: 0-4)");
  mutate(
      "tokenizer header pad", [&](Bytes& b) { put<uint16_t>(b, tok_off + 22, 9); }, tok + "header pad is 9, not 0");
  mutate(
      "tokenizer add_dummy_prefix 2", [&](Bytes& b) { put<uint8_t>(b, tok_off + 20, 2); },
      tok + "add_dummy_prefix is 2, not 0 or 1");
  cases.push_back(
      {"tokenizer blob empty", raw_tokenizer_archive({}), tok + "0 bytes is shorter than the 24-byte header"});
  cases.push_back({"tokenizer more pieces than vocab", tokenizer_archive([](TokenizerModel& t) {
                     t.pieces.push_back({"zz-extra-piece", -100.0f, PieceType::Normal});
                   }),
                   who(129) + ": tokenizer has 1025 pieces, more than vocab 1024"});

  // --- Content: ternary crumbs ---------------------------------------------
  cases.push_back(
      {"ternary blob with crumb 2", ternary_archive(true), who(2) + ": ternary blob holds the invalid crumb 2"});

  // --- Content: the Hadamard permutations (record 118 hada_p1, 119 hada_p2, FP32 [128]) ----
  const uint64_t p1 = m.record(118).offset, p2 = m.record(119).offset;
  mutate(
      "hada_p1 entry out of range", [&](Bytes& b) { put<float>(b, p1 + 3 * 4, 128.0f); },
      who(118) + ": entry 3 (128) is not an integer in 0..127: not a permutation of 0..127");
  mutate(
      "hada_p1 entry not an integer", [&](Bytes& b) { put<float>(b, p1, 2.5f); },
      who(118) + ": entry 0 (2.5) is not an integer in 0..127: not a permutation of 0..127");
  mutate(
      "hada_p2 entry NaN", [&](Bytes& b) { put<float>(b, p2 + 7 * 4, std::numeric_limits<float>::quiet_NaN()); },
      who(119) + ": entry 7 (nan) is not an integer in 0..127: not a permutation of 0..127");
  mutate(
      "hada_p2 entry repeated", [&](Bytes& b) { put<float>(b, p2 + 4, get<float>(b, p2)); },
      who(119) + ": entry 1 (" + std::to_string(int(get<float>(base, p2))) +
          ") repeats an earlier entry: not a permutation of 0..127");

  // --- Not an archive at all -----------------------------------------------
  {
    Bytes text = read_bytes(models_dir() / "corpus.txt");
    text.resize(4096);
    uint32_t tag;
    std::memcpy(&tag, text.data(), 4);
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08X", tag);
    cases.push_back({"a text file", text,
                     std::string("header: tag ") + hex + " is not a .cact archive tag (Needle 3 is 0x05E12A84)"});
    cases.push_back(
        {"a short text file", Bytes{'h', 'e', 'l', 'l', 'o', '\n'}, "file: 6 bytes, shorter than the 196-byte header"});
    cases.push_back(
        {"all zeros", Bytes(4096, 0), "header: tag 0x00000000 is not a .cact archive tag (Needle 3 is 0x05E12A84)"});
    cases.push_back(
        {"all 0xFF", Bytes(4096, 0xFF), "header: tag 0xFFFFFFFF is not a .cact archive tag (Needle 3 is 0x05E12A84)"});
    Bytes tokmodel = read_bytes(models_dir() / "tok.model");
    std::memcpy(&tag, tokmodel.data(), 4);
    std::snprintf(hex, sizeof hex, "0x%08X", tag);
    cases.push_back({"a SentencePiece model", tokmodel,
                     std::string("header: tag ") + hex + " is not a .cact archive tag (Needle 3 is 0x05E12A84)"});
  }
  return cases;
}

}  // namespace cact::test::malformed
