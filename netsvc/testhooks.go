//go:build !sbxtest

package netsvc

import "github.com/sbx-sandbox/sbx/egress"

// testResolver is nil outside test builds: the egress proxy resolves names
// with the system's resolver.
func testResolver() egress.Resolver { return nil }
