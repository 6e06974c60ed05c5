#pragma once
// What `cact-golden check` prints: a line per case and a summary (text), or
// one cact-golden-check/1 object (--json).
#include <string>
#include <vector>

#include "golden.h"

namespace cact::golden {

// The check of one case file against its golden file.
struct FileCheck {
  std::string cases_path, golden_path;
  RunInfo run;     // this run
  RunInfo golden;  // what the golden file records
  std::vector<Verdict> verdicts;
  size_t failed() const;
};

std::string render_check_text(const std::vector<FileCheck>& files, bool verbose);
std::string render_check_json(const std::vector<FileCheck>& files);

}  // namespace cact::golden
