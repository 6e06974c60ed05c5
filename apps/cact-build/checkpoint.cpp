// cact-build checkpoint: a float safetensors checkpoint + geometry JSON + a
// tokenizer -> a .cact archive (docs/INTERCHANGE.md).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "cact/checkpoint.h"
#include "cact/error.h"
#include "cact/format.h"
#include "cact/geometry_json.h"
#include "cact/mapped_file.h"
#include "cact/spm_import.h"
#include "commands.h"
#include "common/error_policy.h"
#include "common/output.h"
#include "common/progress.h"
#include "common/std_paths.h"

namespace cact::build {

namespace {

struct CheckpointArgs {
  std::string checkpoint, geometry, out, tokenizer, bits;
  unsigned threads = 0;
  bool progress = false, report = false, json = false;
};

// An archive (by its tag) or else a SentencePiece model. Mapped, not opened as
// a stream: a FIFO or a device is refused before anything is read.
TokenizerBlob load_tokenizer(const std::string& path) {
  const MappedFile file(path);
  uint32_t tag = 0;
  if (file.size() >= 4) std::memcpy(&tag, file.bytes().data(), 4);
  if (tag == kTagNeedle3 || tag == kTagNeedle2) return tokenizer_from_archive(path);
  return tokenizer_from_model(import_sentencepiece(path), path);
}

// docs/WIDTHS.md "--bits": the widths the checkpoint records (cact.bits, as
// cact-quant dequantize writes them), else the shipped default, with MAP's
// keys over them. "--bits checkpoint[,MAP]" insists on the recorded widths.
WidthMap resolve_widths(const std::string& bits, const safetensors::File& ckpt, std::string& source) {
  const bool recorded = ckpt.metadata().contains(kBitsMetadataKey);
  if (bits.empty() && recorded) {
    source = "the checkpoint's " + ckpt.metadata().at(kBitsMetadataKey);
    return widths_from_checkpoint(ckpt);
  }
  if (bits.empty()) {
    source = std::string("the shipped default ") + WidthMap::kShipped;
    return WidthMap();
  }
  const std::string keyword = "checkpoint";
  if (recorded && !bits.starts_with(keyword)) {
    source = "the checkpoint's " + ckpt.metadata().at(kBitsMetadataKey) + " with " + bits;
    return widths_from_checkpoint(ckpt).with(bits);
  }
  if (bits == keyword || bits.starts_with(keyword + ",")) {
    const WidthMap base = widths_from_checkpoint(ckpt);
    const std::string rest = bits.size() > keyword.size() ? bits.substr(keyword.size() + 1) : "";
    source = "the checkpoint's " + ckpt.metadata().at(kBitsMetadataKey) + (rest.empty() ? "" : " with " + rest);
    return base.with(rest);
  }
  source = bits + " over the shipped default";
  return WidthMap().with(bits);
}

std::string kinds_text(const std::map<std::string, size_t>& kinds) {
  std::string s;
  for (const auto& [kind, n] : kinds) s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + kind;
  return s;
}

}  // namespace

std::function<int()> add_checkpoint_command(CLI::App& app) {
  auto args = std::make_shared<CheckpointArgs>();
  CLI::App* sub =
      app.add_subcommand("checkpoint", "build an archive from a float safetensors checkpoint and a geometry JSON");
  sub->add_option("checkpoint", args->checkpoint, "CKPT.safetensors (tensors under their canon names, F32/F16/BF16)")
      ->required();
  sub->add_option("geometry", args->geometry, "GEOMETRY.json (docs/INTERCHANGE.md)")->required();
  sub->add_option("out", args->out, "output .cact path")->required();
  sub->add_option("--tokenizer", args->tokenizer, "a SentencePiece .model, or another .cact whose tokenizer is copied")
      ->required();
  sub->add_option(
      "--bits", args->bits,
      std::string(
          "CQ widths to change (docs/WIDTHS.md): over the widths the checkpoint records, else the shipped default ") +
          WidthMap::kShipped + "; 'checkpoint[,MAP]' requires recorded widths");
  sub->add_option("--threads", args->threads, "quantisation threads (0 = all cores)")->capture_default_str();
  sub->add_flag("--progress", args->progress, "progress on stderr even when it is not a terminal");
  sub->add_flag("--report", args->report, "print the per-tensor error against the checkpoint (stdout)");
  sub->add_flag("--json", args->json, "with --report: JSON instead of a table");
  return [sub, args]() -> int {
    if (!sub->parsed()) return -1;
    if (args->json && !args->report) app::usage_error("--json needs --report");
    app::refuse_stdout(args->out, "OUT");
    app::refuse_stdin(args->checkpoint, "CHECKPOINT");
    app::refuse_stdin(args->geometry, "GEOMETRY");
    app::refuse_stdin(args->tokenizer, "--tokenizer");
    const auto ckpt = safetensors::File::open(args->checkpoint);
    const Header geometry = read_geometry_file(args->geometry);
    const TokenizerBlob tokenizer = load_tokenizer(args->tokenizer);
    BuildOptions options;
    std::string widths_source;
    options.widths = resolve_widths(args->bits, ckpt, widths_source);
    options.codebooks = codebooks_from_checkpoint(ckpt);
    options.threads = args->threads;
    options.report = args->report;
    app::ProgressBar bar("cact-build", args->progress);
    options.progress = bar.callback();
    const std::filesystem::path inputs[] = {args->checkpoint, args->geometry, args->tokenizer};
    const BuildResult r = build_archive(ckpt, geometry, tokenizer, args->out, options, inputs);
    bar.finish();

    if (args->report) {
      Report report = r.report;
      report.title = args->out + " vs " + args->checkpoint;
      const std::string text = args->json ? format_report_json(report) : format_report_text(report);
      app::write_out(text);
    }
    if (app::quiet()) return 0;
    const Header& h = r.header;
    std::string heads = "none";
    if (!r.heads.empty()) {
      heads.clear();
      for (const auto& k : r.heads) heads += (heads.empty() ? "" : ", ") + k;
      heads += r.heads_from_manifest ? " (from heads.manifest)" : " (from the tensor names)";
    }
    app::wrote(args->out, std::to_string(r.canon->size()) + " tensors (" + kinds_text(r.kinds) + "), " +
                              std::to_string(r.file_bytes) + " bytes");
    std::fprintf(stderr, "  geometry:  %u layers, d_model %u, vocab %u; heads: %s%s\n", h.num_layers, h.d_model,
                 h.vocab, heads.c_str(), r.canon->block_untied() ? "; block-untied Hadamard factors" : "");
    std::fprintf(stderr, "  widths:    %s\n", widths_source.c_str());
    std::fprintf(stderr, "  codebooks: %s\n",
                 options.codebooks ? "the checkpoint's (cact.codebooks, as exported from an archive)"
                                   : "computed Lloyd-Max (standard)");
    std::fprintf(stderr, "  tokenizer: %u pieces from %s\n", r.tokenizer_pieces, tokenizer.source.c_str());
    if (r.snapped_groups > 0) {
      std::fprintf(stderr, "  CQ groups: %llu, %llu already on their quantisation grid (re-encoded exactly)\n",
                   (unsigned long long)r.groups, (unsigned long long)r.snapped_groups);
    } else {
      std::fprintf(stderr, "  CQ groups: %llu\n", (unsigned long long)r.groups);
    }
    return 0;
  };
}

}  // namespace cact::build
