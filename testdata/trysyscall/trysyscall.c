/*
 * trysyscall: try system calls by name and print what the kernel answered.
 *
 *   trysyscall NAME...   one line per NAME: "NAME RESULT"
 *   trysyscall --list    every known NAME, one per line
 *
 * RESULT is OK, an errno name (EPERM, EFAULT, ...), NA when the call does
 * not exist on the ABI this binary was built for, SETUP-<errno> when a
 * preparation step (a pipe, a pty, setsid) failed, or SIG<name> when the
 * probe was killed by a signal. Exit status 0, or 2 on a usage error.
 *
 * Every probe runs in its own forked child, so a probe that changes the
 * process (unshare, personality) cannot affect the next one. The calls go
 * through syscall(2) with raw numbers from <sys/syscall.h>, so no libc
 * wrapper stands in between, and they use arguments chosen so that nothing
 * changes even where the call is allowed, also as root: NULL pointers
 * (EFAULT), invalid flags or magic numbers (EINVAL), fd -1 (EBADF), paths
 * that do not exist (ENOENT), or calls that only read. Namespaces created by
 * the clone probes belong to a child that exits at once.
 *
 * Built static (gcc -static -O2), for amd64 and with -m32 for i386, so that
 * it runs in a sandbox that has no libc of the same kind.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452            /* Linux 6.6, same number on x86_64 and i386 */
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

/* Probe results besides 0 (OK) and a positive errno. */
#define NA INT_MIN                   /* no such call on this ABI */
#define SETUP(e) (-(e))              /* a preparation step failed with e */
#define SYSCALL_SOCKET 1             /* SYS_SOCKET of <linux/net.h> */
#define TIOCL_GETSHIFTSTATE 6        /* a read-only TIOCLINUX subcode */
#define NOPATH "/nonexistent/sbx-trysyscall"

#if defined(__x86_64__) || defined(__aarch64__)
#define WIDE_ARGS 1                  /* syscall arguments are 64 bits wide */
#endif

/* raw returns 0 when the call succeeded, else its errno. */
#define raw(...) (syscall(__VA_ARGS__) == -1 ? errno : 0)

static int p_getpid(void) { return raw(SYS_getpid); }

static int p_uname(void)
{
	struct utsname u;
	return raw(SYS_uname, &u);
}

static int p_read(void)
{
	int fds[2];
	char c;
	if (pipe(fds) != 0)
		return SETUP(errno);
	return raw(SYS_read, fds[0], &c, 0);
}

static void *thread_main(void *arg) { return arg; }

/* pthread_create: glibc tries clone3 first and falls back to clone(2)
 * with CLONE_VM|CLONE_THREAD|... when clone3 fails with ENOSYS. */
static int p_pthread(void)
{
	pthread_t t;
	int err = pthread_create(&t, NULL, thread_main, NULL);
	if (err != 0)
		return err;
	return pthread_join(t, NULL);
}

/* do_clone forks with clone(2) and flags; the child exits at once. */
static int do_clone(unsigned long flags)
{
	long pid = syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);
	if (pid == -1)
		return errno;
	if (pid == 0)
		_exit(0);
	if (waitpid((pid_t)pid, NULL, 0) < 0)
		return SETUP(errno);
	return 0;
}

static int p_clone_fork(void) { return do_clone(0); }
static int p_clone_files(void) { return do_clone(CLONE_FILES); }
static int p_clone_newns(void) { return do_clone(CLONE_NEWNS); }
static int p_clone_newcgroup(void) { return do_clone(CLONE_NEWCGROUP); }
static int p_clone_newuts(void) { return do_clone(CLONE_NEWUTS); }
static int p_clone_newipc(void) { return do_clone(CLONE_NEWIPC); }
static int p_clone_newuser(void) { return do_clone(CLONE_NEWUSER); }
static int p_clone_newpid(void) { return do_clone(CLONE_NEWPID); }
static int p_clone_newnet(void) { return do_clone(CLONE_NEWNET); }

