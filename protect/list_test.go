package protect

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestProtectedList(t *testing.T) {
	got := ProtectedList()
	deep, top, ok := strings.Cut(got, " at any depth, and ")
	if !ok || !strings.HasSuffix(top, " at the top") {
		t.Fatalf("ProtectedList() = %q, want \"... at any depth, and ... at the top\"", got)
	}
	groups := map[bool][]string{
		true:  strings.Split(deep, ", "),
		false: strings.Split(strings.TrimSuffix(top, " at the top"), ", "),
	}
	n := 0
	for _, p := range ProtectedNames {
		list := groups[p.anyDepth]
		if len(list) == 0 {
			t.Errorf("ProtectedList() lacks %q (anyDepth %v)", p.name, p.anyDepth)
			continue
		}
		if list[0] != p.name {
			t.Errorf("ProtectedList(): next name of its group is %q, want %q (anyDepth %v)", list[0], p.name, p.anyDepth)
		}
		groups[p.anyDepth] = list[1:]
		n++
	}
	if len(groups[true])+len(groups[false]) != 0 {
		t.Errorf("ProtectedList() has names beyond ProtectedNames: %q, %q", groups[true], groups[false])
	}
	if n != len(ProtectedNames) {
		t.Errorf("checked %d names, want %d", n, len(ProtectedNames))
	}
}

// TestDocsListProtectedNames keeps the user docs' list of protected
// entries (docs/tiers.md, "Protected paths") equal to ProtectedNames.
func TestDocsListProtectedNames(t *testing.T) {
	b, err := os.ReadFile("../docs/tiers.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Protected paths\n")
	if !ok {
		t.Fatal("docs/tiers.md has no \"## Protected paths\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	want := fmt.Sprintf("(%d names)", len(ProtectedNames))
	if !strings.Contains(section, want) {
		t.Errorf("docs/tiers.md's Protected paths section does not say %q", want)
	}
	for _, p := range ProtectedNames {
		if !strings.Contains(section, "`"+p.name+"`") {
			t.Errorf("docs/tiers.md's Protected paths section does not list `%s`", p.name)
		}
	}
}
