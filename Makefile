# sbx build, test and benchmark entry points. See README.md.
GO        ?= go
GOFLAGS   ?=
TAGS      := seccomp
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
BIN       := bin

.PHONY: all build deps demo check lint lint-tool docs-check test test-rootless fuzz vet generate generate-check bench clean vmtest e2e-vm escape

all: build

-include testdata/trysyscall/trysyscall.mk
-include vmtest/vmtest.mk
-include escape/escape.mk
EXTRA_BINS := bin/trysyscall bin/trysyscall32

## docs-check: every relative link in the Markdown files resolves, and README's
## Layout table has one row per top-level folder (scripts/check-docs.py)
docs-check:
	./scripts/check-docs.py

## deps: install the Debian packages the build, the tests and the benchmarks need (root)
deps:
	./.ci/deps.sh

## build: bin/sbx (and the test helpers)
build: $(BIN)/sbx $(EXTRA_BINS)

$(BIN)/sbx: FORCE
	@mkdir -p $(BIN)
	$(GO) build $(GOFLAGS) -tags $(TAGS) -trimpath -ldflags '$(LDFLAGS)' -o $@ ./cmd/sbx


## demo: run a command in a sandbox: works in the workspace, refused outside
demo: deps build
	./scripts/demo.sh

## test: everything CI runs: vet, lint, generated-code check, unit, integration and
## escape tests, the static release binary on an old userland, a short fuzz
## of every parser, the BPF LSM tests under QEMU, and the whole program on
## booted Debian guests, one per kernel of the matrix (e2e-vm: 6.1 and 5.10;
## bookworm-backports' 6.12 by E2E_BOOTS)
# SBX_REQUIRE names the features this CI host provides: a test that would
# skip for lack of one fails instead (internal/sbxtest). Not the BPF LSM,
# which only the QEMU guest of vmtest has.
TEST_REQUIRE ?= root,landlock,cgroupbpf,python3,node
test: deps vet lint docs-check generate-check build
	SBX_REQUIRE=$(TEST_REQUIRE) $(GO) test $(GOFLAGS) -tags $(TAGS) -count=1 ./...
	$(MAKE) test-rootless
	$(MAKE) release-check
	$(MAKE) fuzz
	$(MAKE) vmtest
	$(MAKE) e2e-vm

## test-rootless: the rootless suites: run as root, they create the user
## sbx-rootless-test (idempotent) and run every sbx process as that user: the
## dedicated rootless tests, then the whole cmd/sbx integration suite again
## as the user (SBX_TEST_AS_USER; what needs root skips with doctor's reason)
test-rootless: build
	$(GO) test $(GOFLAGS) -tags $(TAGS) -count=1 -run 'Rootless|FindDelegation|UsernsRestriction|ContribProfile|ValidateCgroup|PrivateDir|UserStateDir' ./cmd/sbx/ ./runner/ ./sandbox/
	SBX_TEST_AS_USER=sbx-rootless-test $(GO) test $(GOFLAGS) -tags $(TAGS) -count=1 ./cmd/sbx/

## fuzz: run each fuzz target briefly (seeds live in each package's testdata/fuzz)
## FUZZTIME is a count of inputs, not a duration: with a duration, Go 1.26's
## fuzz coordinator can fail a clean run with a bare "context deadline
## exceeded" when its deadline lands mid-call (go.dev/issue/75804, fixed in
## 1.27); a count sets no deadline, and a slow machine does the same work.
FUZZTIME ?= 20000x
fuzz:
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzParseRequest$$' -fuzztime $(FUZZTIME) ./gate/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzShape$$' -fuzztime $(FUZZTIME) ./gate/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzRewrite$$' -fuzztime $(FUZZTIME) ./stage/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzDecodeEvent$$' -fuzztime $(FUZZTIME) ./bpf/events/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzDecodeTraceEvent$$' -fuzztime $(FUZZTIME) ./bpf/events/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzParseMountDevices$$' -fuzztime $(FUZZTIME) ./bpf/lsm/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzParseSize$$' -fuzztime $(FUZZTIME) ./cmd/sbx/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzRunFlags$$' -fuzztime $(FUZZTIME) ./cmd/sbx/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzParseRule$$' -fuzztime $(FUZZTIME) ./egress/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzParseGitConfig$$' -fuzztime $(FUZZTIME) ./runner/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzValid$$' -fuzztime $(FUZZTIME) ./internal/runid/

## check: what a contributor runs without root, apt or QEMU: vet, lint,
## the docs check and every package's tests with -short, which skip what
## needs root, a real sandbox or a kernel feature (they belong to make test)
check: vet lint docs-check
	$(GO) test $(GOFLAGS) -tags $(TAGS) -short -count=1 ./...

# golangci-lint, pinned; installed once into .cache/bin by go install (not
# a module dependency of sbx). Its configuration: .golangci.yml.
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(CURDIR)/.cache/bin/golangci-lint-$(GOLANGCI_LINT_VERSION)

