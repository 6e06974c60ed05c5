#pragma once
// A call an instruction trace can find by its symbol: the benchmarks' --once
// modes put one before and one after the code bench/count_neon.sh counts.
namespace cact::bench {
[[gnu::noinline]] inline void count_marker(const char* what) { asm volatile("" : : "r"(what) : "memory"); }
}  // namespace cact::bench
