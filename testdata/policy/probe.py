#!/usr/bin/env python3
"""Probe of the kernel policy tests (cmd/sbx/policy_integration_test.go).

Each argument names one operation; for each, one line "ARG RESULT" is printed,
where RESULT is OK or ERRNO@STEP (the errno name and the call that failed), so
that a test can tell the network wall's EPERM at socket() from, say, an empty
network namespace's ECONNREFUSED at connect(). The same probe runs inside the
sandbox and on the host (the control). Operations:

  tcp4:PORT tcp6:PORT    connect to 127.0.0.1 / [::1]
  udp4:PORT udp6:PORT    sendto 127.0.0.1 / [::1] (payload "probe ARG")
  raw4 raw6              socket(AF_INET[6], SOCK_RAW, ICMP)
  netlink packet vsock   socket(AF_NETLINK / AF_PACKET / AF_VSOCK)
  fd:N                   socket(fileno=N), then getsockname
  fds                    the open descriptors, e.g. "0,1,2" (fstat only)
  read:PATH              open PATH and read it
  write:PATH             create PATH and write to it (removed on success)
  link:SRC:DST           linkat(SRC, DST, AT_SYMLINK_FOLLOW) (DST removed on success)
  uring                  io_uring_setup(1, ...)
  mkdir:PATH             mkdir PATH (removed on success)
  exec:PATH              run PATH --version in a forked child (OK if it exits 0)
  mount:DIR              mount a tmpfs on DIR (unmounted on success)
  sockets:N              socket(AF_INET, SOCK_STREAM) N times: result "EPERMxN"
                         when all failed with EPERM
"""

import ctypes
import errno
import os
import socket
import sys


def fail(e, step):
    return "%s@%s" % (errno.errorcode.get(e.errno, str(e.errno)), step)


def connect(family, addr, port):
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
    except OSError as e:
        return fail(e, "socket")
    try:
        s.settimeout(10)
        s.connect((addr, port))
    except OSError as e:
        return fail(e, "connect")
    finally:
        s.close()
    return "OK"


def sendto(family, addr, port, payload):
    try:
        s = socket.socket(family, socket.SOCK_DGRAM)
    except OSError as e:
        return fail(e, "socket")
    try:
        s.sendto(payload, (addr, port))
    except OSError as e:
        return fail(e, "sendto")
    finally:
        s.close()
    return "OK"


def create(family, typ, proto=0):
    try:
        socket.socket(family, typ, proto).close()
    except OSError as e:
        return fail(e, "socket")
    return "OK"


def fromfd(n):
    try:
        s = socket.socket(fileno=n)
    except OSError as e:
        return fail(e, "socket")
    try:
        s.getsockname()
    except OSError as e:
        return fail(e, "getsockname")
    finally:
        s.detach()
    return "OK"


def fds():
    out = []
    for n in range(1024):
        try:
            os.fstat(n)
        except OSError:
            continue
        out.append(str(n))
    return ",".join(out)


def read(path):
    try:
        f = open(path, "rb")
    except OSError as e:
        return fail(e, "open")
    try:
        f.read()
    except OSError as e:
        return fail(e, "read")
    finally:
        f.close()
    return "OK"


def write(path):
    try:
        f = open(path, "xb")
    except OSError as e:
        return fail(e, "open")
    try:
        f.write(b"probe\n")
        f.close()
    except OSError as e:
        return fail(e, "write")
    os.unlink(path)
    return "OK"


def link(src, dst):
    # linkat(AT_FDCWD, src, AT_FDCWD, dst, AT_SYMLINK_FOLLOW): os.link's
    # defaults call link(2), which links a symlink itself, not its target.
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.linkat(-100, os.fsencode(src), -100, os.fsencode(dst), 0x400) != 0:
        return "%s@link" % errno.errorcode.get(ctypes.get_errno(), "?")
    os.unlink(dst)
    return "OK"


def uring():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
    fd = libc.syscall(425, 1, params)  # __NR_io_uring_setup (x86_64)
    if fd < 0:
        return "%s@io_uring_setup" % errno.errorcode.get(ctypes.get_errno(), "?")
    os.close(fd)
    return "OK"


def mkdir(path):
    try:
        os.mkdir(path)
    except OSError as e:
        return fail(e, "mkdir")
    os.rmdir(path)
    return "OK"


def execute(path):
    pid = os.fork()
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        try:
            os.execv(path, [path, "--version"])
        except OSError as e:
            os._exit(e.errno)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return "OK"
    return "%s@exec" % errno.errorcode.get(code, str(code))


def mount(target):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"none", os.fsencode(target), b"tmpfs", 0, None) != 0:
        return "%s@mount" % errno.errorcode.get(ctypes.get_errno(), "?")
    libc.umount2(os.fsencode(target), 0)
    return "OK"


def sockets(n):
    got = {}
    for _ in range(n):
        try:
            socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
            r = "OK"
        except OSError as e:
            r = errno.errorcode.get(e.errno, str(e.errno))
        got[r] = got.get(r, 0) + 1
    return ",".join("%sx%d" % kv for kv in sorted(got.items()))


def probe(arg):
    name, _, rest = arg.partition(":")
    if name == "tcp4":
        return connect(socket.AF_INET, "127.0.0.1", int(rest))
    if name == "tcp6":
        return connect(socket.AF_INET6, "::1", int(rest))
    if name == "udp4":
        return sendto(socket.AF_INET, "127.0.0.1", int(rest), ("probe " + arg).encode())
    if name == "udp6":
        return sendto(socket.AF_INET6, "::1", int(rest), ("probe " + arg).encode())
    if name == "raw4":
        return create(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    if name == "raw6":
        return create(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    if name == "netlink":
        return create(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # NETLINK_ROUTE
    if name == "packet":
        return create(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))  # ETH_P_ALL
    if name == "vsock":
        return create(socket.AF_VSOCK, socket.SOCK_STREAM)
    if name == "fd":
        return fromfd(int(rest))
    if name == "fds":
        return fds()
    if name == "read":
        return read(rest)
    if name == "write":
        return write(rest)
    if name == "link":
        src, _, dst = rest.partition(":")
        return link(src, dst)
    if name == "uring":
        return uring()
    if name == "mkdir":
        return mkdir(rest)
    if name == "mount":
        return mount(rest)
    if name == "exec":
        return execute(rest)
    if name == "sockets":
        return sockets(int(rest))
    return "UNKNOWN"


def main():
    for arg in sys.argv[1:]:
        print(arg, probe(arg), flush=True)


if __name__ == "__main__":
    main()
