#include <cstdio>

#include "cact/json_input.h"
#include "check_report.h"

namespace cact::golden {

namespace {

std::string number(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", d);
  return buf;
}

// Differences of the run's setting that do not fail a case but explain one.
std::vector<std::string> setting_notes(const FileCheck& f) {
  std::vector<std::string> notes;
  if (f.run.archive_xxh64 != f.golden.archive_xxh64) {
    notes.push_back("the archive (xxh64 " + f.run.archive_xxh64 + ", " + std::to_string(f.run.archive_bytes) +
                    " bytes) is not the one the golden file was written from (xxh64 " + f.golden.archive_xxh64 + ", " +
                    std::to_string(f.golden.archive_bytes) + " bytes)");
  }
  if (f.run.kernels != f.golden.kernels) {
    notes.push_back("kernels \"" + f.run.kernels + "\", the golden file's \"" + f.golden.kernels +
                    "\" (every int8 kernel table gives the same bits)");
  }
  return notes;
}

}  // namespace

size_t FileCheck::failed() const {
  size_t n = 0;
  for (const Verdict& v : verdicts) n += v.ok ? 0 : 1;
  return n;
}

std::string render_check_text(const std::vector<FileCheck>& files, bool verbose) {
  std::string o;
  size_t passed = 0, failed = 0;
  for (const FileCheck& f : files) {
    if (files.size() > 1 || verbose) o += f.cases_path + " against " + f.golden_path + ":\n";
    if (verbose) {
      o += "  archive xxh64 " + f.run.archive_xxh64 + ", numerics " + f.run.numerics + ", kernels " + f.run.kernels +
           " (" + f.run.kernel_table + ")\n";
    }
    for (const std::string& note : setting_notes(f)) o += "note: " + note + "\n";
    for (const Verdict& v : f.verdicts) {
      if (v.ok) {
        o += "ok    " + v.name;
        if (verbose) o += " (worst logit difference " + number(v.worst) + ", tolerance " + number(v.tolerance) + ")";
        o += "\n";
        ++passed;
      } else {
        o += "FAIL  " + v.name + ": " + v.message + "\n";
        ++failed;
      }
    }
  }
  o += std::to_string(passed) + " passed, " + std::to_string(failed) + " failed\n";
  return o;
}

std::string render_check_json(const std::vector<FileCheck>& files) {
  Json j;
  j["schema"] = kCheckSchema;
  size_t passed = 0, failed = 0;
  Json list = Json::array();
  for (const FileCheck& f : files) {
    Json cases = Json::array();
    for (const Verdict& v : f.verdicts) {
      (v.ok ? passed : failed) += 1;
      cases.push_back({{"name", v.name},
                       {"ok", v.ok},
                       {"message", v.message},
                       {"worst_logit_difference", v.worst},
                       {"tolerance", v.tolerance},
                       {"first_difference", v.first_difference}});
    }
    list.push_back({{"cases_file", f.cases_path},
                    {"golden_file", f.golden_path},
                    {"archive", {{"xxh64", f.run.archive_xxh64}, {"bytes", f.run.archive_bytes}}},
                    {"golden_archive", {{"xxh64", f.golden.archive_xxh64}, {"bytes", f.golden.archive_bytes}}},
                    {"numerics", f.run.numerics},
                    {"kernels", f.run.kernels},
                    {"kernel_table", f.run.kernel_table},
                    {"notes", setting_notes(f)},
                    {"passed", f.verdicts.size() - f.failed()},
                    {"failed", f.failed()},
                    {"cases", cases}});
  }
  j["passed"] = passed;
  j["failed"] = failed;
  j["files"] = list;
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace cact::golden
