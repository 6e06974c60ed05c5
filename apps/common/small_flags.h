#pragma once
// A small command-line parser for cact-run, whose stripped size has a budget
// (≤ 1 MB, docs/PERFORMANCE.md): CLI11 costs ~100 KB there. The other tools
// keep CLI11 (run_tool.h). Accepted syntax, the subset of CLI11's that the
// tools document: `--name value`, `--name=value`, `-x value`, flags without a
// value, positionals, `--` before a positional that starts with '-'.
// Usage errors are one line and exit code 2, like CLI11's.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cact::app {

class SmallFlags {
 public:
  SmallFlags(std::string tool, std::string description);

  // names: "-p,--prompt" or "--chat"; help as shown by --help.
  void positional(const char* name, std::string* value, const char* help);
  void option(const char* names, std::string* value, const char* help);
  void option(const char* names, uint32_t* value, const char* help, bool show_default = false);
  void option(const char* names, uint64_t* value, const char* help, bool show_default = false);
  void option(const char* names, float* value, const char* help, bool show_default = false);
  void flag(const char* names, bool* value, const char* help);

  // -1: go on; otherwise the exit code (0 after --help, 2 after a usage error,
  // which has been printed as "tool: message (see --help)").
  int parse(int argc, char** argv);
  // Whether the option with this long name was given on the command line.
  bool given(const std::string& long_name) const;

 private:
  struct Entry {
    std::vector<std::string> names;  // "-p", "--prompt"; a positional: its name
    std::string help, default_text;
    bool takes_value = true, positional = false, seen = false;
    std::function<bool(const std::string&)> set;  // false: not a valid value
    std::string value_kind;                       // for the error message
  };
  Entry& add(const char* names, const char* help, std::string kind, std::function<bool(const std::string&)> set);
  Entry* find(const std::string& name);
  void print_help() const;
  std::string tool_, description_;
  std::vector<Entry> entries_;
};

}  // namespace cact::app
