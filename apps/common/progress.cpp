#include "common/progress.h"

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/output.h"

namespace cact::app {

ProgressBar::ProgressBar(const char* tool, bool force) : tool_(tool) {
  // A bar redraws in place: only on a terminal that understands the escapes.
  const char* term = std::getenv("TERM");
  tty_ = ::isatty(STDERR_FILENO) == 1 && !(term != nullptr && std::strcmp(term, "dumb") == 0);
  enabled_ = !quiet() && (tty_ || force);
}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(const Progress& p) {
  if (!enabled_ || p.total == 0) return;
  const double fraction = double(p.done) / double(p.total);
  if (tty_) {
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && p.done < p.total && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    constexpr int kWidth = 30;
    const int filled = int(fraction * kWidth);
    std::string bar(size_t(filled), '=');
    if (filled < kWidth) bar += '>';
    bar.resize(kWidth, ' ');
    std::string what(p.what);
    if (what.size() > 32) what = what.substr(0, 31) + "~";
    std::fprintf(stderr, "\r\033[K%s: [%s] %3d%%  %s", tool_.c_str(), bar.c_str(), int(fraction * 100.0), what.c_str());
    std::fflush(stderr);
    drawn_ = true;
  } else {
    // Every 10% step passed gets its line, also when one update jumps several.
    const int decile = int(fraction * 10.0);
    while (last_decile_ < decile) {
      ++last_decile_;
      std::fprintf(stderr, "%s: %3d%%%s%.*s\n", tool_.c_str(), last_decile_ * 10, p.what.empty() ? "" : "  ",
                   int(p.what.size()), p.what.data());
    }
  }
}

void ProgressBar::finish() {
  if (tty_ && drawn_) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }
  drawn_ = false;
}

ProgressFn ProgressBar::callback() {
  if (!enabled_) return {};
  return [this](const Progress& p) { update(p); };
}

}  // namespace cact::app
