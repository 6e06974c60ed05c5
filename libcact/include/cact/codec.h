#pragma once
// CQ codec: normalised Walsh-Hadamard transform, Gaussian Lloyd-Max codebooks,
// bit packing and (de)quantisation of [out, in] matrices. Pure math: no files.
// Layout and rules: FORMAT.md "CQ blob"; choices: docs/CODEC.md.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cact::codec {

inline constexpr uint32_t kGroup = 128;           // CQ group of every shipped archive
inline constexpr uint32_t kTernary = 5;           // directory "bits" value meaning ternary
inline constexpr size_t kStoredCodebookLen = 28;  // 4 + 8 + 16 entries (2, 3, 4 bits)

// True for the widths the format carries: 1, 2, 3, 4, 5 (= ternary).
bool valid_bits(uint32_t bits);
// Bits per packed index: `bits`, or 2 for ternary crumbs.
uint32_t index_bits(uint32_t bits);
// Number of codebook entries for a width: 2, 4, 8, 16, or 3 for ternary.
uint32_t levels(uint32_t bits);
// `in` rounded up to a multiple of `group`.
uint32_t padded_in(uint32_t in, uint32_t group);
// Bytes of one packed row of `in_pad` indices.
size_t packed_row_bytes(uint32_t in_pad, uint32_t bits);
// Exact blob size for a CQ matrix: packed rows then FP16 norms. 0 if the
// arguments are not a valid CQ shape (bits unsupported, group 0 or not a
// multiple of 8, sizes overflowing).
uint64_t blob_bytes(uint64_t out, uint64_t in, uint32_t bits, uint32_t group);

// In-place normalised fast Walsh-Hadamard transform (H/sqrt(n)); n a power of 2.
void fwht(float* x, size_t n);
void fwht(double* x, size_t n);

// Lloyd-Max quantiser of a standard normal with `levels` levels, computed by
// iteration to convergence in double precision, ascending.
std::vector<double> lloyd_max_gaussian(unsigned levels);

// The 28 stored f32 values (2-, 3-, 4-bit codebooks divided by sqrt(128)).
std::array<float, kStoredCodebookLen> standard_codebooks();

// The unit-vector codebook for a width, from the file's stored values (bits
// 2..4) or analytically (1 = binary, 5 = ternary), for a given group size.
// Stored values are for group 128; other groups rescale by sqrt(128/group).
std::vector<float> codebook_for(uint32_t bits, std::span<const float> stored, uint32_t group = kGroup);

// Ternary crumb encoding: trit index 0,1,2 <-> crumb 3,0,1.
uint8_t trit_to_crumb(uint8_t trit);
// Returns 0..2, or -1 for the invalid crumb 2.
int crumb_to_trit(uint8_t crumb);

// Pack `n` codebook indices (0..levels-1) into an LSB-first bit stream of
// index_bits(bits) per index; `out` must hold ceil(n*w/8) bytes (zeroed here).
void pack_indices(const uint8_t* indices, size_t n, uint32_t bits, uint8_t* out);
// Inverse of pack_indices. Returns false if a ternary crumb is invalid (2).
bool unpack_indices(const uint8_t* packed, size_t n, uint32_t bits, uint8_t* indices);

// Index of the nearest entry of an ascending codebook; ties go to the lower
// entry (FORMAT.md). Every quantiser in the project uses this one scan.
inline uint8_t nearest_index(float u, std::span<const float> codebook) {
  size_t best = 0;
  float best_distance = u > codebook[0] ? u - codebook[0] : codebook[0] - u;
  for (size_t i = 1; i < codebook.size(); ++i) {
    const float distance = u > codebook[i] ? u - codebook[i] : codebook[i] - u;
    if (distance < best_distance) {
      best = i;
      best_distance = distance;
    }
  }
  return uint8_t(best);
}

// A CQ matrix blob seen in place.
struct CqMatrix {
  const uint8_t* packed = nullptr;  // out rows of row_bytes
  const uint8_t* norms = nullptr;   // out * groups_per_row FP16 values
  uint32_t out = 0, in = 0, in_pad = 0, bits = 0, group = kGroup;
  size_t row_bytes = 0;
  uint32_t groups_per_row() const { return in_pad / group; }
  const uint8_t* row(uint32_t r) const { return packed + r * row_bytes; }
  float norm(uint32_t r, uint32_t g) const;
};
// View a blob as a CQ matrix; throws cact::Error if the size does not match.
CqMatrix view_matrix(std::span<const uint8_t> blob, uint32_t out, uint32_t in, uint32_t bits, uint32_t group = kGroup);

// Quantise a row-major float [out, in] matrix to a CQ blob (FORMAT.md rules:
// rotate each group, FP16 norm, nearest entry, ties to the lower entry).
std::vector<uint8_t> quantize_matrix(const float* w, uint32_t out, uint32_t in, uint32_t bits,
                                     std::span<const float> codebook, uint32_t group = kGroup);
// Dequantise row r into `in` floats (padding dropped).
void dequantize_row(const CqMatrix& m, uint32_t r, std::span<const float> codebook, float* out);
// The stored codebook index of row r, column k (for inspection and tests).
uint8_t index_at(const CqMatrix& m, uint32_t r, uint32_t k);

}  // namespace cact::codec
