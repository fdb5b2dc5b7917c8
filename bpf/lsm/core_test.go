package lsm

import (
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// TestLSMRelocations resolves every CO-RE relocation of lsm.c against the
// running kernel's BTF (or the raw BTF file in SBX_BTF): a field that does
// not exist there would poison an instruction and fail the load, which on a
// host that refuses LSM programs would otherwise go unnoticed until make
// vmtest. It needs no privileges.
func TestLSMRelocations(t *testing.T) {
	var target *btf.Spec
	var err error
	if path := os.Getenv("SBX_BTF"); path != "" {
		f, ferr := os.Open(path)
		if ferr != nil {
			t.Fatal(ferr)
		}
		defer f.Close()
		target, err = btf.LoadSpecFromReader(f)
	} else {
		target, err = btf.LoadKernelSpec()
	}
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("kernel has no BTF: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	spec, err := loadLsm()
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range spec.Programs {
		var relos []*btf.CORERelocation
		var at []int
		for i := range p.Instructions {
			if r := btf.CORERelocationMetadata(&p.Instructions[i]); r != nil {
				relos = append(relos, r)
				at = append(at, i)
			}
		}
		fixups, err := btf.CORERelocate(relos, []*btf.Spec{target}, binary.LittleEndian, spec.Types.TypeID)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for i, f := range fixups {
			if strings.Contains(f.String(), "poison") {
				t.Errorf("%s: instruction %d: %v does not resolve (%s)", name, at[i], relos[i], f.String())
			}
		}
	}
}
