# vmtest/e2e/apt.sh: helpers that image.sh and kernel.sh source.

# apt_mirror [security]: prints the Debian mirror apt already uses (deb822
# sources first, then sources.list), or with "security" its security
# archive; prints nothing when there is none. Its host is never written
# into these scripts: the machine's apt configuration names it.
apt_mirror() {
	local want='debian' m
	[ "${1:-}" != security ] || want='debian-security'
	m=$(sed -n 's/^URIs: *\([^ ]*\/'"$want"'\/\{0,1\}\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1 || true)
	if [ -z "$m" ]; then
		m=$(awk -v w="/$want/?$" '$1 == "deb" && $2 ~ w { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
	fi
	echo "$m"
}

# unmount_under DIR lazily unmounts every mount at or below DIR (a build
# killed before its cleanup leaves a chroot's /proc, /sys and /dev mounted:
# removing the tree through them would reach the host's).
unmount_under() {
	local m
	awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r |
		while read -r m; do umount -l "$m" || true; done
}
