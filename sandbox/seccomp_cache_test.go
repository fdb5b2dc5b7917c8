//go:build linux && seccomp

package sandbox

import (
	"runtime"
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/net/bpf"
)

// seccompConstAllow reports whether the kernel's seccomp action cache
// (Linux 5.11+, seccomp_cache_prepare) would mark syscall nr of arch as
// always allowed by prog: it follows prog the way seccomp_is_const_allow
// emulates it, knowing only nr and arch, and gives up (false) at any
// instruction that emulator does not handle, such as a load of an argument.
// A syscall the cache marks skips the filter entirely.
func seccompConstAllow(prog []bpf.RawInstruction, nr, arch uint32) bool {
	const (
		ldAbsW = 0x20 // BPF_LD | BPF_W | BPF_ABS
		retK   = 0x06 // BPF_RET | BPF_K
		ja     = 0x05 // BPF_JMP | BPF_JA
		jeqK   = 0x15
		jgtK   = 0x25
		jgeK   = 0x35
		jsetK  = 0x45
		andK   = 0x54 // BPF_ALU | BPF_AND | BPF_K
		retAll = 0x7fff0000
	)
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Op {
		case ldAbsW:
			switch in.K {
			case 0: // seccomp_data.nr
				a = nr
			case 4: // seccomp_data.arch
				a = arch
			default:
				return false
			}
		case retK:
			return in.K == retAll
		case ja:
			pc += int(in.K)
		case jeqK, jgtK, jgeK, jsetK:
			var ok bool
			switch in.Op {
			case jeqK:
				ok = a == in.K
			case jgtK:
				ok = a > in.K
			case jgeK:
				ok = a >= in.K
			case jsetK:
				ok = a&in.K != 0
			}
			if ok {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case andK:
			a &= in.K
		default:
			return false
		}
	}
	return false
}

// TestSeccompActionCache checks that the filter leaves the kernel's action
// cache able to skip it for every syscall it has no rule for (the open,
// read, write, mmap, futex... of every program), on the native and the
// i386 ABI, and only for those: a syscall with a rule must run the filter.
// A filter layout the cache cannot follow would cost every syscall of the
// sandbox a walk of the filter.
func TestSeccompActionCache(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("checked for amd64's ABIs only")
	}
	prog := mustCompileSeccomp(t, Seccomp())
	for _, abi := range []struct {
		name  string
		arch  libseccomp.ScmpArch
		audit uint32
	}{{"amd64", libseccomp.ArchAMD64, auditArchX86_64}, {"i386", libseccomp.ArchX86, auditArchI386}} {
		// By name: on i386 libseccomp resolves "socket" to its socketcall
		// multiplexer, and the filter covers the direct syscall too.
		ruled := map[string]bool{}
		for _, r := range Seccomp().Syscalls {
			ruled[r.Name] = true
		}
		var cached int
		for nr := uint32(0); nr < 512; nr++ {
			name, err := libseccomp.ScmpSyscall(nr).GetNameByArch(abi.arch)
			if err != nil {
				continue // no such syscall on this ABI
			}
			got := seccompConstAllow(prog, nr, abi.audit)
			if got == ruled[name] {
				t.Errorf("%s syscall %d (%s): cached as always allowed = %v, has a rule = %v", abi.name, nr, name, got, ruled[name])
			}
			if got {
				cached++
			}
		}
		if cached < 250 {
			t.Errorf("%s: only %d syscalls cached", abi.name, cached)
		}
		// Not openat: whether it creates a set-id file depends on its flags
		// and mode (setIDRules), so every openat runs the filter (its path
		// is bounded by TestSeccompHotPath).
		for _, name := range []string{"read", "write", "close", "mmap", "futex", "fstat", "newfstatat", "execve"} {
			nr, err := libseccomp.GetSyscallFromNameByArch(name, abi.arch)
			if err != nil {
				t.Fatal(err)
			}
			if !seccompConstAllow(prog, uint32(nr), abi.audit) {
				t.Errorf("%s %s is not cached", abi.name, name)
			}
		}
	}
}
