package protect

import "strings"

// ProtectedList describes ProtectedNames for help texts: the names looked
// up at any depth, then those looked up at the top of a writable tree only.
func ProtectedList() string {
	var deep, top []string
	for _, p := range ProtectedNames {
		if p.anyDepth {
			deep = append(deep, p.name)
		} else {
			top = append(top, p.name)
		}
	}
	return strings.Join(deep, ", ") + " at any depth, and " + strings.Join(top, ", ") + " at the top"
}
