// cact-golden: golden checks of an archive's answers, for CI (docs/GUIDE.md
// "Golden checks in CI"): dump results once, check them on every build.
#include "commands.h"
#include "common/run_tool.h"
#include "golden.h"

int main(int argc, char** argv) {
  using namespace cact::golden;
  CLI::App cli{
      "cact-golden: record the answers of an archive to a case file's prompts and chats, and check them in CI"};
  cli.require_subcommand(1);
  Args a;
  const auto common = [&](CLI::App* sub) {
    sub->add_option("cases", a.cases, "case files (JSON; docs/GUIDE.md \"The case file\"; - = stdin)")
        ->required()
        ->type_name("CASES");
    sub->add_option("-o,--golden", a.golden, "the golden file (default: CASES with .golden.json; one case file only)")
        ->type_name("FILE");
    sub->add_option("--archive", a.archive, "run this archive instead of the case file's \"archive\"")
        ->type_name("FILE");
  };
  CLI::App* dump = cli.add_subcommand("dump", "run the cases and write a new golden file (- = stdout)");
  common(dump);
  CLI::App* check =
      cli.add_subcommand("check", "run the cases again and compare: one line per case, a summary; exit 1 if any fails");
  common(check);
  check->add_option(
      "--tolerance", a.tolerance,
      "allowed logit difference, scaled by max(1, |logit|) (default: the case's, else 1e-4 float, 2e-3 int8)");
  check->add_flag("--json", a.json, "the report as JSON (schema cact-golden-check/1)");
  check->add_flag("-v,--verbose", a.verbose,
                  "the archive, numerics and kernels, and each passing case's worst difference");
  CLI::App* update =
      cli.add_subcommand("update", "run the cases and rewrite the golden file; list the cases that changed");
  common(update);
  return cact::app::run_tool(kTool, cli, argc, argv, [&] {
    if (dump->parsed()) return dump_command(a);
    if (check->parsed()) return check_command(a);
    return update_command(a);
  });
}
