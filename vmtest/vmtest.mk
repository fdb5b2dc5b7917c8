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

# make e2e-vm: the whole program on stock Debian systems (systemd, cgroup2
# only) under QEMU, a kernel matrix: vmtest/e2e/run.sh boots the cached
# bookworm guest (built once by vmtest/e2e/image.sh, needs root and the
# network) with its 6.1 cloud kernel, lsm=landlock,lockdown,capability,bpf
# and the kernel's default LSM list, and copies of it with bullseye's 5.10
# and bookworm-backports' cloud kernels (vmtest/e2e/kernel.sh), and runs
# vmtest/e2e/suite.sh with bin/sbx as root and as a user with systemd
# delegation: on 6.1 (and the backports kernel, booted by name: its TCG
# boots are not steady) the suite passes; on 5.10 (no Landlock, no BPF LSM
# program set) every run must refuse. Settings:
# E2E_BOOTS (which kernels and LSM lists), E2E_TIMEOUT, E2E_SBX, E2E_LOGS,
# E2E_CACHE; see vmtest/e2e/run.sh.
export E2E_BOOTS E2E_TIMEOUT E2E_SBX E2E_LOGS E2E_CACHE

.PHONY: e2e-vm e2e-vm-image
e2e-vm: build
	bash $(VMTEST_DIR)/e2e/run.sh

e2e-vm-image:
	bash $(VMTEST_DIR)/e2e/image.sh
