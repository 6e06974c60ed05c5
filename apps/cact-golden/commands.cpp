#include "commands.h"

#include <filesystem>
#include <map>

#include "cact/error.h"
#include "check_report.h"
#include "common/error_policy.h"
#include "common/input.h"
#include "common/output.h"
#include "common/std_paths.h"
#include "golden.h"

namespace cact::golden {

namespace {

// cases.json -> cases.golden.json, beside it.
std::string golden_path(const Args& a, const std::string& cases) {
  if (!a.golden.empty()) return a.golden;
  if (app::is_dash(cases)) app::usage_error("a case file from standard input needs -o/--golden FILE");
  std::filesystem::path p(cases);
  if (p.extension() == ".json") p.replace_extension();
  return p.string() + ".golden.json";
}

void check_args(const Args& a) {
  if (!a.golden.empty() && a.cases.size() > 1)
    app::usage_error("-o/--golden names one golden file: give one case file");
  if (a.tolerance && !(*a.tolerance >= 0.0)) app::usage_error("--tolerance: must be a number >= 0");
}

CaseFile load_cases(const std::string& path, const Args& a) {
  return parse_case_file(path, app::read_input(path, path), a.archive);
}

std::vector<GoldenCase> run_all(const CaseFile& f, const Runner& runner) {
  std::vector<GoldenCase> out;
  for (const Case& c : f.cases) out.push_back(to_golden(runner.run(c)));
  return out;
}

std::string cases_word(size_t n) { return std::to_string(n) + (n == 1 ? " case" : " cases"); }

bool same_results(const GoldenCase& a, const GoldenCase& b) {
  if (a.input != b.input || a.prompt_ids != b.prompt_ids || a.turns.size() != b.turns.size()) return false;
  for (size_t t = 0; t < a.turns.size(); ++t) {
    const GoldenTurn &x = a.turns[t], &y = b.turns[t];
    if (x.ids != y.ids || x.text != y.text || x.stop != y.stop || x.calls != y.calls || x.top != y.top) return false;
  }
  return true;
}

std::optional<GoldenFile> read_golden(const std::string& path) {
  if (!app::is_dash(path) && !std::filesystem::exists(path)) return std::nullopt;
  return parse_golden(app::read_input(path, path), path);
}

// Verdicts of every case of `f`, and of golden cases the case file no longer has.
FileCheck check_file(const std::string& cases_path, const Args& a) {
  const CaseFile f = load_cases(cases_path, a);
  FileCheck fc;
  fc.cases_path = cases_path;
  fc.golden_path = golden_path(a, cases_path);
  const std::optional<GoldenFile> golden = read_golden(fc.golden_path);
  if (!golden) fail(fc.golden_path + ": no golden file (cact-golden dump " + cases_path + " writes it)");
  const Runner runner(f);
  fc.run = runner.info();
  fc.golden = golden->info;
  std::map<std::string, const GoldenCase*> by_name;
  for (const GoldenCase& g : golden->cases) by_name[g.name] = &g;
  for (const Case& c : f.cases) {
    const double tol = a.tolerance ? *a.tolerance : c.tolerance ? *c.tolerance : default_tolerance(f.numerics);
    Verdict v;
    v.name = c.name;
    v.tolerance = tol;
    const auto it = by_name.find(c.name);
    if (it == by_name.end()) {
      v.message = "no golden result (cact-golden update adds it)";
    } else if (golden->info.numerics != fc.run.numerics) {
      v.message = "the golden file holds " + golden->info.numerics + " results, the case file asks for " +
                  fc.run.numerics + " (cact-golden update rewrites it)";
    } else {
      v = compare(*it->second, runner.run(c), tol, runner.tokenizer());
    }
    fc.verdicts.push_back(std::move(v));
    if (it != by_name.end()) by_name.erase(it);
  }
  for (const GoldenCase& g : golden->cases) {
    if (!by_name.contains(g.name)) continue;
    Verdict v;
    v.name = g.name;
    v.message = "in the golden file but not in the case file (cact-golden update removes it)";
    fc.verdicts.push_back(std::move(v));
  }
  return fc;
}

}  // namespace

int dump_command(const Args& a) {
  check_args(a);
  for (const std::string& cases : a.cases) {
    const std::string out = golden_path(a, cases);
    if (!app::is_dash(out) && std::filesystem::exists(out)) {
      fail(out + ": the golden file exists (cact-golden update rewrites it)");
    }
    const CaseFile f = load_cases(cases, a);
    const Runner runner(f);
    const std::vector<GoldenCase> results = run_all(f, runner);
    const std::filesystem::path inputs[] = {cases, f.archive};
    app::write_output(out, render_golden(runner.info(), results), cases_word(results.size()) + " of " + cases, inputs);
  }
  return 0;
}

int check_command(const Args& a) {
  check_args(a);
  for (const std::string& cases : a.cases) {
    if (app::is_dash(cases) && app::is_dash(a.golden))
      app::usage_error("the case file and the golden file cannot both be standard input");
  }
  std::vector<FileCheck> files;
  for (const std::string& cases : a.cases) files.push_back(check_file(cases, a));
  app::write_out(a.json ? render_check_json(files) : render_check_text(files, a.verbose));
  for (const FileCheck& f : files) {
    if (f.failed() > 0) return 1;
  }
  return 0;
}

int update_command(const Args& a) {
  check_args(a);
  for (const std::string& cases : a.cases) {
    const std::string out = golden_path(a, cases);
    if (app::is_dash(out)) app::usage_error("update rewrites a golden file: -o - is for dump");
    const CaseFile f = load_cases(cases, a);
    std::optional<GoldenFile> before;
    try {
      before = read_golden(out);
    } catch (const Error& e) {
      app::info(kTool, std::string("replacing a golden file that does not read: ") + e.what());
    }
    const Runner runner(f);
    const std::vector<GoldenCase> results = run_all(f, runner);
    size_t changed = 0;
    std::string lines;
    for (const GoldenCase& g : results) {
      const GoldenCase* old = nullptr;
      if (before) {
        for (const GoldenCase& b : before->cases) {
          if (b.name == g.name) old = &b;
        }
      }
      const bool same = old != nullptr && before->info.numerics == runner.info().numerics && same_results(*old, g);
      lines += std::string(old == nullptr ? "new   " : same ? "same  " : "changed ") + g.name + "\n";
      changed += same ? 0 : 1;
    }
    if (before) {
      for (const GoldenCase& b : before->cases) {
        bool kept = false;
        for (const GoldenCase& g : results) kept = kept || g.name == b.name;
        if (!kept) {
          lines += "removed " + b.name + "\n";
          ++changed;
        }
      }
    }
    app::write_out(lines);
    const std::filesystem::path inputs[] = {cases, f.archive};
    app::write_output(out, render_golden(runner.info(), results),
                      cases_word(results.size()) + " of " + cases + ", " + std::to_string(changed) + " changed",
                      inputs);
  }
  return 0;
}

}  // namespace cact::golden
