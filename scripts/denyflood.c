// denyflood: for SECONDS (default 30), as fast as it can, create files under
// DIR (default /usr, read-only in a sandbox), each with a new name, so that
// every attempt is a distinct denial (EROFS, reported by sbx's tracer).
// make bench runs it inside sbx to measure what a flood of denials costs
// sbx itself (memory, CPU, the --violations file). Prints the attempts made
// and how many failed with a refusal.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 30;
  const char *dir = argc > 2 ? argv[2] : "/usr";
  struct timespec a, b;
  unsigned long n = 0, refused = 0;
  char path[256];
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (;;) {
    for (int i = 0; i < 1000; i++, n++) {
      snprintf(path, sizeof path, "%s/sbx-flood-%lu", dir, n);
      int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
      if (fd >= 0) {
        close(fd);
        unlink(path);
      } else if (errno == EROFS || errno == EACCES || errno == EPERM) {
        refused++;
      }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    if ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 >= secs) break;
  }
  printf("attempts %lu refused %lu\n", n, refused);
  return 0;
}