/* clone3 forks a child that exits at once (struct clone_args, version 0). */
static int p_clone3(void)
{
#ifdef SYS_clone3
	uint64_t args[8] = {0};          /* flags, pidfd, child_tid, parent_tid, */
	args[4] = SIGCHLD;               /* exit_signal, stack, stack_size, tls */
	long pid = syscall(SYS_clone3, args, sizeof args);
	if (pid == -1)
		return errno;
	if (pid == 0)
		_exit(0);
	if (waitpid((pid_t)pid, NULL, 0) < 0)
		return SETUP(errno);
	return 0;
#else
	return NA;
#endif
}

static int p_unshare_newns(void) { return raw(SYS_unshare, CLONE_NEWNS); }
static int p_unshare_newcgroup(void) { return raw(SYS_unshare, CLONE_NEWCGROUP); }
static int p_unshare_newuts(void) { return raw(SYS_unshare, CLONE_NEWUTS); }
static int p_unshare_newipc(void) { return raw(SYS_unshare, CLONE_NEWIPC); }
static int p_unshare_newuser(void) { return raw(SYS_unshare, CLONE_NEWUSER); }
static int p_unshare_newpid(void) { return raw(SYS_unshare, CLONE_NEWPID); }
static int p_unshare_newnet(void) { return raw(SYS_unshare, CLONE_NEWNET); }
static int p_unshare_newtime(void) { return raw(SYS_unshare, CLONE_NEWTIME); }
static int p_unshare_files(void) { return raw(SYS_unshare, CLONE_FILES); }

/* open_tty makes a new pty and returns its terminal side as the controlling
 * terminal of a new session, so that TIOCSTI is allowed without privileges
 * (where dev.tty.legacy_tiocsti permits it) and only reaches this pty. */
static int open_tty(int *fd)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0)
		return SETUP(errno);
	if (grantpt(m) != 0 || unlockpt(m) != 0)
		return SETUP(errno);
	char *name = ptsname(m);
	if (name == NULL)
		return SETUP(errno);
	if (setsid() < 0)
		return SETUP(errno);
	*fd = open(name, O_RDWR);
	if (*fd < 0)
		return SETUP(errno);
	return 0;
}

static int p_ioctl_tcgets(void)
{
	int fd, err = open_tty(&fd);
	struct termios t;
	if (err != 0)
		return err;
	return raw(SYS_ioctl, fd, TCGETS, &t);
}

static int p_ioctl_tiocsti(void)
{
	int fd, err = open_tty(&fd);
	char c = '\n';
	if (err != 0)
		return err;
	return raw(SYS_ioctl, fd, TIOCSTI, &c);
}

/* The kernel takes the request as unsigned int, so bits 32-63 are dropped
 * and this is TIOCSTI. */
static int p_ioctl_tiocsti_highbits(void)
{
#ifdef WIDE_ARGS
	int fd, err = open_tty(&fd);
	char c = '\n';
	if (err != 0)
		return err;
	return raw(SYS_ioctl, fd, (1UL << 32) | TIOCSTI, &c);
#else
	return NA;
#endif
}

static int p_ioctl_tioclinux(void)
{
	int fd, err = open_tty(&fd);
	char sub = TIOCL_GETSHIFTSTATE;
	if (err != 0)
		return err;
	return raw(SYS_ioctl, fd, TIOCLINUX, &sub);
}

/* personality: each probe runs in its own child, so a change dies with it. */
static int personality_probe(unsigned long v) { return raw(SYS_personality, v); }
static int p_personality_query(void) { return personality_probe(0xffffffffUL); }
static int p_personality_zero(void) { return personality_probe(0); }
static int p_personality_linux32(void) { return personality_probe(0x0008); }
static int p_personality_noaslr(void) { return personality_probe(0x0040000); }
static int p_personality_readexec(void) { return personality_probe(0x0400000); }
static int p_personality_mmapzero(void) { return personality_probe(0x0100000); }
static int p_personality_uname26(void) { return personality_probe(0x0020000); }
static int p_personality_unknownflag(void) { return personality_probe(0x10000000); }
/* Bit 31 set but not a query: the kernel stores it with ADDR_NO_RANDOMIZE. */
static int p_personality_topbit(void) { return personality_probe(0x80040000UL); }
static int p_personality_highword(void)
{
#ifdef WIDE_ARGS
	return personality_probe((1UL << 32) | 0x0040000);
#else
	return NA;
#endif
}

static int socket_probe(unsigned long domain, int type, int proto)
{
	long fd = syscall(SYS_socket, domain, type, proto);
	if (fd == -1)
		return errno;
	close((int)fd);
	return 0;
}

