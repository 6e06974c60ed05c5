#pragma once
// What one core can do at best, for bench_kernels --peak: the clock, and the
// int8 multiply-accumulate rate of the instruction each kernel table is built
// around, each measured by a loop that issues nothing else (independent
// accumulators, operands in registers).
#include <string>

namespace cact::bench {

// Core cycles per second of thread CPU time (a chain of dependent adds, one
// cycle each).
double cycles_per_second();

// int8 MACs per second of table `table`'s dot-product instruction at full
// throughput on this core, and the instruction's name; 0 when there is no such
// peak loop here (the scalar table, or another architecture).
struct IsaPeak {
  double macs_per_second = 0.0;
  std::string instruction;
};
IsaPeak isa_peak(const std::string& table);

}  // namespace cact::bench
