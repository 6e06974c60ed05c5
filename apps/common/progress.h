#pragma once
// Progress of long work on stderr (cact-build checkpoint, cact-quant): a bar
// redrawn in place when stderr is a terminal (not TERM=dumb); with --progress
// elsewhere, a plain line for every 10% step. Silent otherwise and with
// --quiet, so errors stay one line.
#include <chrono>
#include <string>

#include "cact/checkpoint.h"

namespace cact::app {

class ProgressBar {
 public:
  // Shown when stderr is a terminal or `force` (--progress) is set, never with --quiet.
  ProgressBar(const char* tool, bool force);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  bool enabled() const { return enabled_; }
  void update(const Progress& p);
  // Clears a terminal bar (call before printing anything else).
  void finish();
  // A callback for the library (nullptr-equivalent when disabled).
  ProgressFn callback();

 private:
  std::string tool_;
  bool enabled_ = false, tty_ = false, drawn_ = false;
  int last_decile_ = -1;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace cact::app
