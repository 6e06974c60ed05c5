#include "common/small_flags.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace cact::app {

namespace {

// Digits only (no sign, no blank): strtoull alone would take "-1" as 2^64 - 1.
bool parse_unsigned(const std::string& s, uint64_t max, uint64_t& out) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  if (errno == ERANGE || v > max) return false;
  out = v;
  return true;
}

bool parse_float(const std::string& s, float& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const float v = std::strtof(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) return false;
  out = v;
  return true;
}

std::vector<std::string> split_names(const char* names) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* p = names; *p != '\0'; ++p) {
    if (*p == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += *p;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace

SmallFlags::SmallFlags(std::string tool, std::string description)
    : tool_(std::move(tool)), description_(std::move(description)) {}

SmallFlags::Entry& SmallFlags::add(const char* names, const char* help, std::string kind,
                                   std::function<bool(const std::string&)> set) {
  Entry e;
  e.names = split_names(names);
  e.help = help;
  e.value_kind = std::move(kind);
  e.set = std::move(set);
  entries_.push_back(std::move(e));
  return entries_.back();
}

void SmallFlags::positional(const char* name, std::string* value, const char* help) {
  add(name, help, "", [value](const std::string& s) {
    *value = s;
    return true;
  }).positional = true;
}

void SmallFlags::option(const char* names, std::string* value, const char* help) {
  add(names, help, "TEXT", [value](const std::string& s) {
    *value = s;
    return true;
  });
}

void SmallFlags::option(const char* names, uint32_t* value, const char* help, bool show_default) {
  Entry& e = add(names, help, "a whole number from 0 to 4294967295", [value](const std::string& s) {
    uint64_t v = 0;
    if (!parse_unsigned(s, std::numeric_limits<uint32_t>::max(), v)) return false;
    *value = uint32_t(v);
    return true;
  });
  if (show_default) e.default_text = std::to_string(*value);
}

void SmallFlags::option(const char* names, uint64_t* value, const char* help, bool show_default) {
  Entry& e = add(names, help, "a whole number from 0 to 2^64-1", [value](const std::string& s) {
    return parse_unsigned(s, std::numeric_limits<uint64_t>::max(), *value);
  });
  if (show_default) e.default_text = std::to_string(*value);
}

void SmallFlags::option(const char* names, float* value, const char* help, bool show_default) {
  Entry& e = add(names, help, "a finite number", [value](const std::string& s) { return parse_float(s, *value); });
  if (show_default) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", double(*value));
    e.default_text = buf;
  }
}

void SmallFlags::flag(const char* names, bool* value, const char* help) {
  add(names, help, "", [value](const std::string&) {
    *value = true;
    return true;
  }).takes_value = false;
}

SmallFlags::Entry* SmallFlags::find(const std::string& name) {
  for (Entry& e : entries_) {
    if (e.positional) continue;
    for (const std::string& n : e.names) {
      if (n == name) return &e;
    }
  }
  return nullptr;
}

bool SmallFlags::given(const std::string& long_name) const {
  for (const Entry& e : entries_) {
    for (const std::string& n : e.names) {
      if (n == long_name) return e.seen;
    }
  }
  return false;
}

void SmallFlags::print_help() const {
  std::string usage = "Usage: " + tool_ + " [OPTIONS]";
  for (const Entry& e : entries_) {
    if (e.positional) usage += " [" + e.names[0] + "]";
  }
  std::printf("%s\n%s\n\n", description_.c_str(), usage.c_str());
  std::printf("  %-28s %s\n", "-h,--help", "print this help and exit");
  for (const Entry& e : entries_) {
    std::string left;
    for (const std::string& n : e.names) left += (left.empty() ? "" : ",") + n;
    if (e.takes_value && !e.positional) left += e.value_kind == "TEXT" ? " TEXT" : " NUM";
    std::string help = e.help;
    if (!e.default_text.empty()) help += " [" + e.default_text + "]";
    std::printf("  %-28s %s\n", left.c_str(), help.c_str());
  }
}

int SmallFlags::parse(int argc, char** argv) {
  const auto usage_error = [&](const std::string& message) {
    std::fprintf(stderr, "%s: %s (see --help)\n", tool_.c_str(), message.c_str());
    return 2;
  };
  bool only_positionals = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!only_positionals && arg == "--") {
      only_positionals = true;
      continue;
    }
    if (!only_positionals && arg.size() > 1 && arg[0] == '-') {
      if (arg == "-h" || arg == "--help") {
        print_help();
        return 0;
      }
      std::string value;
      bool inline_value = false;
      if (const size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg.resize(eq);
        inline_value = true;
      }
      Entry* e = find(arg);
      if (e == nullptr) return usage_error("unknown option " + arg);
      if (e->seen) return usage_error(arg + " given more than once");
      if (!e->takes_value) {
        if (inline_value) return usage_error(arg + " takes no value");
      } else if (!inline_value) {
        if (i + 1 >= argc) return usage_error(arg + " needs a value");
        value = argv[++i];
      }
      if (!e->set(value)) return usage_error(arg + ": '" + value + "' is not " + e->value_kind);
      e->seen = true;
      continue;
    }
    Entry* slot = nullptr;
    for (Entry& e : entries_) {
      if (e.positional && !e.seen) {
        slot = &e;
        break;
      }
    }
    if (slot == nullptr) return usage_error("unexpected argument " + arg);
    slot->set(arg);
    slot->seen = true;
  }
  return -1;
}

}  // namespace cact::app
