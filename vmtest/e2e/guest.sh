#!/bin/bash
# vmtest/e2e/guest.sh runs inside the guest as root (sbx-e2e.service, output
# on the serial console): it installs the sbx under test from the job disk,
# runs suite.sh as root and then as the lingering user tester through
# systemd (a transient unit under user@1000.service, where cgroup2
# controllers are delegated), and prints the SBX-E2E-RESULT line that
# vmtest/e2e/run.sh judges. systemd powers the guest off when it returns.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
job=/job
echo # the firmware's last line may lack its newline
echo "SBX-E2E: kernel $(uname -r) lsm=$(cat /sys/kernel/security/lsm) controllers=($(cat /sys/fs/cgroup/cgroup.controllers)) uptime $(cut -d' ' -f1 /proc/uptime) s"
install -m 0755 "$job/sbx" /usr/local/bin/sbx
start=$(date +%s)

bash "$job/suite.sh" root
root_rc=$?

# As the user: wait for the user manager (lingering starts it at boot).
for _ in $(seq 60); do
	systemctl is-active --quiet user@1000.service && break
	sleep 1
done
echo "SBX-E2E: user scope controllers=($(cat /sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/cgroup.subtree_control 2>/dev/null))"
systemd-run --quiet --machine=tester@.host --user --pipe --wait \
	--setenv=PATH=/usr/local/bin:/usr/bin:/bin \
	bash "$job/suite.sh" user </dev/null
user_rc=$?

echo
echo "SBX-E2E-RESULT: rc=$((root_rc | user_rc)) root=$root_rc user=$user_rc suite=$(($(date +%s) - start))s uptime=$(cut -d' ' -f1 /proc/uptime)s"
sync
exit 0
