/*
 * sigpid1: sends signals to PID 1 (the sandbox's shim) and exits 7.
 *
 *   sigpid1 SIG...     for each signal number, kill(1, SIG), then
 *                      rt_sigqueueinfo(1, SIG, si_code SI_QUEUE) (which
 *                      looks like a fault to a runtime that only checks
 *                      for SI_USER), pausing 20 ms after each; prints
 *                      "SIG kill=RESULT queue=RESULT" per signal, then
 *                      "pid1 alive" if PID 1 still exists (kill(1, 0)
 *                      succeeds or fails with EPERM), and exits 7.
 *   sigpid1 -self SIG  kill(getpid(), SIG): shows the program's own
 *                      disposition of SIG (the default: it dies of it).
 *
 * RESULT is OK or the errno's name. Built static by the test.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char *res(long r)
{
	if (r == 0)
		return "OK";
	const char *n = strerrorname_np(errno);
	return n ? n : "E?";
}

int main(int argc, char **argv)
{
	struct timespec pause = {0, 20 * 1000 * 1000};
	if (argc == 3 && strcmp(argv[1], "-self") == 0) {
		kill(getpid(), atoi(argv[2]));
		nanosleep(&pause, NULL);
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		int sig = atoi(argv[i]);
		const char *k = res(kill(1, sig));
		siginfo_t si;
		memset(&si, 0, sizeof si);
		si.si_signo = sig;
		si.si_code = SI_QUEUE;
		si.si_pid = getpid();
		si.si_uid = getuid();
		const char *q = res(syscall(SYS_rt_sigqueueinfo, 1, sig, &si));
		printf("%d kill=%s queue=%s\n", sig, k, q);
		fflush(stdout);
		nanosleep(&pause, NULL);
	}
	/* EPERM: it exists, but this program may not signal it. */
	if (kill(1, 0) == 0 || errno == EPERM)
		printf("pid1 alive\n");
	return 7;
}
