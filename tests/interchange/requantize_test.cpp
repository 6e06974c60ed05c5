// cact-quant's library side: width plans, the --requantize opt-in, byte
// identity of everything not re-encoded, and reports.
#include <doctest/doctest.h>

#include <cstring>

#include "cact/checkpoint.h"
#include "cact/model.h"
#include "cact/requantize.h"
#include "interchange/fixtures.h"
#include "support/test_paths.h"

using namespace cact;
using namespace cact::test;

TEST_CASE("requantize: plans keep unnamed widths unless the map has a default") {
  const Model m = Model::open(license_tiny());
  RequantizePlan p = plan_requantize(m, "q_proj=2");
  CHECK(p.changes() == 4);
  CHECK(p.to_bits[m.canon().layer(2, LayerSlot::q_proj)] == 2);
  CHECK(p.to_bits[0] == 4);
  CHECK(p.describe_changes(m, 2) == "layer00.q_proj CQ4->CQ2, layer01.q_proj CQ4->CQ2, and 2 more");
  p = plan_requantize(m, "default=2,embedding=4");
  CHECK(p.to_bits[0] == 4);
  CHECK(p.changes() == 29);
  CHECK(plan_requantize(m, "default=4").changes() == 0);
  CHECK(error_of([&] { plan_requantize(m, "heads=2"); }) == "bits map: key 'heads' names no CQ tensor of this archive");
  CHECK(error_of([&] { plan_requantize(m, "q_proj=6"); }) ==
        "bits map: 'q_proj=6': width must be 1, 2, 3, 4 or ternary (the widths the format carries)");
  CHECK(error_of([&] { plan_requantize(m, ""); }) ==
        "bits map: empty (give key=width entries, e.g. default=2,embedding=4)");
}

TEST_CASE("requantize: a width change needs the explicit opt-in") {
  const Model m = Model::open(license_tiny());
  const auto dir = scratch_dir("requant-refuse");
  const RequantizePlan p = plan_requantize(m, "q_proj=2");
  CHECK(error_of([&] { requantize_archive(m, p, dir / "o.cact", {}); }) ==
        "4 CQ tensors would change width (layer00.q_proj CQ4->CQ2, layer01.q_proj CQ4->CQ2, layer02.q_proj CQ4->CQ2, "
        "layer03.q_proj "
        "CQ4->CQ2); their source is already quantised, so re-encoding dequantises and quantises again and the errors "
        "compound: "
        "pass --requantize to do it anyway");
  CHECK(!std::filesystem::exists(dir / "o.cact"));
}

TEST_CASE("requantize: no change is a byte-identical copy") {
  const Model m = Model::open(license_tiny());
  const auto dir = scratch_dir("requant-copy");
  const Report r = requantize_archive(m, plan_requantize(m, "default=4"), dir / "o.cact", {});
  CHECK(read_bytes(dir / "o.cact") == read_bytes(license_tiny()));
  CHECK(r.file_bytes_before == r.file_bytes_after);
  for (const auto& t : r.tensors) CHECK(!t.changed);
}

TEST_CASE("requantize: CQ4 -> CQ2 re-encodes only the named tensors; error and sizes reported; threads do not matter") {
  const Model m = Model::open(license_tiny());
  const auto dir = scratch_dir("requant-change");
  RequantizeOptions o;
  o.allow_requantize = true;
  o.threads = 1;
  const RequantizePlan p = plan_requantize(m, "q_proj=2,layer00.out_proj=ternary");
  const Report r = requantize_archive(m, p, dir / "a.cact", o);
  o.threads = 3;
  requantize_archive(m, p, dir / "b.cact", o);
  CHECK(read_bytes(dir / "a.cact") == read_bytes(dir / "b.cact"));
  const Model out = Model::open(dir / "a.cact");
  for (size_t i = 0; i < m.records().size(); ++i) {
    CAPTURE(m.name(i));
    const bool changed = p.from_bits[i] != p.to_bits[i];
    if (!changed) {
      const auto x = m.blob(i), y = out.blob(i);
      CHECK(std::equal(x.begin(), x.end(), y.begin(), y.end()));
    } else {
      CHECK(out.record(i).bits == p.to_bits[i]);
    }
  }
  CHECK(r.file_bytes_after < r.file_bytes_before);
  size_t measured = 0;
  for (const auto& t : r.tensors) {
    if (!t.changed) continue;
    ++measured;
    CHECK(t.measured);
    CHECK(t.error.snr_db() > 5.0);
    CHECK(t.error.snr_db() < 15.0);  // CQ2 of a CQ4 source: a real loss
    if (t.name == "layer00.out_proj")
      CHECK(t.kind == "TERNARY");
    else
      CHECK(t.kind == "CQ2");
    CHECK(t.kind_before == "CQ4");
    CHECK(t.bits_per_weight() == doctest::Approx(2.125));  // CQ2 and ternary crumbs alike
  }
  CHECK(measured == 5);
  const std::string text = format_report_text(r);
  CHECK(text.find("CQ4->CQ2") != std::string::npos);
  CHECK(text.find("copied") != std::string::npos);
  CHECK(text.find("file: 593617 -> ") != std::string::npos);
  const std::string json = format_report_json(r);
  CHECK(json.find("\"kind_before\": \"CQ4\"") != std::string::npos);
  CHECK(json.find("\"file_bytes_before\": 593617") != std::string::npos);
}

TEST_CASE("requantize: an archive's report against its own exported checkpoint is exact") {
  const Model m = Model::open(license_tiny());
  const auto dir = scratch_dir("requant-report");
  export_checkpoint(m, dir / "t.safetensors", {}, {});
  const auto ref = safetensors::File::open(dir / "t.safetensors");
  const Report r = archive_report(m, &ref, 2);
  CHECK(r.tensors.size() == m.records().size() - 1);
  for (const auto& t : r.tensors) {
    CHECK(t.measured);
    CHECK(t.error.error == 0.0);
  }
  CHECK(r.cq_weights() > 0);
  // 4.125 bits per weight, except the engram tables whose 64-wide rows are padded to 128: 8.25.
  CHECK(r.cq_bytes() == (r.cq_weights() - 2 * 2048 * 64) * 4125 / 8000 + 2 * 2048 * 66);
  const Report bare = archive_report(m, nullptr, 1);
  for (const auto& t : bare.tensors) CHECK(!t.measured);
  CHECK(format_report_text(bare).find("CQ total: 30 tensors") != std::string::npos);
}
