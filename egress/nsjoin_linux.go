package egress

// The C half of the rootless namespace helper (nshelper_linux.go). Joining
// a user namespace (setns CLONE_NEWUSER) is refused to a multithreaded
// process, and the Go runtime has threads before main, so the helper
// joins the sandbox's user and network namespaces here, in a constructor
// that runs before the runtime starts, as runc's nsenter does. It acts
// only when sbx started the process as the helper (helperEnv set), with
// the two namespaces open on fds 3 and 4.

/*
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void sbx_nshelper_join(void) {
	const char *v = getenv("_SBX_NSHELPER");
	if (v == NULL || strcmp(v, "1") != 0)
		return;
	if (setns(3, CLONE_NEWUSER) < 0) {
		fprintf(stderr, "sbx: namespace helper: join the sandbox's user namespace: %s\n", strerror(errno));
		_exit(125);
	}
	if (setns(4, CLONE_NEWNET) < 0) {
		fprintf(stderr, "sbx: namespace helper: join the sandbox's network namespace: %s\n", strerror(errno));
		_exit(125);
	}
	close(3);
	close(4);
}
*/
import "C"
