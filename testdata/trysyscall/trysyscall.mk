# Rules for the syscall probe used by the seccomp tests (included by the
# top-level Makefile). Static, so that it runs inside any sandbox. The
# 32-bit build tests the i386 compat ABI and needs gcc-multilib.
TRYSYSCALL_SRC    := testdata/trysyscall/trysyscall.c
TRYSYSCALL_CFLAGS := -static -O2 -Wall -Wextra -Werror

bin/trysyscall: $(TRYSYSCALL_SRC)
	@mkdir -p $(@D)
	$(CC) $(TRYSYSCALL_CFLAGS) -o $@ $<

bin/trysyscall32: $(TRYSYSCALL_SRC)
	@mkdir -p $(@D)
	$(CC) -m32 $(TRYSYSCALL_CFLAGS) -o $@ $<
