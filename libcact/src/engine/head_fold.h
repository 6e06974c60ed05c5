#pragma once
// The probe heads' per-token accumulation loops (heads.cpp), kept apart so that
// they are built for speed while the rest of the heads is built for size.
#include <cstdint>

namespace cact::engine {

// acc[d] *= shrink for d < n.
void scale_doubles(double* acc, double shrink, uint32_t n);
// acc_i[d] += e[i] · cell[d] for the probes i < 4 (acc_i = acc + i·n) or for
// one probe: the cell is read and widened once for all four.
void add_scaled4(double* acc, const double* e, const float* cell, uint32_t n);
void add_scaled1(double* acc, double e, const float* cell, uint32_t n);

}  // namespace cact::engine
