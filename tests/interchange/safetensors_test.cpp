// The safetensors reader and writer: round trips, and one test per way a file
// can lie, each checking the message.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cact/safetensors.h"
#include "interchange/fixtures.h"
#include "support/test_paths.h"

using namespace cact;
using namespace cact::safetensors;
using cact::test::error_of;

namespace {

// A file from a literal JSON header and a data section (no checks: it may lie).
std::vector<uint8_t> raw_file(const std::string& json, size_t data_bytes, uint64_t length_override = 0) {
  std::vector<uint8_t> out(8 + json.size() + data_bytes);
  const uint64_t n = length_override ? length_override : json.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, json.data(), json.size());
  for (size_t i = 0; i < data_bytes; ++i) out[8 + json.size() + i] = uint8_t(i);
  return out;
}

std::string parse_error(const std::vector<uint8_t>& bytes) {
  return error_of([&] { File::from_bytes(bytes, "x.safetensors"); });
}

}  // namespace

TEST_CASE("safetensors: write then read gives the same names, dtypes, shapes, bytes and metadata") {
  std::vector<OwnedTensor> ts;
  const std::vector<float> a{1.0f, -2.5f, 3.25f, 0.0f, 1e-30f, -7.0f};
  ts.push_back(f32_tensor("a", {2, 3}, a));
  OwnedTensor h;
  h.spec = {"h", DType::F16, {3}};
  h.bytes = {0x00, 0x3C, 0x00, 0xC0, 0x00, 0x00};  // 1, -2, 0
  ts.push_back(h);
  OwnedTensor b;
  b.spec = {"b", DType::BF16, {1}};
  b.bytes = {0x80, 0x3F};  // 1.0
  ts.push_back(b);
  OwnedTensor e;
  e.spec = {"empty", DType::F32, {0, 4}};
  ts.push_back(e);
  const auto bytes = serialize(ts, {{"format", "pt"}, {"note", "ünïcode"}});
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  CHECK((8 + n) % 8 == 0);  // header padded with spaces to an 8-byte boundary
  const File f = File::from_bytes(bytes);
  REQUIRE(f.tensors().size() == 4);
  CHECK(f.tensors()[0].name == "a");  // header order kept
  CHECK(f.tensors()[1].name == "h");
  CHECK(f.metadata().at("note") == "ünïcode");
  CHECK(to_float(*f.find("a")) == a);
  CHECK(to_float(*f.find("h")) == std::vector<float>{1.0f, -2.0f, 0.0f});
  CHECK(to_float(*f.find("b")) == std::vector<float>{1.0f});
  CHECK(f.find("empty")->elements() == 0);
  CHECK(f.find("nope") == nullptr);
  CHECK(serialize(ts, {{"format", "pt"}, {"note", "ünïcode"}}) == bytes);  // deterministic
}

TEST_CASE("safetensors: the streaming writer is atomic and refuses to overwrite an input") {
  const auto dir = cact::test::scratch_dir("st-write");
  const std::vector<safetensors::TensorSpec> specs{{"x", DType::F32, {2}}};
  safetensors::write(dir / "a.safetensors", specs, {}, [](size_t, std::vector<uint8_t>& b) { b.assign(8, 0); });
  CHECK(File::open(dir / "a.safetensors").tensors().size() == 1);
  const std::filesystem::path inputs[] = {dir / "a.safetensors"};
  CHECK(error_of([&] {
          safetensors::write(
              dir / "a.safetensors", specs, {}, [](size_t, std::vector<uint8_t>& b) { b.assign(8, 0); }, inputs);
        }).find("output path is the input file") != std::string::npos);
  // A producer giving the wrong size leaves nothing behind.
  CHECK(error_of([&] {
          safetensors::write(dir / "b.safetensors", specs, {}, [](size_t, std::vector<uint8_t>& b) { b.assign(4, 0); });
        }) == "safetensors writer: tensor \"x\" produced 4 bytes, expected 8");
  CHECK(!std::filesystem::exists(dir / "b.safetensors"));
}

TEST_CASE("safetensors: the writer refuses duplicate and reserved names") {
  std::vector<OwnedTensor> ts{f32_tensor("a", {1}, std::vector<float>{1}), f32_tensor("a", {1}, std::vector<float>{2})};
  CHECK(error_of([&] { serialize(ts); }) == "safetensors writer: tensor \"a\" is given twice");
  ts = {f32_tensor("__metadata__", {1}, std::vector<float>{1})};
  CHECK(error_of([&] { serialize(ts); }) == "safetensors writer: \"__metadata__\" cannot name a tensor");
}

TEST_CASE("safetensors: truncated files") {
  const auto good = serialize(std::vector<OwnedTensor>{f32_tensor("w", {2, 2}, std::vector<float>{1, 2, 3, 4})});
  CHECK(parse_error({good.begin(), good.begin() + 5}) ==
        "x.safetensors: file is 5 bytes, shorter than the 8-byte header length");
  CHECK(parse_error({good.begin(), good.begin() + 20}).starts_with("x.safetensors: header length "));
  CHECK(
      parse_error({good.begin(), good.begin() + 20}).ends_with("runs past the end of the file (20 bytes; truncated?)"));
  // Header intact, data cut short.
  const std::string m = parse_error({good.begin(), good.end() - 3});
  CHECK(m == "x.safetensors: tensor \"w\": data_offsets [0, 16] run past the data section (13 bytes; truncated?)");
}

