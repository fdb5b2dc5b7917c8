//go:build !seccomp || !cgo

package main

// sbx's seccomp filter is installed by runc's libcontainer, whose seccomp
// support is compiled in only with cgo and the "seccomp" build tag (it links
// libseccomp); without them libcontainer keeps a stub that fails every run
// with "seccomp: config provided but seccomp not supported". A binary that
// cannot install its filter must not exist, so such a build stops here with
// the name of what is missing: build with "make build", or with
// CGO_ENABLED=1 go build -tags seccomp ./cmd/sbx (needs libseccomp-dev).
var _ = sbx_requires_cgo_and_build_tag_seccomp_see_make_build
