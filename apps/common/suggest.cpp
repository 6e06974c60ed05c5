#include "common/suggest.h"

#include <algorithm>
#include <cctype>

namespace cact::app {

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  // Rows i-2, i-1 and i of the optimal-string-alignment table.
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    prev2.swap(prev);
    prev.swap(cur);
  }
  return prev[b.size()];
}

// "-5", "-0.5", "-1e3": values, not options.
bool looks_numeric(std::string_view s) {
  return s.size() > 1 && s[0] == '-' && (std::isdigit(static_cast<unsigned char>(s[1])) || s[1] == '.');
}

struct Names {
  std::vector<std::string> options;  // "--long" and "-s"
  std::vector<std::string> subcommands;
};

// Option groups are unnamed sub-apps whose options belong to their parent.
bool is_group(const CLI::App* a) { return a->get_name().empty(); }

// `app`, its parents, and the option groups of each.
std::vector<CLI::App*> option_scopes(CLI::App& app) {
  std::vector<CLI::App*> scopes;
  for (CLI::App* a = &app; a != nullptr; a = a->get_parent()) {
    if (is_group(a) && a->get_parent() != nullptr) continue;  // reached through its parent
    scopes.push_back(a);
    for (CLI::App* g : a->get_subcommands([](CLI::App* s) { return is_group(s); })) scopes.push_back(g);
  }
  return scopes;
}

Names names_of(CLI::App& app) {
  Names n;
  for (CLI::App* a : option_scopes(app)) {
    for (const CLI::Option* opt : a->get_options()) {
      if (!opt->nonpositional()) continue;
      for (const std::string& l : opt->get_lnames()) n.options.push_back("--" + l);
      for (const std::string& s : opt->get_snames()) n.options.push_back("-" + s);
    }
  }
  for (const CLI::App* sub : app.get_subcommands([](CLI::App* s) { return !is_group(s); })) {
    n.subcommands.push_back(sub->get_name());
  }
  return n;
}

// The option of `app` (or a parent, or their groups) with this name ("--x" / "-x"), or nullptr.
const CLI::Option* find_option(CLI::App& app, const std::string& name) {
  for (CLI::App* a : option_scopes(app)) {
    for (const CLI::Option* opt : a->get_options()) {
      if (opt->nonpositional() && opt->check_name(name)) return opt;
    }
  }
  return nullptr;
}

bool has_positionals(const CLI::App& app) {
  for (const CLI::Option* opt : app.get_options()) {
    if (!opt->nonpositional()) return true;
  }
  return false;
}

std::string with_hint(const std::string& what, const std::string& word, const std::vector<std::string>& candidates) {
  const std::string near = nearest(word, candidates);
  return near.empty() ? what : what + " (did you mean " + near + "?)";
}

}  // namespace

std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  const size_t bare = word.size() - std::min(word.find_first_not_of('-'), word.size());
  const size_t limit = std::max<size_t>(2, bare / 3);
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    const bool prefix = bare >= 3 && c.size() > word.size() && c.compare(0, word.size(), word) == 0;
    if ((d <= limit || prefix) && d < best_d) {
      best = c;
      best_d = d;
    }
  }
  return best;
}

std::string unknown_name_hint(CLI::App& cli, int argc, const char* const* argv) {
  CLI::App* app = &cli;
  bool skip_value = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (skip_value) {
      skip_value = false;
      continue;
    }
    if (arg == "--") break;
    const Names names = names_of(*app);
    if (arg.size() > 1 && arg[0] == '-' && !looks_numeric(arg)) {
      const size_t eq = arg.find('=');
      // "-n5" / "-abc": the first letter is the option.
      const std::string name = arg[1] == '-' ? arg.substr(0, eq) : arg.substr(0, 2);
      const CLI::Option* opt = find_option(*app, name);
      if (opt == nullptr) return with_hint("unknown option " + name, name, names.options);
      // A value in the next argument: skip it (it may start with '-').
      skip_value = opt->get_type_size_max() > 0 && eq == std::string::npos && (arg[1] == '-' || arg.size() == 2);
      continue;
    }
    if (!names.subcommands.empty() && !has_positionals(*app)) {
      CLI::App* sub = nullptr;
      for (CLI::App* s : app->get_subcommands([](CLI::App* a) { return !is_group(a); })) {
        if (s->check_name(arg)) sub = s;
      }
      if (sub == nullptr) return with_hint("unknown command " + arg, arg, names.subcommands);
      app = sub;
    }
  }
  return "";
}

}  // namespace cact::app
