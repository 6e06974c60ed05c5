#pragma once
// The three commands of cact-golden (docs/GUIDE.md "Golden checks in CI").
#include <optional>
#include <string>
#include <vector>

namespace cact::golden {

struct Args {
  std::vector<std::string> cases;   // case files ("-": stdin)
  std::string golden;               // -o / --golden: the golden file (one case file only); "-": stdout / stdin
  std::string archive;              // --archive: instead of the case file's
  std::optional<double> tolerance;  // check --tolerance
  bool json = false, verbose = false;
};

int dump_command(const Args& a);    // writes new golden files (refuses to replace one)
int check_command(const Args& a);   // re-runs and compares; exit 1 when a case fails
int update_command(const Args& a);  // rewrites the golden files; lists what changed

}  // namespace cact::golden