## lint-tool: install the pinned golangci-lint into .cache/bin (once)
lint-tool: $(GOLANGCI_LINT)

$(GOLANGCI_LINT):
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(dir $@)golangci-lint $@

## lint: golangci-lint over both builds of the tree: -tags seccomp (what
## ships) and seccomp,sbxtest (the test build with its sabotage hooks)
lint: $(GOLANGCI_LINT)
	$(GOLANGCI_LINT) run --build-tags $(TAGS) ./...
	$(GOLANGCI_LINT) run --build-tags $(TAGS),sbxtest ./...

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet -tags $(TAGS) ./...

## generate: regenerate the bpf2go output (needs clang, libbpf-dev)
generate:
	$(GO) generate ./bpf/...

generate-check:
	@if [ -n "$$(find bpf -name '*.c' 2>/dev/null)" ] && command -v clang >/dev/null; then \
		$(GO) generate ./bpf/... && git diff --exit-code -- bpf/ || { echo "bpf2go output is stale: run make generate and commit"; exit 1; }; \
	fi

## bench: startup and overhead against bubblewrap (not a test)
bench: build
	./scripts/bench.sh

clean:
	rm -rf $(BIN) $(DIST)

# --- release and install (see docs/install.md, THIRD_PARTY_NOTICES.md) ---
.PHONY: release release-repro release-check check-notag docs install uninstall test-install ci-check

PREFIX  ?= /usr/local
DESTDIR ?=
ARCHES  ?= amd64 arm64
DIST    ?= dist
# The docs and the binary "make install" takes from the source tree.
PKG     := $(BIN)/pkg

## release: static, reproducible sbx for linux/$(ARCHES) in $(DIST)/:
## sbx-VERSION-linux-ARCH.tar.gz (binary, man page, completions, AppArmor
## profile, README, licences, installer) and SHA256SUMS
release:
	GO='$(GO)' VERSION='$(VERSION)' ARCHES='$(ARCHES)' DIST='$(DIST)' ./scripts/release.sh

## release-repro: build the release twice, the second time from a clean
## export of HEAD in another directory with an empty build cache, and
## require identical SHA256SUMS
release-repro:
	GO='$(GO)' ARCHES='$(ARCHES)' ./scripts/release-repro.sh

## release-check: the amd64 release binary on an old userland (Debian 11
## chroot, glibc 2.31; debootstrapped once into .cache/oldroot), the dynamic
## bin/sbx as the control that must not run there; then the tarball's
## installer into a DESTDIR (root)
release-check: $(BIN)/sbx
	$(MAKE) release ARCHES=amd64
	./scripts/oldroot-test.sh $(DIST)/sbx-$(VERSION)-linux-amd64/sbx $(BIN)/sbx
	./scripts/install-test.sh $(DIST)/sbx-$(VERSION)-linux-amd64.tar.gz

## check-notag: a build without the seccomp tag (or cgo) must fail, naming the tag
check-notag:
	$(GO) test -tags $(TAGS) -count=1 -run '^TestBuildRequiresSeccompTag$$' ./cmd/sbx/

## docs: the man page and shell completions of bin/sbx, into $(PKG)/
docs: $(BIN)/sbx
	@mkdir -p $(PKG)/completions $(PKG)/apparmor
	cp $(BIN)/sbx $(PKG)/sbx
	$(BIN)/sbx __docs man > $(PKG)/sbx.1
	$(BIN)/sbx __docs bash > $(PKG)/completions/sbx.bash
	$(BIN)/sbx __docs zsh > $(PKG)/completions/_sbx
	$(BIN)/sbx __docs fish > $(PKG)/completions/sbx.fish
	cp contrib/apparmor/sbx $(PKG)/apparmor/sbx

## install: bin/sbx, sbx(1), completions (bash, zsh, fish) under $(PREFIX),
## and the AppArmor profile where /etc/apparmor.d exists; DESTDIR for staging
install: docs
	SBX_SRC=$(PKG) PREFIX='$(PREFIX)' DESTDIR='$(DESTDIR)' ./contrib/release/install.sh install

## uninstall: remove what install put in place
uninstall:
	PREFIX='$(PREFIX)' DESTDIR='$(DESTDIR)' ./contrib/release/install.sh uninstall

## test-install: install and uninstall into a temporary DESTDIR, checking every file
test-install: docs
	./scripts/install-test.sh $(PKG)

## ci-check: the GitHub Action's script (contrib/ci/sbx-ci.sh) run the way a
## runner runs it: user "runner" with passwordless sudo, no TTY, a secret in
## the environment that must not reach the sandbox (root; uses the amd64
## release tarball)
ci-check:
	$(MAKE) release ARCHES=amd64
	./scripts/ci-test.sh $(DIST)/sbx-$(VERSION)-linux-amd64.tar.gz

FORCE:
