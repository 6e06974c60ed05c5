#pragma once
// Shared inputs of the interchange tests: small geometries, random float
// checkpoints of a canon, and file helpers.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "cact/canon.h"
#include "cact/format.h"
#include "cact/safetensors.h"

namespace cact::test {

// D = 128 (so every CQ matrix has in % 128 == 0: no padding), 2 layers, one
// engram site with one 128-wide table, qkv taps when `taps`. vocab 1024 (the
// license-tiny tokenizer fits).
Header tiny_geometry(bool taps = true);

// A checkpoint with every tensor of `canon` but the tokenizer: matrices and
// vectors drawn from a seeded normal (scale 0.05), hada_p1/p2 seeded
// permutations, heads.manifest the canon's codes (left out when
// `with_manifest` is false). F32 unless `dtype` says otherwise.
std::vector<safetensors::OwnedTensor> random_checkpoint(const Canon& canon, uint64_t seed, bool with_manifest = true,
                                                        safetensors::DType dtype = safetensors::DType::F32);

// Replace / drop / add one tensor of a checkpoint by name.
void set_tensor(std::vector<safetensors::OwnedTensor>& ckpt, safetensors::OwnedTensor t);
void drop_tensor(std::vector<safetensors::OwnedTensor>& ckpt, const std::string& name);
std::vector<float> floats_of(const safetensors::OwnedTensor& t);  // F32 only

void write_bytes(const std::filesystem::path& p, const std::vector<uint8_t>& bytes);
std::vector<uint8_t> read_bytes(const std::filesystem::path& p);

std::filesystem::path license_tiny();  // models/license-tiny.cact
std::filesystem::path tok_model();     // models/tok.model
std::filesystem::path golden_model();  // golden/tokenizer/golden.model (2000 pieces)

// The message of the cact::Error `f` throws ("" when it does not throw).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace cact::test
