#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check-debug: the whole kselftest suite and the KUnit suites on the
# debug guest kernel (6.12-debug: KASAN, lockdep, kmemleak, debug objects,
# fault injection; tools/testing/debug-kernel.sh), failing on any kernel
# report.  Not part of "make check" (see Documentation/networking/visock.rst,
# "Debug kernel", for the time it takes).
#
#   1. build the debug kernel once (cached in ~/.cache/visock/kernels)
#   2. build visock.ko against it (W=1, sparse) and visock_kunit.ko
#   3. boot the two guests with kmemleak=on; host a runs the KUnit suites
#      (visock_kunit.ko), both run the kselftests, then a kmemleak scan
#   4. check both guests' kernel logs: one result per kind of report
#      (KASAN, lockdep, sleeping in atomic context, debug objects, list
#      corruption, kmemleak, WARN, BUG/Oops/panic)
#
# The last line is "N passed, N failed"; the exit status is non-zero if
# anything failed.  Arguments are passed to run_tests.sh (e.g. --pick
# 'dp.*').  Environment: VISOCK_VM_INSTANCE (test bed number),
# VISOCK_DEBUG_TIMEOUT (seconds for the guests, default 10800),
# VISOCK_VM_APPEND (more kernel command line).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T="$ROOT/tools/testing"
VM="$T/vm/vm.sh"
OUT="$ROOT/build/check-debug"
TIMEOUT=${VISOCK_DEBUG_TIMEOUT:-10800}

passed=0 failed=0
summary=()
rm -rf "$OUT"
mkdir -p "$OUT"
start=$(date +%s)

banner() { echo; echo "=== make check-debug: $* ($(($(date +%s) - start)) s)"; }

result() { # 0|1 LABEL
	if [ "$1" = 0 ]; then
		passed=$((passed + 1))
		summary+=("ok: $2")
	else
		failed=$((failed + 1))
		summary+=("FAILED: $2")
	fi
}

