#pragma once
// Engram memory (MODEL.md step 2 and "Engram site"): n-gram hashing of the
// token history into table slots, the table-row gather, and the gated update
// u += σ(rms(u)·rms(k)/sqrt(D)) · v'.
#include <cstdint>

#include "engine/linear.h"
#include "engine/weights.h"

namespace cact::engine {

// Slots of every table for the token at position t. `tok` points at tok[t];
// tok[-j] must be readable for j < min(max_order, t + 1). slots[e] is the row
// slot of table e = oi·heads + h, or -1 when the n-gram reaches before position 0.
void engram_slots(const Geometry& g, const int32_t* tok, uint32_t t, int32_t* slots);

// Starts loading the rows engram_gather will read for `count` tokens (slots
// [count][E]): each is a random row of a table of tens of MB, so a cache and
// TLB miss for its codes and another for its norm. Issued at the start of the
// site's layer, the misses overlap that layer's lane mixing instead of
// stalling the gather one row at a time.
void engram_prefetch(const SiteWeights& site, const Geometry& g, const int32_t* slots, uint32_t count);

// e = concatenation over tables of the picked rows (sd wide; zeros when off).
void engram_gather(const SiteWeights& site, const Geometry& g, const int32_t* slots, const Linear& linear, float* e);

// u += α v' with α = σ(rms(u) · rms(k) / sqrt(D)).
void engram_update(float* u, const float* k, const float* v_conv, uint32_t D);

}  // namespace cact::engine
