// Width changes of CQ tensors (dequantise -> quantise) and archive reports.
#include "cact/requantize.h"

#include <algorithm>
#include <cstring>

#include "cact/atomic_file.h"
#include "cact/error.h"
#include "cact/half.h"
#include "cact/model.h"
#include "cact/width_map.h"
#include "cact/writer.h"
#include "interchange/built_check.h"

namespace cact {

namespace {

std::string width_kind(uint32_t bits) {
  Record r;
  r.dtype = Dtype::CQ;
  r.bits = bits;
  return kind_name(r);
}

TensorReport base_row(const Model& m, size_t i) {
  const Record& r = m.record(i);
  TensorReport t;
  t.index = i;
  t.name = m.name(i);
  t.kind = kind_name(r);
  t.shape.assign(r.shape.begin(), r.shape.begin() + r.ndim);
  t.weights = r.elements();
  t.bytes = r.nbytes;
  return t;
}

// Tensor i of the archive against its reference in a mapped checkpoint, the
// reference read a chunk of whole rows at a time (its pages dropped behind)
// and the archive's rows dequantised one at a time: a tensor of any size
// holds one chunk.
ErrorStats cq_error(const safetensors::File& reference, const safetensors::TensorView& ref, const Model& model,
                    size_t i, unsigned threads) {
  const codec::CqMatrix m = model.matrix(i);
  const std::vector<float> codebook = model.codebook_for(m.bits);
  std::vector<ErrorStats> per_row(m.out);
  const uint64_t rows_per_chunk = std::max<uint64_t>(1, safetensors::File::kChunkElements / m.in);
  reference.for_each_chunk(ref, rows_per_chunk * m.in, [&](uint64_t first, std::span<const float> values) {
    const auto row_begin = uint32_t(first / m.in);
    measure_cq_rows(values, m, codebook, row_begin, std::span(per_row).subspan(row_begin, values.size() / m.in),
                    threads);
  });
  model.drop_pages(i);
  return sum_in_order(per_row);
}

// The same for an FP16 or FP32 tensor (norms, taps, factors: small), read whole.
ErrorStats value_error(const safetensors::File& reference, const safetensors::TensorView& ref, const Model& model,
                       size_t i, unsigned threads) {
  const std::vector<float> x = reference.read_floats(ref);
  const Record& r = model.record(i);
  const std::vector<float> y = model.values(i);
  model.drop_pages(i);
  return measure_error(x, y, r.ndim == 2 ? r.shape[1] : x.size(), threads);
}

}  // namespace

size_t RequantizePlan::changes() const {
  size_t n = 0;
  for (size_t i = 0; i < from_bits.size(); ++i) n += from_bits[i] != to_bits[i] ? 1 : 0;
  return n;
}

std::string RequantizePlan::describe_changes(const Model& model, size_t limit) const {
  std::string s;
  size_t shown = 0, total = changes();
  for (size_t i = 0; i < from_bits.size() && shown < limit; ++i) {
    if (from_bits[i] == to_bits[i]) continue;
    s += (shown ? ", " : "") + model.name(i) + " " + width_kind(from_bits[i]) + "->" + width_kind(to_bits[i]);
    ++shown;
  }
  if (total > shown) s += ", and " + std::to_string(total - shown) + " more";
  return s;
}

RequantizePlan plan_requantize(const Model& model, std::string_view text) {
  const WidthMap map = WidthMap::parse(text);
  if (map.empty()) fail("bits map: empty (give key=width entries, e.g. default=2,embedding=4)");
  map.check_keys(model.canon());
  RequantizePlan plan;
  plan.from_bits.assign(model.records().size(), 0);
  plan.to_bits.assign(model.records().size(), 0);
  for (size_t i = 0; i < model.records().size(); ++i) {
    const Record& r = model.record(i);
    if (r.dtype != Dtype::CQ) continue;
    plan.from_bits[i] = r.bits;
    // A name no key matches (and no default) keeps its width.
    plan.to_bits[i] = map.find(model.name(i)).value_or(r.bits);
  }
  return plan;
}

Report requantize_archive(const Model& model, const RequantizePlan& plan, const std::filesystem::path& out,
                          const RequantizeOptions& options, std::span<const std::filesystem::path> inputs) {
  const size_t n = model.records().size();
  if (plan.from_bits.size() != n || plan.to_bits.size() != n) fail("requantize: the plan was made for another archive");
  if (plan.changes() > 0 && !options.allow_requantize) {
    fail(
        std::to_string(plan.changes()) + " CQ tensor" + (plan.changes() == 1 ? "" : "s") + " would change width (" +
        plan.describe_changes(model) +
        "); their source is already quantised, so re-encoding dequantises and quantises again and the errors compound: "
        "pass --requantize to do it anyway");
  }
  const unsigned threads = resolve_threads(options.threads);
  uint64_t total = 0, done = 0;
  for (size_t i = 0; i < n; ++i) {
    if (plan.from_bits[i] != plan.to_bits[i]) total += model.record(i).elements();
  }
  Report report;
  report.reference = "the input's dequantised values";
  // The directory goes first, so every re-encoded blob's size is computed up front.
  std::vector<Record> records(model.records().begin(), model.records().end());
  for (size_t i = 0; i < n; ++i) {
    if (plan.from_bits[i] == plan.to_bits[i]) continue;
    records[i].bits = plan.to_bits[i];
    records[i].nbytes = implied_nbytes(records[i]);
  }
  const std::vector<float> codebooks(model.codebooks().begin(), model.codebooks().end());
  AtomicFile file(out, inputs);
  ArchiveStream stream([&](std::span<const uint8_t> b) { file.write(b); }, model.header(), codebooks, records);
  // One tensor at a time: only the current one's values and blob are held, and
  // the input's pages are given back behind it.
  for (size_t i = 0; i < n; ++i) {
    Record r = model.record(i);
    TensorReport row = base_row(model, i);
    row.kind_before = row.kind;
    row.bytes_before = r.nbytes;
    if (plan.from_bits[i] == plan.to_bits[i]) {
      stream.add(model.blob(i));
      model.drop_pages(i);
      row.changed = false;
      if (r.dtype != Dtype::RAW) report.tensors.push_back(std::move(row));
      continue;
    }
    if (options.progress) options.progress({done, total, model.name(i)});
    const uint32_t bits = plan.to_bits[i];
    const std::vector<float> source = dequantize_matrix_mt(model.matrix(i), model.codebook_for(r.bits), threads);
    model.drop_pages(i);
    const std::vector<float> cb = model.codebook_for(bits);
    QuantizeResult q;
    try {
      q = quantize_matrix_mt(source.data(), r.shape[0], r.shape[1], bits, cb, threads, r.group);
    } catch (const Error& e) {
      fail(model.name(i) + ": " + e.what());
    }
    stream.add(q.blob);
    r.bits = bits;
    row.kind = kind_name(r);
    row.bytes = q.blob.size();
    row.measured = true;
    row.error =
        measure_cq_error(source, codec::view_matrix(q.blob, r.shape[0], r.shape[1], bits, r.group), cb, threads);
    report.tensors.push_back(std::move(row));
    done += model.record(i).elements();
  }
  stream.finish();
  if (options.progress) options.progress({total, total, ""});
  finish_checked(file, "the re-encoded archive");
  file.commit();
  report.file_bytes_before = model.bytes().size();
  report.file_bytes_after = stream.file_bytes();
  return report;
}

Report archive_report(const Model& model, const safetensors::File* reference, unsigned threads,
                      const ProgressFn& progress) {
  threads = resolve_threads(threads);
  const Canon& canon = model.canon();
  if (reference) {
    std::vector<std::string> problems = check_checkpoint(*reference, canon);
    if (!problems.empty()) {
      std::string m = reference->label() + ": does not match the archive: " + problems.front();
      if (problems.size() > 1) m += " (and " + std::to_string(problems.size() - 1) + " more)";
      fail(m);
    }
  }
  Report report;
  report.reference = reference ? reference->label() : "";
  report.file_bytes_after = model.bytes().size();
  uint64_t total = 0, done = 0;
  for (size_t i = 0; i + 1 < canon.size(); ++i) total += model.record(i).elements();
  for (size_t i = 0; i < model.records().size(); ++i) {
    const Record& r = model.record(i);
    if (r.dtype == Dtype::RAW) continue;
    TensorReport row = base_row(model, i);
    const auto* ref = reference ? reference->find(canon[i].name) : nullptr;
    if (ref) {
      if (progress) progress({done, total, canon[i].name});
      row.measured = true;
      row.error = r.dtype == Dtype::CQ ? cq_error(*reference, *ref, model, i, threads)
                                       : value_error(*reference, *ref, model, i, threads);
    }
    done += r.elements();
    report.tensors.push_back(std::move(row));
  }
  if (progress && reference) progress({total, total, ""});
  return report;
}

}  // namespace cact
