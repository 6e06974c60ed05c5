// Placeholder until its issue lands.
#include <cstdio>
int main() {
  std::fputs("cact-inspect: not yet implemented\n", stderr);
  return 2;
}
