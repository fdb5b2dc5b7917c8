// openloop: N open()+close() of one file, best of 5 rounds, in ns per pair.
// make bench runs it bare and inside sbx to show the kernel's per-open cost
// of the sandbox (Landlock's path walk, seccomp) without an interpreter's
// own work diluting it.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200000;
  const char *p = argc > 2 ? argv[2] : "/etc/hostname";
  struct timespec a, b;
  double best = 1e18;
  for (int r = 0; r < 5; r++) {
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++) { int fd = open(p, O_RDONLY); if (fd < 0) { perror("open"); return 1; } close(fd); }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n;
    if (ns < best) best = ns;
  }
  printf("%s: %.0f ns/op (best of 5)\n", p, best);
  return 0;
}
