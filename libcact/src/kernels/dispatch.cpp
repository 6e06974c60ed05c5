// Run-time choice of the kernel table from the CPU's features.
#include <cstdlib>
#include <cstring>

#include "cact/kernels.h"
#include "kernels/simd_tables.h"

namespace cact::kernels {

std::vector<const KernelTable*> available_kernels() {
  std::vector<const KernelTable*> tables{&scalar_kernels()};
  for (const KernelTable* t : simd_kernels()) tables.push_back(t);
  return tables;
}

const KernelTable& best_kernels() {
  static const KernelTable* chosen = [] {
    const char* forced = std::getenv("CACT_KERNELS");
    const auto tables = available_kernels();
    if (forced != nullptr) {
      for (const KernelTable* t : tables) {
        if (std::strcmp(t->name, forced) == 0) return t;
      }
    }
    return tables.back();
  }();
  return *chosen;
}

}  // namespace cact::kernels
