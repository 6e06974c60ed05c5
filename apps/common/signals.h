#pragma once
// The tools' handling of fatal signals (docs/RELIABILITY.md "Faults"):
// - SIGINT, SIGTERM, SIGHUP: the temporaries of unfinished writes are removed,
//   then the process exits with 128 + the signal (130, 143, 129). A signal the
//   tool was started with ignored (nohup, a background job) stays ignored.
// - SIGBUS inside a mapped input (the file was truncated by another process
//   while in use): one line "tool: PATH: file changed while in use ..." and
//   exit 1 instead of a crash. Any other bus error keeps its default action.
namespace cact::app {

// Once, before the work starts; `tool` must outlive the process (a literal).
void install_signal_handlers(const char* tool);

}  // namespace cact::app
