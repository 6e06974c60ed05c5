#include "common/progress.h"

#include <cstdio>
#include <unistd.h>

namespace cact::app {

ProgressBar::ProgressBar(const char* tool, bool force) : tool_(tool) {
  tty_ = ::isatty(STDERR_FILENO) == 1;
  enabled_ = tty_ || force;
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
    const int decile = int(fraction * 10.0);
    if (decile == last_decile_) return;
    last_decile_ = decile;
    std::fprintf(stderr, "%s: %3d%%%s%.*s\n", tool_.c_str(), decile * 10, p.what.empty() ? "" : "  ", int(p.what.size()), p.what.data());
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
