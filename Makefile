# sbx build, test and benchmark entry points. See README.md.
GO        ?= go
GOFLAGS   ?=
TAGS      := seccomp
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
BIN       := bin

.PHONY: all build deps demo test test-rootless fuzz vet generate generate-check bench clean vmtest e2e-vm escape

all: build

-include testdata/trysyscall/trysyscall.mk
-include vmtest/vmtest.mk
-include escape/escape.mk
EXTRA_BINS := bin/trysyscall bin/trysyscall32

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

## test: everything CI runs: vet, generated-code check, unit, integration and
## escape tests, a short fuzz of every parser, the BPF LSM tests under QEMU,
## and the whole program on a booted Debian 12 guest (e2e-vm)
test: deps vet generate-check build
	$(GO) test $(GOFLAGS) -tags $(TAGS) -count=1 ./...
	$(MAKE) test-rootless
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

FUZZTIME ?= 5s
## fuzz: run each fuzz target briefly (seeds live in each package's testdata/fuzz)
fuzz:
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzParseRequest$$' -fuzztime $(FUZZTIME) ./gate/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzShape$$' -fuzztime $(FUZZTIME) ./gate/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzRewrite$$' -fuzztime $(FUZZTIME) ./stage/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzDecodeEvent$$' -fuzztime $(FUZZTIME) ./bpf/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzDecodeTraceEvent$$' -fuzztime $(FUZZTIME) ./bpf/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzParseMountDevices$$' -fuzztime $(FUZZTIME) ./bpf/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzParseSize$$' -fuzztime $(FUZZTIME) ./cmd/sbx/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzRunFlags$$' -fuzztime $(FUZZTIME) ./cmd/sbx/
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz '^FuzzParseRule$$' -fuzztime $(FUZZTIME) ./egress/

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet -tags $(TAGS) ./...

## generate: regenerate the bpf2go output (needs clang, libbpf-dev)
generate:
	$(GO) generate ./bpf/...

generate-check:
	@if [ -n "$$(ls bpf/*.c 2>/dev/null)" ] && command -v clang >/dev/null; then \
		$(GO) generate ./bpf/... && git diff --exit-code -- bpf/ || { echo "bpf2go output is stale: run make generate and commit"; exit 1; }; \
	fi

## bench: startup and overhead against bubblewrap (not a test)
bench: build
	./scripts/bench.sh

clean:
	rm -rf $(BIN)

FORCE:
