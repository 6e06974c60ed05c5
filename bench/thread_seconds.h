#pragma once
// The clock of the CPU-bound benchmarks.
#include <ctime>

namespace cact::bench {
// Thread CPU time, not wall time: the machines these run on are shared, and
// time spent descheduled is not the code's.
inline double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}
}  // namespace cact::bench
