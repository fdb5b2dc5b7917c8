# The adversarial suite (escape/, see SECURITY.md), included by the top-level
# Makefile. It builds its own sbx and its static attack helper (gcc -static,
# and gcc -m32 for the i386 ABI); set SBX_BIN=bin/sbx to test a prebuilt sbx.
# Needs root. About 5 s.

## escape: attack sbx run with every escape class of the threat model
escape:
	$(GO) test $(GOFLAGS) -tags $(TAGS) -count=1 ./escape/