finish() {
	banner "summary"
	local l
	for l in "${summary[@]}"; do
		echo "  $l"
	done
	echo "make check-debug took $(($(date +%s) - start)) s"
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

# KTAP results of FILE; with CASES=1 only the test cases of KUnit suites
# (indented by exactly four spaces).
count_ktap() { # FILE LABEL CASES
	local file=$1 label=$2 pre='^ *' p f s
	[ "$3" = 1 ] && pre='^    '
	p=$(grep -cE "${pre}ok [0-9]+ " "$file")
	s=$(grep -cE "${pre}ok [0-9]+ .*# *SKIP" "$file")
	f=$(grep -cE "${pre}not ok [0-9]+ " "$file")
	p=$((p - s))
	passed=$((passed + p)); failed=$((failed + f))
	summary+=("$label: $p passed, $f failed, $s skipped")
}

# Kernel report kinds: label and extended regular expression.
checks=(
	"KASAN report|BUG: KASAN:|KASAN: .*(out-of-bounds|use-after-free|double-free|invalid-free|wild-memory-access|null-ptr-deref)"
	"lockdep report|possible circular locking|inconsistent lock state|possible recursive locking|possible irq lock inversion|suspicious RCU usage|Invalid wait context|bad unlock balance|held lock freed|lock held when returning to user space|DEBUG_LOCKS_WARN_ON"
	"sleeping in atomic context|BUG: sleeping function called from invalid context|BUG: scheduling while atomic"
	"debug objects report|ODEBUG:"
	"list corruption|list_(add|del) corruption|list_debug"
	"WARN|WARNING:"
	"BUG/Oops/panic|BUG:|Oops|Kernel panic|PANIC:|general protection fault|double fault|stack guard page|kernel stack overflow|UBSAN"
	"hung task or stall|blocked for more than|rcu: INFO:|soft lockup|hard LOCKUP|NETDEV WATCHDOG"
)

# One result per host and report kind over that host's kernel logs.
check_logs() { # HOST RESDIR
	local h=$1 res=$2 c label re logs=() hits
	for f in "$res/$h/dmesg.txt" "$res/$h/serial.log"; do
		[ -f "$f" ] && logs+=("$f")
	done
	if [ ${#logs[@]} = 0 ]; then
		result 1 "host $h: no kernel log"
		return
	fi
	for c in "${checks[@]}"; do
		label=${c%%|*} re=${c#*|}
		# (the serial console ends its lines with CR LF)
		hits=$(cat "${logs[@]}" | tr -d '\r' | grep -E -- "$re" | sort -u)
		if [ -z "$hits" ]; then
			result 0 "host $h: no $label"
		else
			result 1 "host $h: $label: $(wc -l <<<"$hits") distinct lines, first: $(head -n 1 <<<"$hits")"
			{
				echo "== host $h: $label"
				echo "$hits"
			} >>"$OUT/reports.txt"
		fi
	done
	# kmemleak: the guest's scan after the run (debug-job.sh).
	if [ ! -f "$res/$h/kmemleak.txt" ]; then
		result 1 "host $h: no kmemleak scan (guest died?)"
	elif grep -q '^kmemleak off' "$res/$h/kmemleak.txt"; then
		result 1 "host $h: kmemleak was off"
	elif grep -q '^unreferenced object' "$res/$h/kmemleak.txt"; then
		result 1 "host $h: kmemleak: $(grep -c '^unreferenced object' \
			"$res/$h/kmemleak.txt") suspected leaks (build/check-debug/kmemleak-$h.txt)"
		cp "$res/$h/kmemleak.txt" "$OUT/kmemleak-$h.txt"
	else
		result 0 "host $h: no kmemleak leak"
	fi
}

# visock_kunit.ko: the KUnit suites and the pure code they test, built
# against KDIR the way tools/testing/kunit builds them into a UML kernel.
build_kunit_module() { # KVER KDIR
	local kver=$1 kdir=$2 out=$ROOT/build/$1/kunit f
	mkdir -p "$out/tests" "$out/include/linux"
	cp -u "$T/kunit/visock_kunit/Makefile" "$out/Kbuild"
	cp -u "$ROOT/include/uapi/linux/visock.h" "$out/include/linux/"
	# shellcheck source=kunit/files.sh
	. "$T/kunit/files.sh"
	for f in $pure_srcs $pure_hdrs; do
		cp -u "$ROOT/net/visock/$f" "$out/"
	done
	cp -u "$ROOT"/net/visock/tests/*_test.c "$out/tests/"
	make -C "$kdir" M="$out" CONFIG_VISOCK_KUNIT_TEST=m modules \
		>"$OUT/kunit-build.log" 2>&1 || { cat "$OUT/kunit-build.log"; return 1; }
	cp "$out/visock_kunit.ko" "$ROOT/build/$kver/visock_kunit.ko"
}

banner "debug kernel"
missing=()
for pkg in gcc make flex bison bc libelf-dev libssl-dev pahole python3 sparse; do
	dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "check-debug: installing Debian packages: ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "${missing[@]}" >/dev/null
fi
if [ "$("$T/debug-kernel.sh" status)" != "up to date" ]; then
	echo "check-debug: building the debug kernel (once; cached)"
fi
"$VM" prepare --kernel 6.12-debug
rc=$?
result $rc "debug kernel ($(cat "$("$T/debug-kernel.sh" dir)/build-time" 2>/dev/null || echo 'no build'))"
[ $rc = 0 ] || finish
kver=$("$VM" kver 6.12-debug)
kdir=$("$T/debug-kernel.sh" kdir)

banner "build visock.ko and visock_kunit.ko for $kver"
"$T/build-module.sh" 6.12-debug
result $? "build $kver (W=1, sparse clean)"
build_kunit_module "$kver" "$kdir"
result $? "build visock_kunit.ko"
{ make -s -C "$T/selftests/net/visock" && make -s -C "$ROOT/tools/visock"; } \
	>"$OUT/selftests-build.log" 2>&1
rc=$?
[ $rc = 0 ] || cat "$OUT/selftests-build.log"
result $rc "selftests build"

banner "KUnit and kselftests on two debug guests, kernel $kver"
res="$ROOT/build/vm-results/$kver"
[ "${VISOCK_VM_INSTANCE:-0}" = 0 ] || res=$res-i$VISOCK_VM_INSTANCE
t0=$(date +%s)
VISOCK_RESULTS_DIR=$res VISOCK_VM_APPEND="kmemleak=on ${VISOCK_VM_APPEND:-}" \
	"$VM" run --kernel 6.12-debug --timeout "$TIMEOUT" -- \
	"$T/vm/debug-job.sh" "$@" >"$OUT/vm.log" 2>&1
echo "check-debug: guests ran $(($(date +%s) - t0)) s"
grep -E '^vm.sh: ' "$OUT/vm.log" | tail -n 20
for h in a b; do
	if [ -f "$res/$h/console.log" ]; then
		count_ktap "$res/$h/console.log" "kselftests host $h" 0
	else
		result 1 "kselftests host $h (no output)"
	fi
	if [ -f "$res/$h/rc" ]; then
		result 0 "host $h: job finished"
	else
		result 1 "host $h: job did not finish (guest died or timed out)"
	fi
done
if [ -s "$res/a/kunit.ktap" ]; then
	count_ktap "$res/a/kunit.ktap" "KUnit (host a)" 1
else
	result 1 "KUnit (host a): no results"
fi
for h in a b; do
	check_logs "$h" "$res"
	for f in dmesg.txt serial.log console.log kmemleak.txt; do
		[ -f "$res/$h/$f" ] && cp "$res/$h/$f" "$OUT/$h-$f"
	done
done
[ -f "$OUT/reports.txt" ] && { echo; cat "$OUT/reports.txt"; }
finish
