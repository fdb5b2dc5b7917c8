//go:build linux && seccomp && amd64

package sandbox

import (
	"encoding/binary"
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// pathLen runs prog on the seccomp_data of (nr, arch, args) in a small
// counting cBPF interpreter (little endian, as the kernel) and returns the
// number of instructions executed and the return value.
func pathLen(t *testing.T, prog []bpf.RawInstruction, nr int, arch uint32, args [6]uint64) (int, uint32) {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], uint32(nr))
	binary.LittleEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var a, x uint32
	var mem [16]uint32
	steps := 0
	for pc := 0; pc < len(prog); pc++ {
		steps++
		in := prog[pc]
		switch in.Op & 0x07 {
		case 0x00: // ld
			switch in.Op {
			case 0x20: // ld [k]
				a = binary.LittleEndian.Uint32(data[in.K:])
			case 0x00: // ld #k
				a = in.K
			case 0x60: // ld M[k]
				a = mem[in.K]
			default:
				t.Fatalf("ld op %#x", in.Op)
			}
		case 0x01: // ldx
			switch in.Op {
			case 0x01:
				x = in.K
			case 0x61:
				x = mem[in.K]
			default:
				t.Fatalf("ldx op %#x", in.Op)
			}
		case 0x02:
			mem[in.K] = a
		case 0x03:
			mem[in.K] = x
		case 0x04: // alu
			v := in.K
			if in.Op&0x08 != 0 {
				v = x
			}
			switch in.Op & 0xf0 {
			case 0x50:
				a &= v
			case 0x40:
				a |= v
			case 0x00:
				a += v
			case 0x10:
				a -= v
			default:
				t.Fatalf("alu op %#x", in.Op)
			}
		case 0x05: // jmp
			v := in.K
			if in.Op&0x08 != 0 {
				v = x
			}
			var cond bool
			switch in.Op & 0xf0 {
			case 0x00:
				pc += int(in.K)
				continue
			case 0x10:
				cond = a == v
			case 0x20:
				cond = a > v
			case 0x30:
				cond = a >= v
			case 0x40:
				cond = a&v != 0
			default:
				t.Fatalf("jmp op %#x", in.Op)
			}
			if cond {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case 0x06:
			return steps, in.K
		case 0x07:
			if in.Op == 0x07 {
				x = a
			} else {
				a = x
			}
		}
	}
	t.Fatal("fell off the program")
	return 0, 0
}

// hotSyscalls are what programs call most; with libseccomp's binary tree
// (libcontainer turns it on above 32 rules) each is decided in a few
// instructions, not after a linear scan of the deny list. (The kernel's
// seccomp action cache skips the filter entirely for calls whose verdict
// does not depend on the arguments; ioctl depends on them.)
var hotSyscalls = []string{"openat", "read", "write", "close", "fstat", "newfstatat", "lseek", "mmap", "munmap", "futex", "brk", "rt_sigaction", "getdents64", "ioctl"}

// maxHotPath bounds the instructions a hot syscall may take: the measured
// 10-17 with some room, far below a linear scan of the ~140 rules.
const maxHotPath = 24

func TestSeccompHotPath(t *testing.T) {
	for _, fams := range [][]int{nil, {unix.AF_INET, unix.AF_INET6}} {
		cfg, err := SeccompWith(SeccompOptions{SocketFamilies: fams})
		if err != nil {
			t.Fatal(err)
		}
		prog := mustCompileSeccomp(t, cfg)
		for _, name := range hotSyscalls {
			nr, err := libseccomp.GetSyscallFromName(name)
			if err != nil {
				t.Fatal(err)
			}
			n, ret := pathLen(t, prog, int(nr), auditArchX86_64, [6]uint64{3, 0x5401})
			if ret != seccompRetAllow {
				t.Errorf("%s: filter returns %#x, want allow", name, ret)
			}
			if n > maxHotPath {
				t.Errorf("%s: %d instructions to allow (program %d long), want <= %d", name, n, len(prog), maxHotPath)
			}
		}
		// The interpreter must agree with the deny list too, or it proves
		// nothing about the allowed paths.
		for _, name := range []string{"mount", "bpf", "io_uring_setup"} {
			nr, _ := libseccomp.GetSyscallFromName(name)
			if _, ret := pathLen(t, prog, int(nr), auditArchX86_64, [6]uint64{}); ret != seccompRetErrno|uint32(unix.EPERM) {
				t.Errorf("%s: filter returns %#x, want EPERM", name, ret)
			}
		}
	}
}