TEST_CASE("safetensors: header length 0, absurd, or not JSON") {
  CHECK(parse_error(raw_file("", 0)) == "x.safetensors: header length is 0");
  CHECK(parse_error(raw_file("{}", 0, uint64_t(1) << 40)).find("exceeds the 100 MB limit") != std::string::npos);
  CHECK(parse_error(raw_file("[1]", 0)) == "x.safetensors: header does not start with '{'");
  CHECK(parse_error(raw_file("{\"a\": ", 0)).starts_with("x.safetensors: header: invalid JSON: parse error"));
}

TEST_CASE("safetensors: duplicate names are refused, not silently merged") {
  const std::string json =
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  CHECK(parse_error(raw_file(json, 8)) == "x.safetensors: header: key \"w\" appears more than once in one object");
}

TEST_CASE("safetensors: entry fields") {
  auto one = [](const std::string& entry, size_t data = 4) {
    return parse_error(raw_file("{\"w\":" + entry + "}", data));
  };
  CHECK(one(R"({"dtype":"F33","shape":[1],"data_offsets":[0,4]})") ==
        "x.safetensors: tensor \"w\": dtype \"F33\" is not a safetensors dtype");
  CHECK(one(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})") ==
        "x.safetensors: tensor \"w\": shape[0] is a negative integer, not a non-negative integer");
  CHECK(one(R"({"dtype":"F32","shape":[1.5],"data_offsets":[0,4]})") ==
        "x.safetensors: tensor \"w\": shape[0] is a number with a fraction or exponent, not a non-negative integer");
  CHECK(one(R"({"dtype":"F32","shape":[1]})") == "x.safetensors: tensor \"w\": missing \"data_offsets\"");
  CHECK(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1})") ==
        "x.safetensors: tensor \"w\": unexpected key \"extra\"");
  CHECK(one(R"({"dtype":"F32","shape":[1],"data_offsets":[4,0]})") ==
        "x.safetensors: tensor \"w\": data_offsets [4, 0] end before they begin");
  CHECK(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})") ==
        "x.safetensors: tensor \"w\": F32 [2] needs 8 bytes, data_offsets span 4");
  CHECK(one(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]})") ==
        "x.safetensors: tensor \"w\": shape [4294967296, 4294967296] overflows");
  CHECK(one(R"([1,2])") == "x.safetensors: tensor \"w\" is array, not an object");
  CHECK(parse_error(raw_file(R"({"__metadata__":{"a":1}})", 0)) ==
        "x.safetensors: __metadata__ \"a\" is an unsigned integer, not a string");
}

TEST_CASE("safetensors: ranges must tile the data section") {
  const std::string overlap =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  CHECK(parse_error(raw_file(overlap, 8)) ==
        "x.safetensors: tensor \"b\" [4, 8) overlaps tensor \"a\" (which ends at 8)");
  const std::string hole =
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
  CHECK(parse_error(raw_file(hole, 12)) ==
        "x.safetensors: bytes [4, 8) of the data section before tensor \"b\" belong to no tensor");
  const std::string tail = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  CHECK(parse_error(raw_file(tail, 6)) ==
        "x.safetensors: 2 bytes after the last tensor (ends at 4) belong to no tensor");
  // Out of order in the header but tiling: fine.
  const std::string swapped =
      R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  CHECK(File::from_bytes(raw_file(swapped, 8)).tensors().size() == 2);
}

TEST_CASE("safetensors: only F32, F16 and BF16 convert to floats") {
  const std::string json = R"({"ids":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})";
  const File f = File::from_bytes(raw_file(json, 8));
  CHECK(f.find("ids")->dtype == DType::I64);
  CHECK(error_of([&] { to_float(*f.find("ids")); }) ==
        "tensor \"ids\": dtype I64 is not a float type (F32, F16 or BF16)");
}

TEST_CASE("safetensors: for_each_chunk and read_floats give to_float's values in order, in chunks") {
  std::vector<float> values(10);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i) * 0.5f - 2.0f;
  std::vector<OwnedTensor> ts;
  ts.push_back(f32_tensor("t", {2, 5}, values));
  OwnedTensor h;
  h.spec = {"h", DType::F16, {3}};
  h.bytes = {0x00, 0x3C, 0x00, 0xC0, 0x00, 0x00};  // 1, -2, 0
  ts.push_back(h);
  const auto bytes = serialize(ts, {});
  const File f = File::from_bytes(bytes);
  std::vector<uint64_t> firsts, sizes;
  std::vector<float> seen;
  f.for_each_chunk(*f.find("t"), 4, [&](uint64_t first, std::span<const float> v) {
    firsts.push_back(first);
    sizes.push_back(v.size());
    seen.insert(seen.end(), v.begin(), v.end());
  });
  CHECK(firsts == std::vector<uint64_t>{0, 4, 8});
  CHECK(sizes == std::vector<uint64_t>{4, 4, 2});
  CHECK(seen == values);
  CHECK(f.read_floats(*f.find("t")) == values);
  CHECK(f.read_floats(*f.find("h")) == std::vector<float>{1.0f, -2.0f, 0.0f});
  size_t calls = 0;
  f.for_each_chunk(*f.find("h"), 0, [&](uint64_t, std::span<const float> v) { calls += v.size() == 1 ? 1 : 100; });
  CHECK(calls == 3);  // a chunk of 0 elements reads one at a time
}
