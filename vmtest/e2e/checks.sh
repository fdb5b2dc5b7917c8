# vmtest/e2e/checks.sh: the check helpers the e2e suites source (suite.sh,
# suite-refuse.sh). The caller sets mode (root|user), pass=0, fail=0 and out
# (a scratch file). Each check prints "ok   MODE NAME" or "FAIL MODE NAME:
# WHY" followed by the first lines of the command's output, which
# vmtest/e2e/run.sh greps from the console.

ok() { echo "ok   $mode $1"; pass=$((pass + 1)); }
bad() {
	echo "FAIL $mode $1: $2"
	sed -n '1,15p' "$out" | sed 's/^/     | /'
	fail=$((fail + 1))
}

# expect NAME RC [REGEX [REGEX...]] -- CMD...: CMD (stdout and stderr into
# $out) must exit RC and its output must match every extended REGEX.
expect() {
	local name=$1 want=$2 pats=() rc p
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		pats+=("$1")
		shift
	done
	shift
	timeout 120 "$@" >"$out" 2>&1 </dev/null
	rc=$?
	if [ "$rc" != "$want" ]; then
		bad "$name" "exit status $rc, want $want ($*)"
		return
	fi
	for p in "${pats[@]}"; do
		if ! grep -qE -- "$p" "$out"; then
			bad "$name" "output lacks /$p/ ($*)"
			return
		fi
	done
	ok "$name"
}

# refute NAME REGEX: the last command's output must not match REGEX.
refute() {
	if grep -qE -- "$2" "$out"; then bad "$1" "output matches /$2/"; else ok "$1"; fi
}

# kernel_below MAJOR.MINOR: whether the running kernel is older.
kernel_below() {
	local r major minor
	r=$(uname -r)
	major=${r%%.*}
	r=${r#*.}
	minor=${r%%[!0-9]*}
	[ "$major" -lt "${1%%.*}" ] || { [ "$major" = "${1%%.*}" ] && [ "$minor" -lt "${1#*.}" ]; }
}