static int p_socket_unix(void) { return socket_probe(AF_UNIX, SOCK_STREAM, 0); }
static int p_socket_inet(void) { return socket_probe(AF_INET, SOCK_STREAM, 0); }
static int p_socket_inet6(void) { return socket_probe(AF_INET6, SOCK_DGRAM, 0); }
static int p_socket_netlink(void) { return socket_probe(AF_NETLINK, SOCK_RAW, 0); }
static int p_socket_packet(void) { return socket_probe(AF_PACKET, SOCK_DGRAM, 0); }
/* The kernel takes the family as int: this is AF_INET. */
static int p_socket_inet_highbits(void)
{
#ifdef WIDE_ARGS
	return socket_probe((1UL << 32) | AF_INET, SOCK_STREAM, 0);
#else
	return NA;
#endif
}

static int socketcall_probe(unsigned long domain)
{
#ifdef SYS_socketcall
	unsigned long args[3] = {domain, SOCK_STREAM, 0};
	long fd = syscall(SYS_socketcall, SYSCALL_SOCKET, args);
	if (fd == -1)
		return errno;
	close((int)fd);
	return 0;
#else
	(void)domain;
	return NA;
#endif
}

static int p_socketcall_unix(void) { return socketcall_probe(AF_UNIX); }
static int p_socketcall_inet(void) { return socketcall_probe(AF_INET); }

/* Set-id modes. Each probe works on a file of its own in a new directory
 * under $TMPDIR (else /tmp), which it removes; the file is created 0600
 * and then given a mode with chmod and friends, or created with the mode
 * by open, openat, creat and mknod. */
static char probe_dir[64];
static char probe_file[96];

