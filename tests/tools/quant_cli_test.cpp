// cact-quant and cact-build checkpoint, run as programs: round trips through
// files, reports, and one-line refusals that leave no output behind.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cact/checkpoint.h"
#include "cact/geometry_json.h"
#include "cact/model.h"
#include "cact/safetensors.h"
#include "support/run_app.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;
using cact::test::AppRun;
using cact::test::run_app;
using cact::test::slurp;

namespace {

fs::path tiny() { return cact::test::models_dir() / "license-tiny.cact"; }
fs::path tok_model() { return cact::test::models_dir() / "tok.model"; }

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// license-tiny exported once per test into `dir`: t.safetensors + t.json.
void export_tiny(const fs::path& dir) {
  const AppRun r = run_app("cact-quant", {"dequantize", tiny(), dir / "t.safetensors"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
}

// A copy of a checkpoint with one tensor's bytes patched / removed.
void rewrite_checkpoint(const fs::path& in, const fs::path& out, const std::string& drop, const std::string& nan_in) {
  const auto f = cact::safetensors::File::open(in);
  std::vector<cact::safetensors::OwnedTensor> ts;
  for (const auto& t : f.tensors()) {
    if (t.name == drop) continue;
    cact::safetensors::OwnedTensor o;
    o.spec = {t.name, t.dtype, t.shape};
    o.bytes.assign(t.data.begin(), t.data.end());
    if (t.name == nan_in) {
      const float nan = std::nanf("");
      std::memcpy(o.bytes.data() + 4 * 7, &nan, 4);
    }
    ts.push_back(std::move(o));
  }
  const auto bytes = cact::safetensors::serialize(ts, f.metadata());
  std::ofstream(out, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

}  // namespace

TEST_CASE("cact-quant dequantize + cact-build checkpoint rebuild license-tiny byte for byte") {
  const fs::path dir = cact::test::scratch_dir("quant-cli");
  const AppRun d = run_app("cact-quant", {"dequantize", tiny(), dir / "t.safetensors", "--threads", "2"});
  CHECK(d.code == 0);
  CHECK(d.out.empty());
  CHECK(d.err.find("wrote " + (dir / "t.safetensors").string() + ": 129 tensors as F32") != std::string::npos);
  CHECK(fs::exists(dir / "t.json"));  // the default geometry path
  const AppRun b = run_app("cact-build", {"checkpoint", dir / "t.safetensors", dir / "t.json", dir / "t.cact",
                                          "--tokenizer", tok_model(), "--bits", "checkpoint", "--threads", "2"});
  CHECK(b.code == 0);
  CHECK(b.out.empty());
  CHECK(b.err.find("wrote " + (dir / "t.cact").string() +
                   ": 130 tensors (30 CQ4, 97 FP16, 2 FP32, 1 RAW), 593617 bytes") != std::string::npos);
  CHECK(b.err.find("%") == std::string::npos);  // no progress off a terminal without --progress
  CHECK(slurp(dir / "t.cact") == slurp(tiny()));
}

TEST_CASE("cact-build checkpoint: --report --json, --progress, --bits over the recorded widths") {
  const fs::path dir = cact::test::scratch_dir("quant-cli");
  export_tiny(dir);
  // The export records default=4 (docs/WIDTHS.md): --bits changes what it names.
  const AppRun b =
      run_app("cact-build", {"checkpoint", dir / "t.safetensors", dir / "t.json", dir / "o.cact", "--tokenizer", tiny(),
                             "--report", "--json", "--progress", "--bits", "default=2,embedding=4,mhc_phi=4"});
  REQUIRE_MESSAGE(b.code == 0, b.err);
  const auto j = nlohmann::json::parse(b.out);
  CHECK(j["tensors"].size() == 129);
  CHECK(j["totals"]["cq_tensors"] == 30);
  // The shipped layout: CQ4 embedding and mhc_phi, CQ2 for the rest.
  CHECK(j["tensors"][0]["kind"] == "CQ4");
  CHECK(j["tensors"][2]["kind"] == "CQ2");
  CHECK(j["tensors"][2]["name"] == "layer00.q_proj");
  CHECK(j["tensors"][2]["snr_db"].get<double>() > 5.0);
  CHECK(j["tensors"][0]["exact"] == true);  // CQ4 -> CQ4 snaps
  CHECK(b.err.find("cact-build:   0%") != std::string::npos);
  CHECK(b.err.find("cact-build: 100%") != std::string::npos);
  CHECK(b.err.find("widths:    the checkpoint's default=4 with default=2,embedding=4,mhc_phi=4") != std::string::npos);
  const cact::Model m = cact::Model::open(dir / "o.cact");
  CHECK(m.record(0).bits == 4);
}

TEST_CASE("cact-build checkpoint: bad checkpoints fail with one line and leave nothing behind") {
  const fs::path dir = cact::test::scratch_dir("quant-cli");
  export_tiny(dir);
  struct Case {
    const char* what;
    std::string drop, nan_in;
    std::vector<std::string> extra;
    std::string expected;
  };
  const std::string ck = (dir / "bad.safetensors").string();
  const Case cases[] = {
      {"missing tensor",
       "layer02.v_proj",
       "",
       {},
       ck + ": 1 problem: missing tensor layer02.v_proj (the geometry needs CQ [64, 128])"},
      {"NaN weight",
       "",
       "layer01.k_proj",
       {},
       ck + ": tensor layer01.k_proj: element [0, 7] is NaN (weights must be finite)"},
      {"bad width",
       "",
       "",
       {"--bits", "q_proj=6"},
       "bits map: 'q_proj=6': width must be 1, 2, 3, 4 or ternary (the widths the format carries)"},
      {"unknown key", "", "", {"--bits", "qproj=2"}, "bits map: key 'qproj' names no CQ tensor of this archive"},
      {"no map in the checkpoint", "", "", {"--bits", "checkpoint"}, "no \"cact.bits\" metadata"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    rewrite_checkpoint(dir / "t.safetensors", dir / "bad.safetensors", c.drop, c.nan_in);
    if (std::string(c.what) == "no map in the checkpoint") {
      // Strip the metadata.
      const auto f = cact::safetensors::File::open(dir / "bad.safetensors");
      std::vector<cact::safetensors::OwnedTensor> ts;
      for (const auto& t : f.tensors()) ts.push_back({{t.name, t.dtype, t.shape}, {t.data.begin(), t.data.end()}});
      const auto bytes = cact::safetensors::serialize(ts);
      std::ofstream(dir / "bad.safetensors", std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    }
    std::vector<std::string> args = {"checkpoint",  ck,         (dir / "t.json").string(), (dir / "o.cact").string(),
                                     "--tokenizer", tok_model()};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const AppRun r = run_app("cact-build", args);
    CHECK(r.code == 1);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.rfind("cact-build: ", 0) == 0);
    CHECK_MESSAGE(r.err.find(c.expected) != std::string::npos, r.err);
    CHECK(!fs::exists(dir / "o.cact"));
  }
  // A tokenizer larger than the vocab (golden.model: 2000 pieces > 1024).
  const AppRun big = run_app("cact-build", {"checkpoint", dir / "t.safetensors", dir / "t.json", dir / "o.cact",
                                            "--tokenizer", cact::test::golden_dir() / "tokenizer" / "golden.model"});
  CHECK(big.code == 1);
  CHECK(big.err.find("has 2000 pieces, more than the geometry's vocab 1024") != std::string::npos);
  // Truncated checkpoint.
  const std::string full = slurp(dir / "t.safetensors");
  std::ofstream(dir / "cut.safetensors", std::ios::binary).write(full.data(), std::streamsize(full.size() / 2));
  const AppRun cut = run_app(
      "cact-build", {"checkpoint", dir / "cut.safetensors", dir / "t.json", dir / "o.cact", "--tokenizer", tiny()});
  CHECK(cut.code == 1);
  CHECK(lines(cut.err) == 1);
  CHECK(cut.err.find("run past the data section") != std::string::npos);
  // The output may not be one of the inputs.
  const AppRun same = run_app(
      "cact-build", {"checkpoint", dir / "t.safetensors", dir / "t.json", dir / "t.json", "--tokenizer", tiny()});
  CHECK(same.code == 1);
  CHECK(same.err.find("output path is the input file") != std::string::npos);
  // Usage errors exit 2.
  CHECK(run_app("cact-build", {"checkpoint", dir / "t.safetensors", dir / "t.json", dir / "o.cact"}).code == 2);
  CHECK(!fs::exists(dir / "o.cact"));
}

TEST_CASE("cact-quant requantize: refuses width changes without --requantize; with it, reports and warns") {
  const fs::path dir = cact::test::scratch_dir("quant-cli");
  const AppRun no = run_app("cact-quant", {"requantize", tiny(), dir / "o.cact", "--bits", "default=2,embedding=4"});
  CHECK(no.code == 1);
  CHECK(lines(no.err) == 1);
  CHECK(no.err.find("cact-quant: 29 CQ tensors would change width (layer00.q_proj CQ4->CQ2") == 0);
  CHECK(no.err.find("pass --requantize") != std::string::npos);
  CHECK(!fs::exists(dir / "o.cact"));

  const AppRun yes = run_app("cact-quant", {"requantize", tiny(), dir / "o.cact", "--bits", "default=2,embedding=4",
                                            "--requantize", "--json"});
  REQUIRE_MESSAGE(yes.code == 0, yes.err);
  CHECK(lines(yes.err) == 1);
  CHECK(yes.err.find("cact-quant: warning: re-quantised 29 already-quantised tensors") == 0);
  const auto j = nlohmann::json::parse(yes.out);
  CHECK(j["file_bytes_before"] == 593617);
  CHECK(j["file_bytes_after"].get<uint64_t>() < 593617);
  CHECK(j["tensors"][0]["changed"] == false);
  CHECK(j["tensors"][1]["changed"] == false);  // layer00.norm_in
  CHECK(j["tensors"][2]["kind_before"] == "CQ4");
  CHECK(j["tensors"][2]["kind"] == "CQ2");
  const cact::Model m = cact::Model::open(dir / "o.cact");
  CHECK(m.record(2).bits == 2);

  const AppRun same = run_app("cact-quant", {"requantize", tiny(), dir / "c.cact", "--bits", "default=4"});
  CHECK(same.code == 0);
  CHECK(same.err.find("byte-identical copy") != std::string::npos);
  CHECK(slurp(dir / "c.cact") == slurp(tiny()));
  CHECK(same.out.find("copied") != std::string::npos);
}

TEST_CASE("cact-quant requantize: bad maps, one clear line each") {
  const fs::path dir = cact::test::scratch_dir("quant-cli");
  const std::pair<std::string, std::string> cases[] = {
      {"q_proj=8",
       "cact-quant: bits map: 'q_proj=8': width must be 1, 2, 3, 4 or ternary (the widths the format carries)\n"},
      {"q_proj=0",
       "cact-quant: bits map: 'q_proj=0': width must be 1, 2, 3, 4 or ternary (the widths the format carries)\n"},
      {"layer09.q_proj=2", "cact-quant: bits map: key 'layer09.q_proj' names no CQ tensor of this archive\n"},
      {"final_norm=2", "cact-quant: bits map: key 'final_norm' names no CQ tensor of this archive\n"},
      {"heads=2", "cact-quant: bits map: key 'heads' names no CQ tensor of this archive\n"},
      {"q_proj", "cact-quant: bits map: 'q_proj' is not key=width\n"},
  };
  for (const auto& [map, expected] : cases) {
    CAPTURE(map);
    const AppRun r = run_app("cact-quant", {"requantize", tiny(), dir / "o.cact", "--bits", map, "--requantize"});
    CHECK(r.code == 1);
    CHECK(r.err == expected);
    CHECK(!fs::exists(dir / "o.cact"));
  }
  CHECK(run_app("cact-quant", {"requantize", tiny(), dir / "o.cact"}).code == 2);  // --bits is required
  CHECK(run_app("cact-quant", {}).code == 2);
}

TEST_CASE("cact-quant report: sizes alone, and errors against a reference") {
  const fs::path dir = cact::test::scratch_dir("quant-cli");
  const AppRun bare = run_app("cact-quant", {"report", tiny()});
  CHECK(bare.code == 0);
  CHECK(bare.out.find("CQ total: 30 tensors, 770048 weights, 5.529 bits/weight\n") != std::string::npos);
  CHECK(bare.out.find("file: 593617 bytes") != std::string::npos);
  // license-tiny re-quantised to CQ2, measured against license-tiny's own values.
  export_tiny(dir);
  REQUIRE(run_app("cact-quant", {"requantize", tiny(), dir / "two.cact", "--bits", "default=2", "--requantize"}).code ==
          0);
  const AppRun r = run_app("cact-quant", {"report", dir / "two.cact", "--reference", dir / "t.safetensors", "--json"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["reference"] == (dir / "t.safetensors").string());
  const double snr = j["totals"]["snr_db"].get<double>();
  CHECK(snr > 5.0);
  CHECK(snr < 15.0);
  CHECK(j["totals"]["relative_mse"].get<double>() == doctest::Approx(std::pow(10.0, -snr / 10.0)));
  // A reference that does not fit the archive.
  const AppRun wrong = run_app("cact-quant", {"report", dir / "two.cact", "--reference", dir / "t.json"});
  CHECK(wrong.code == 1);
  CHECK(lines(wrong.err) == 1);
}

TEST_CASE("cact-quant IN OUT --bits MAP is the short form of requantize") {
  const fs::path dir = cact::test::scratch_dir("quant-short");
  const AppRun r = run_app("cact-quant", {tiny(), dir / "q.cact", "--bits", "default=2", "--requantize", "--json"});
  REQUIRE(r.code == 0);
  const cact::Model m = cact::Model::open(dir / "q.cact");
  CHECK(cact::kind_name(m.record(m.canon().layer(0, cact::LayerSlot::q_proj))) == "CQ2");
  const auto report = nlohmann::json::parse(r.out);
  CHECK(report.contains("tensors"));
  const AppRun missing = run_app("cact-quant", {tiny(), dir / "q2.cact"});
  CHECK(missing.code == 2);
  CHECK(missing.err == "cact-quant: --bits is required (see --help)\n");
  CHECK_FALSE(fs::exists(dir / "q2.cact"));
}
