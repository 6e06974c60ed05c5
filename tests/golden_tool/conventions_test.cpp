// The conventions every cact-* tool keeps (docs/GUIDE.md "Conventions"):
// --version, "-" for stdin/stdout, a failed stdout is exit 1, bad usage is
// exit 2 with the nearest name suggested.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "support/run_app.h"
#include "support/test_paths.h"

namespace fs = std::filesystem;
using cact::test::run_app;
using cact::test::run_shell;
using cact::test::shell_quote;

namespace {

const std::vector<std::string> kTools = {"cact-inspect", "cact-build",  "cact-quant", "cact-slice",
                                         "cact-run",     "cact-golden", "cact-serve"};

std::string tool_path(const std::string& tool) {
  return shell_quote((cact::test::binary_dir() / "apps" / tool).string());
}
std::string archive() { return (cact::test::models_dir() / "license-tiny.cact").string(); }

}  // namespace

TEST_CASE("every tool: --version names the version, the git revision and the kernel tables") {
  for (const std::string& tool : kTools) {
    CAPTURE(tool);
    const auto r = run_app(tool, {"--version"});
    CHECK(r.code == 0);
    CHECK(r.out.rfind(tool + " ", 0) == 0);
    CHECK(r.out.find(" (git ") != std::string::npos);
    CHECK(r.out.find("\nkernels: scalar") != std::string::npos);
    CHECK(r.err.empty());
    const auto full = run_shell(tool_path(tool) + " --version >/dev/full");
    CHECK(full.code == 1);
    CHECK(full.err == tool + ": cannot write to standard output: No space left on device\n");
    // An unknown CACT_ISA is bad input here too: one line naming it, exit 1.
    const auto isa = run_app(tool, {"--version"}, {}, "CACT_ISA=avx9 ");
    CHECK(isa.code == 1);
    CHECK(isa.out.empty());
    CHECK(isa.err.rfind(tool + ": CACT_ISA=\"avx9\" names no instruction set level", 0) == 0);
    CHECK(std::count(isa.err.begin(), isa.err.end(), '\n') == 1);
  }
}

TEST_CASE("every tool: a usage error is exit 2, one line, with the nearest flag or command") {
  struct Case {
    std::string tool;
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"cact-inspect",
       {archive(), "--tensor-s"},
       "cact-inspect: unknown option --tensor-s (did you mean --tensors?) (see --help)\n"},
      {"cact-build", {"synht", "x.cact"}, "cact-build: unknown command synht (did you mean synth?) (see --help)\n"},
      {"cact-quant",
       {"dequantise", archive(), "x.safetensors"},
       "cact-quant: unknown command dequantise (did you mean dequantize?) (see --help)\n"},
      {"cact-slice",
       {archive(), "--layer", "2", "--dry-run"},
       "cact-slice: unknown option --layer (did you mean --layers?) (see --help)\n"},
      {"cact-run",
       {archive(), "-p", "x", "--temprature", "1"},
       "cact-run: unknown option --temprature (did you mean --temperature?) (see --help)\n"},
      {"cact-golden", {"chek", "cases.json"}, "cact-golden: unknown command chek (did you mean check?) (see --help)\n"},
      {"cact-serve", {"--prot", "8080"}, "cact-serve: unknown option --prot (did you mean --port?) (see --help)\n"},
      // Combinations and values are usage errors too.
      {"cact-inspect",
       {"--diff", archive(), archive(), "--tensors"},
       "cact-inspect: --diff does not go with --tensors, --check or --tensor (see --help)\n"},
      {"cact-slice", {archive(), "--layers", "2"}, "cact-slice: OUT is required unless --dry-run (see --help)\n"},
      {"cact-slice",
       {archive(), "--layers", "2", "--dry-run", "--context", "0"},
       "cact-slice: --context 0: must be at least 1 (see --help)\n"},
      {"cact-run",
       {archive(), "-p", "x", "--dump-golden", "g.json", "--chat"},
       "cact-run: --chat does not apply to --dump-golden (the engine tests' logits: float greedy, float and int8 "
       "scalar); for "
       "golden checks of an archive's answers use cact-golden (see --help)\n"},
      {"cact-run",
       {"-", "-p", "x"},
       "cact-run: archive -: cact-run maps its archive from a file; give its path (see --help)\n"},
      {"cact-build",
       {"checkpoint", "c.safetensors", "g.json", "o.cact", "--tokenizer", archive(), "--json"},
       "cact-build: --json needs --report (see --help)\n"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.tool);
    CAPTURE(c.args.back());
    const auto r = run_app(c.tool, c.args);
    CHECK(r.code == 2);
    CHECK(r.err == c.message);
    CHECK(r.out.empty());
  }
}

TEST_CASE("every tool: a failed write to stdout is one line and exit 1") {
  const std::string a = shell_quote(archive());
  const fs::path dir = cact::test::scratch_dir("conventions-full");
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"cact-inspect", a},
      {"cact-inspect", a + " --tensors --json"},
      {"cact-build", "--help"},
      {"cact-quant", "report " + a},
      {"cact-slice", a + " --layers 2 --dry-run"},
      {"cact-run", a + " -p Permission -n 2"},
      {"cact-golden", "--help"},
      {"cact-serve", "--help"},
  };
  for (const auto& [tool, args] : runs) {
    CAPTURE(args);
    const auto r = run_shell("cd " + shell_quote(dir.string()) + " && " + tool_path(tool) + " " + args + " >/dev/full");
    CHECK(r.code == 1);
    CHECK(r.err.find(tool + ": cannot write to standard output: No space left on device\n") != std::string::npos);
  }
}