static int mkprobe_dir(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(probe_dir, sizeof probe_dir, "%s/trysyscall.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(probe_dir) == NULL)
		return SETUP(errno);
	snprintf(probe_file, sizeof probe_file, "%s/f", probe_dir);
	return 0;
}

static int mkprobe_file(void)
{
	int err = mkprobe_dir();
	if (err != 0)
		return err;
	int fd = open(probe_file, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return SETUP(errno);
	close(fd);
	return 0;
}

/* done removes the probe's file and directory and passes res on. */
static int done(int res)
{
	unlink(probe_file);
	rmdir(probe_dir);
	return res;
}

static int chmod_probe(mode_t m)
{
	int err = mkprobe_file();
	return err ? err : done(raw(SYS_chmod, probe_file, m));
}
static int p_chmod_plain(void) { return chmod_probe(0755); }
static int p_chmod_setuid(void) { return chmod_probe(04755); }
static int p_chmod_setgid(void) { return chmod_probe(02755); }

static int fchmod_probe(mode_t m)
{
	int err = mkprobe_file();
	if (err != 0)
		return err;
	int fd = open(probe_file, O_RDONLY);
	if (fd < 0)
		return done(SETUP(errno));
	err = raw(SYS_fchmod, fd, m);
	close(fd);
	return done(err);
}
static int p_fchmod_plain(void) { return fchmod_probe(0755); }
static int p_fchmod_setuid(void) { return fchmod_probe(04755); }
static int p_fchmod_setgid(void) { return fchmod_probe(02711); }

static int fchmodat_probe(long nr, mode_t m, int flags)
{
	int err = mkprobe_file();
	return err ? err : done(raw(nr, AT_FDCWD, probe_file, m, flags));
}
static int p_fchmodat_setuid(void) { return fchmodat_probe(SYS_fchmodat, 04755, 0); }
static int p_fchmodat_setgid(void) { return fchmodat_probe(SYS_fchmodat, 02755, 0); }
static int p_fchmodat2_plain(void) { return fchmodat_probe(SYS_fchmodat2, 0755, AT_SYMLINK_NOFOLLOW); }
static int p_fchmodat2_setuid(void) { return fchmodat_probe(SYS_fchmodat2, 06755, AT_SYMLINK_NOFOLLOW); }

/* create_probe runs a creating call and closes what it returned. */
static int create_probe(long nr, long a, long b, long c, long d)
{
	int err = mkprobe_dir();
	if (err != 0)
		return err;
	long fd = syscall(nr, a, b, c, d);
	if (fd == -1)
		return done(errno);
	if (nr != SYS_mknodat
#ifdef SYS_mknod
	    && nr != SYS_mknod
#endif
	)
		close((int)fd);
	return done(0);
}
static int p_open_creat_plain(void)
{
#ifdef SYS_open
	return create_probe(SYS_open, (long)probe_file, O_WRONLY | O_CREAT | O_EXCL, 0755, 0);
#else
	return NA;
#endif
}
static int p_open_creat_setuid(void)
{
#ifdef SYS_open
	return create_probe(SYS_open, (long)probe_file, O_WRONLY | O_CREAT | O_EXCL, 04755, 0);
#else
	return NA;
#endif
}
static int p_openat_creat_setgid(void)
{
	return create_probe(SYS_openat, AT_FDCWD, (long)probe_file, O_RDWR | O_CREAT | O_TRUNC, 02755);
}
/* O_TMPFILE takes a directory: the probe's own. */
static int p_openat_tmpfile_setuid(void)
{
	return create_probe(SYS_openat, AT_FDCWD, (long)probe_dir, O_RDWR | O_TMPFILE, 04700);
}
static int p_creat_setgid(void)
{
#ifdef SYS_creat
	return create_probe(SYS_creat, (long)probe_file, 02755, 0, 0);
#else
	return NA;
#endif
}
static int p_mknod_setuid(void)
{
#ifdef SYS_mknod
	return create_probe(SYS_mknod, (long)probe_file, S_IFREG | 04755, 0, 0);
#else
	return NA;
#endif
}
static int p_mknodat_plain(void) { return create_probe(SYS_mknodat, AT_FDCWD, (long)probe_file, S_IFREG | 0644, 0); }
static int p_mknodat_setgid(void) { return create_probe(SYS_mknodat, AT_FDCWD, (long)probe_file, S_IFREG | 02755, 0); }

/* openat2: ENOSYS under the filter, ENOENT without it. */
static int p_openat2(void)
{
	uint64_t how[3] = {O_RDONLY, 0, 0}; /* struct open_how: flags, mode, resolve */
	return raw(SYS_openat2, AT_FDCWD, NOPATH, how, sizeof how);
}

/* The deny list, in the order of sandbox/seccomp.go. */
static int p_mount(void) { return raw(SYS_mount, NULL, NULL, NULL, 0, NULL); }
static int p_umount(void)
{
#ifdef SYS_umount
	return raw(SYS_umount, NOPATH);
#else
	return NA;
#endif
}
static int p_umount2(void) { return raw(SYS_umount2, NOPATH, 0x7fffff00); }
static int p_pivot_root(void) { return raw(SYS_pivot_root, NULL, NULL); }
static int p_chroot(void) { return raw(SYS_chroot, NULL); }
static int p_fsopen(void) { return raw(SYS_fsopen, NULL, 0); }
static int p_fsconfig(void) { return raw(SYS_fsconfig, -1, 0, NULL, NULL, 0); }
static int p_fsmount(void) { return raw(SYS_fsmount, -1, 0, 0); }
static int p_fspick(void) { return raw(SYS_fspick, -1, NULL, 0); }
static int p_move_mount(void) { return raw(SYS_move_mount, -1, NULL, -1, NULL, 0); }
static int p_open_tree(void) { return raw(SYS_open_tree, -1, NULL, 0); }
static int p_mount_setattr(void) { return raw(SYS_mount_setattr, -1, NULL, 0, NULL, 0); }
/* PTRACE_PEEKDATA of pid 0, which does not exist. */
static int p_ptrace(void) { return raw(SYS_ptrace, 2, 0, NULL, NULL); }
/* Zero iovecs of the process itself: moves nothing. */
static int p_process_vm_readv(void) { return raw(SYS_process_vm_readv, getpid(), NULL, 0, NULL, 0, 0); }
static int p_process_vm_writev(void) { return raw(SYS_process_vm_writev, getpid(), NULL, 0, NULL, 0, 0); }
static int p_bpf(void) { return raw(SYS_bpf, -1, NULL, 0); }
static int p_perf_event_open(void) { return raw(SYS_perf_event_open, NULL, 0, -1, -1, 0); }
static int p_lookup_dcookie(void) { return raw(SYS_lookup_dcookie, 0, NULL, 0); }
/* SYSLOG_ACTION_SIZE_BUFFER only reads the buffer size. */
static int p_syslog(void) { return raw(SYS_syslog, 10, NULL, 0); }
static int p_keyctl(void) { return raw(SYS_keyctl, -1, 0, 0, 0, 0); }
static int p_add_key(void) { return raw(SYS_add_key, NULL, NULL, NULL, 0, 0); }
static int p_request_key(void) { return raw(SYS_request_key, NULL, NULL, NULL, 0); }
/* Invalid flags and too many segments: never loads or unloads. */
static int p_kexec_load(void) { return raw(SYS_kexec_load, 0, 0x7fffffff, NULL, 0xfff0fff0UL); }
static int p_kexec_file_load(void)
{
#ifdef SYS_kexec_file_load
	return raw(SYS_kexec_file_load, -1, -1, 0, NULL, 0xfffffff0UL);
#else
	return NA;
#endif
}
static int p_init_module(void) { return raw(SYS_init_module, NULL, 0, NULL); }
static int p_finit_module(void) { return raw(SYS_finit_module, -1, NULL, 0); }
static int p_delete_module(void) { return raw(SYS_delete_module, NULL, 0); }
static int p_create_module(void) { return raw(SYS_create_module, NULL, 0); }
static int p_get_kernel_syms(void) { return raw(SYS_get_kernel_syms, NULL); }
static int p_query_module(void) { return raw(SYS_query_module, NULL, 0, NULL, 0, NULL); }
static int p_open_by_handle_at(void) { return raw(SYS_open_by_handle_at, -1, NULL, 0); }
static int p_name_to_handle_at(void) { return raw(SYS_name_to_handle_at, AT_FDCWD, "/", NULL, NULL, 0); }
static int p_io_uring_setup(void) { return raw(SYS_io_uring_setup, 0, NULL); }
static int p_io_uring_enter(void) { return raw(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0); }
static int p_io_uring_register(void) { return raw(SYS_io_uring_register, -1, 0, NULL, 0); }
/* Flag 0x10 is not a userfaultfd flag. */
static int p_userfaultfd(void) { return raw(SYS_userfaultfd, 0x10); }
static int p_setns(void) { return raw(SYS_setns, -1, 0); }
/* Invalid swap flags on a path that does not exist. */
static int p_swapon(void) { return raw(SYS_swapon, NOPATH, 0x40000000); }
static int p_swapoff(void) { return raw(SYS_swapoff, NOPATH); }
/* Wrong magic numbers: EINVAL before anything happens. */
static int p_reboot(void) { return raw(SYS_reboot, 0, 0, 0, NULL); }
/* A file that does not exist: accounting is neither started nor stopped. */
static int p_acct(void) { return raw(SYS_acct, NOPATH); }
/* Quota type 0xff does not exist. */
static int p_quotactl(void) { return raw(SYS_quotactl, -1, NULL, 0, NULL); }
static int p_quotactl_fd(void) { return raw(SYS_quotactl_fd, -1, -1, 0, NULL); }
/* In a new session there is no controlling terminal to hang up. */
static int p_vhangup(void)
{
	if (setsid() < 0)
		return SETUP(errno);
	return raw(SYS_vhangup);
}
/* NULL time and zone: sets nothing. */
static int p_settimeofday(void) { return raw(SYS_settimeofday, NULL, NULL); }
static int p_clock_settime(void) { return raw(SYS_clock_settime, CLOCK_REALTIME, NULL); }
static int p_stime(void)
{
#ifdef SYS_stime
	return raw(SYS_stime, NULL);
#else
	return NA;
#endif
}
/* Level 4 does not exist. */
static int p_iopl(void) { return raw(SYS_iopl, 4); }
/* An empty port range. */
static int p_ioperm(void) { return raw(SYS_ioperm, 0, 0, 0); }
static int p_nfsservctl(void) { return raw(SYS_nfsservctl, 0, NULL, NULL); }
static int p_uselib(void) { return raw(SYS_uselib, NULL); }
/* Option 99 does not exist. */
static int p_sysfs(void) { return raw(SYS_sysfs, 99, 0, 0); }
static int p__sysctl(void) { return raw(SYS__sysctl, NULL); }
static int p_ustat(void) { return raw(SYS_ustat, 0, NULL); }
static int p_vm86(void)
{
#ifdef SYS_vm86
	return raw(SYS_vm86, 0, NULL);
#else
	return NA;
#endif
}
static int p_vm86old(void)
{
#ifdef SYS_vm86old
	return raw(SYS_vm86old, NULL);
#else
	return NA;
#endif
}

static const struct probe {
	const char *name;
	int (*fn)(void);
} probes[] = {
	{"getpid", p_getpid},
	{"uname", p_uname},
	{"read", p_read},
	{"pthread", p_pthread},
	{"clone-fork", p_clone_fork},
	{"clone-files", p_clone_files},
	{"clone-newns", p_clone_newns},
	{"clone-newcgroup", p_clone_newcgroup},
	{"clone-newuts", p_clone_newuts},
	{"clone-newipc", p_clone_newipc},
	{"clone-newuser", p_clone_newuser},
	{"clone-newpid", p_clone_newpid},
	{"clone-newnet", p_clone_newnet},
	{"clone3", p_clone3},
	{"unshare-newns", p_unshare_newns},
	{"unshare-newcgroup", p_unshare_newcgroup},
	{"unshare-newuts", p_unshare_newuts},
	{"unshare-newipc", p_unshare_newipc},
	{"unshare-newuser", p_unshare_newuser},
	{"unshare-newpid", p_unshare_newpid},
	{"unshare-newnet", p_unshare_newnet},
	{"unshare-newtime", p_unshare_newtime},
	{"unshare-files", p_unshare_files},
	{"ioctl-tcgets", p_ioctl_tcgets},
	{"ioctl-tiocsti", p_ioctl_tiocsti},
	{"ioctl-tiocsti-highbits", p_ioctl_tiocsti_highbits},
	{"ioctl-tioclinux", p_ioctl_tioclinux},
	{"personality-query", p_personality_query},
	{"personality-zero", p_personality_zero},
	{"personality-linux32", p_personality_linux32},
	{"personality-noaslr", p_personality_noaslr},
	{"personality-readexec", p_personality_readexec},
	{"personality-mmapzero", p_personality_mmapzero},
	{"personality-uname26", p_personality_uname26},
	{"personality-unknownflag", p_personality_unknownflag},
	{"personality-topbit", p_personality_topbit},
	{"personality-highword", p_personality_highword},
	{"socket-unix", p_socket_unix},
	{"socket-inet", p_socket_inet},
	{"socket-inet6", p_socket_inet6},
	{"socket-netlink", p_socket_netlink},
	{"socket-packet", p_socket_packet},
	{"socket-inet-highbits", p_socket_inet_highbits},
	{"socketcall-unix", p_socketcall_unix},
	{"socketcall-inet", p_socketcall_inet},
	{"chmod-plain", p_chmod_plain},
	{"chmod-setuid", p_chmod_setuid},
	{"chmod-setgid", p_chmod_setgid},
	{"fchmod-plain", p_fchmod_plain},
	{"fchmod-setuid", p_fchmod_setuid},
	{"fchmod-setgid", p_fchmod_setgid},
	{"fchmodat-setuid", p_fchmodat_setuid},
	{"fchmodat-setgid", p_fchmodat_setgid},
	{"fchmodat2-plain", p_fchmodat2_plain},
	{"fchmodat2-setuid", p_fchmodat2_setuid},
	{"open-creat-plain", p_open_creat_plain},
	{"open-creat-setuid", p_open_creat_setuid},
	{"openat-creat-setgid", p_openat_creat_setgid},
	{"openat-tmpfile-setuid", p_openat_tmpfile_setuid},
	{"creat-setgid", p_creat_setgid},
	{"mknod-setuid", p_mknod_setuid},
	{"mknodat-plain", p_mknodat_plain},
	{"mknodat-setgid", p_mknodat_setgid},
	{"openat2", p_openat2},
	{"mount", p_mount},
	{"umount", p_umount},
	{"umount2", p_umount2},
	{"pivot_root", p_pivot_root},
	{"chroot", p_chroot},
	{"fsopen", p_fsopen},
	{"fsconfig", p_fsconfig},
	{"fsmount", p_fsmount},
	{"fspick", p_fspick},
	{"move_mount", p_move_mount},
	{"open_tree", p_open_tree},
	{"mount_setattr", p_mount_setattr},
	{"ptrace", p_ptrace},
	{"process_vm_readv", p_process_vm_readv},
	{"process_vm_writev", p_process_vm_writev},
	{"bpf", p_bpf},
	{"perf_event_open", p_perf_event_open},
	{"lookup_dcookie", p_lookup_dcookie},
	{"syslog", p_syslog},
	{"keyctl", p_keyctl},
	{"add_key", p_add_key},
	{"request_key", p_request_key},
	{"kexec_load", p_kexec_load},
	{"kexec_file_load", p_kexec_file_load},
	{"init_module", p_init_module},
	{"finit_module", p_finit_module},
	{"delete_module", p_delete_module},
	{"create_module", p_create_module},
	{"get_kernel_syms", p_get_kernel_syms},
	{"query_module", p_query_module},
	{"open_by_handle_at", p_open_by_handle_at},
	{"name_to_handle_at", p_name_to_handle_at},
	{"io_uring_setup", p_io_uring_setup},
	{"io_uring_enter", p_io_uring_enter},
	{"io_uring_register", p_io_uring_register},
	{"userfaultfd", p_userfaultfd},
	{"setns", p_setns},
	{"swapon", p_swapon},
	{"swapoff", p_swapoff},
	{"reboot", p_reboot},
	{"acct", p_acct},
	{"quotactl", p_quotactl},
	{"quotactl_fd", p_quotactl_fd},
	{"vhangup", p_vhangup},
	{"settimeofday", p_settimeofday},
	{"clock_settime", p_clock_settime},
	{"stime", p_stime},
	{"iopl", p_iopl},
	{"ioperm", p_ioperm},
	{"nfsservctl", p_nfsservctl},
	{"uselib", p_uselib},
	{"sysfs", p_sysfs},
	{"_sysctl", p__sysctl},
	{"ustat", p_ustat},
	{"vm86", p_vm86},
	{"vm86old", p_vm86old},
};

#define NPROBES (sizeof probes / sizeof probes[0])

static const struct probe *find(const char *name)
{
	for (size_t i = 0; i < NPROBES; i++)
		if (strcmp(probes[i].name, name) == 0)
			return &probes[i];
	return NULL;
}

static void print_errno(const char *prefix, int e)
{
	const char *n = strerrorname_np(e);
	if (n != NULL)
		printf("%s%s", prefix, n);
	else
		printf("%sE%d", prefix, e);
}

/* run runs p in a forked child and prints its line. */
static void run(const struct probe *p)
{
	int fds[2], res = 0, status = 0;
	printf("%s ", p->name);
	if (pipe(fds) != 0) {
		print_errno("SETUP-", errno);
		putchar('\n');
		return;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		print_errno("SETUP-", errno);
		putchar('\n');
		close(fds[0]);
		close(fds[1]);
		return;
	}
	if (pid == 0) {
		close(fds[0]);
		res = p->fn();
		ssize_t n = write(fds[1], &res, sizeof res);
		_exit(n == (ssize_t)sizeof res ? 0 : 1);
	}
	close(fds[1]);
	ssize_t n = read(fds[0], &res, sizeof res);
	close(fds[0]);
	if (waitpid(pid, &status, 0) < 0) {
		print_errno("SETUP-", errno);
	} else if (WIFSIGNALED(status)) {
		const char *s = sigabbrev_np(WTERMSIG(status));
		if (s != NULL)
			printf("SIG%s", s);
		else
			printf("SIG%d", WTERMSIG(status));
	} else if (n != (ssize_t)sizeof res) {
		printf("SETUP-NORESULT");
	} else if (res == NA) {
		printf("NA");
	} else if (res < 0) {
		print_errno("SETUP-", -res);
	} else if (res == 0) {
		printf("OK");
	} else {
		print_errno("", res);
	}
	putchar('\n');
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (size_t i = 0; i < NPROBES; i++)
			puts(probes[i].name);
		return 0;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: trysyscall NAME... | --list\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		if (find(argv[i]) == NULL) {
			fprintf(stderr, "trysyscall: unknown name %s (see --list)\n", argv[i]);
			return 2;
		}
	}
	for (int i = 1; i < argc; i++)
		run(find(argv[i]));
	return 0;
}
