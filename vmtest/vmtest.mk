# make vmtest: run the BPF tests (bpf/: TestLSM*, TestNet*) as root inside a
# Debian 6.1 kernel booted under QEMU, since the host kernel refuses LSM programs.
# Include this file from the top Makefile, or run it alone from the repo root:
#   make -f vmtest/vmtest.mk vmtest
# Settings (environment or make variables): VMTEST_KERNEL_PKG, VMTEST_RUN,
# VMTEST_TIMEOUT, VMTEST_CACHE, VMTEST_LSM; see vmtest/run.sh.

VMTEST_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))

export VMTEST_KERNEL_PKG VMTEST_RUN VMTEST_TIMEOUT VMTEST_CACHE VMTEST_LSM

.PHONY: vmtest vmtest-clean
vmtest:
	bash $(VMTEST_DIR)/run.sh

vmtest-clean:
	rm -rf $(VMTEST_DIR)/.cache