TEST_CASE("'-' is stdin or stdout where the data can stream, and refused where a file is renamed into place") {
  const std::string a = shell_quote(archive());
  const fs::path dir = cact::test::scratch_dir("conventions-dash");
  const std::string cd = "cd " + shell_quote(dir.string()) + " && ";
  SUBCASE("cact-inspect reads an archive from a pipe") {
    const auto piped = run_shell("cat " + a + " | " + tool_path("cact-inspect") + " - --tensors");
    const auto named = run_app("cact-inspect", {archive(), "--tensors"});
    REQUIRE(piped.code == 0);
    // The same report, named "standard input".
    std::string expected = named.out;
    expected.replace(0, archive().size(), "standard input");
    CHECK(piped.out == expected);
    const auto check = run_shell("head -c 300000 " + a + " | " + tool_path("cact-inspect") + " - --check");
    CHECK(check.code == 1);
    CHECK(check.out == "standard input: truncated: 300000 of 593617 bytes\n");
  }
  SUBCASE("cact-quant and cact-slice read their input from stdin") {
    const auto report = run_shell("cat " + a + " | " + tool_path("cact-quant") + " report -");
    CHECK(report.code == 0);
    CHECK(report.out.find("standard input") != std::string::npos);
    const auto slice = run_shell("cat " + a + " | " + tool_path("cact-slice") + " - --layers 2 --dry-run");
    CHECK(slice.code == 0);
    CHECK(slice.out.find("input:   standard input") != std::string::npos);
  }
  SUBCASE("archive writers refuse '-' and write no file named '-'") {
    const std::vector<std::pair<std::string, std::string>> runs = {
        {"cact-build", "synth - --preset micro"},
        {"cact-quant", "requantize " + a + " - --bits default=2"},
        {"cact-quant", "dequantize " + a + " -"},
        {"cact-slice", a + " - --layers 2"},
    };
    for (const auto& [tool, args] : runs) {
      CAPTURE(args);
      const auto r = run_shell(cd + tool_path(tool) + " " + args);
      CHECK(r.code == 2);
      CHECK(r.err.find("-: this output is written to a temporary file and renamed into place, so it cannot go to "
                       "standard output") != std::string::npos);
      CHECK(r.err_lines() == 1);
      CHECK(!fs::exists(dir / "-"));
    }
  }
  SUBCASE("cact-run --dump-golden - writes to stdout") {
    const auto r = run_shell(cd + tool_path("cact-run") + " " + a + " -p Permission --golden-steps 1 --dump-golden -");
    CHECK(r.code == 0);
    CHECK(r.out.find("\"schema\": \"cact-golden-logits/1\"") != std::string::npos);
    CHECK(!fs::exists(dir / "-"));
  }
}

TEST_CASE("--quiet drops the \"wrote\" lines; results stay on stdout") {
  const fs::path dir = cact::test::scratch_dir("conventions-quiet");
  const auto loud = run_app("cact-build", {"synth", "a.cact", "--preset", "micro"}, dir);
  CHECK(loud.code == 0);
  CHECK(loud.err.rfind("wrote a.cact: ", 0) == 0);
  const auto quiet = run_app("cact-build", {"synth", "b.cact", "--preset", "micro", "--quiet"}, dir);
  CHECK(quiet.code == 0);
  CHECK(quiet.err.empty());
  CHECK(fs::exists(dir / "b.cact"));
}

TEST_CASE("completions and man pages are generated from each tool's --help") {
  const fs::path share = cact::test::binary_dir() / "share";
  for (const std::string& tool : kTools) {
    CAPTURE(tool);
    const std::string bash = cact::test::slurp(share / "bash" / tool);
    const std::string zsh = cact::test::slurp(share / "zsh" / ("_" + tool));
    const std::string man = cact::test::slurp(share / "man" / (tool + ".1"));
    CHECK(bash.find("complete -F ") != std::string::npos);
    CHECK(bash.find("--version") != std::string::npos);
    CHECK(zsh.rfind("#compdef " + tool + "\n", 0) == 0);
    CHECK(man.find(".SH OPTIONS") != std::string::npos);
  }
  // Flags and commands come from the help: each tool's own, subcommands included.
  CHECK(cact::test::slurp(share / "bash" / "cact-golden")
            .find("check) opts=\"-h --help -o --golden --archive --tolerance") != std::string::npos);
  CHECK(cact::test::slurp(share / "bash" / "cact-inspect").find("--diff") != std::string::npos);
  CHECK(cact::test::slurp(share / "man" / "cact-quant.1").find(".SH COMMAND DEQUANTIZE") != std::string::npos);
  const auto syntax = run_shell("bash -n " + shell_quote((share / "bash" / "cact-run").string()));
  CHECK(syntax.code == 0);
}
