#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check: everything that proves visock works, in one command.
#
#   1. build visock.ko for Debian 12's 6.1, bookworm-backports' 6.12 and
#      trixie-backports' 7.3 (in a chroot, tools/testing/kernel-chroot.sh)
#      with W=1 and sparse (any warning fails)
#   2. checkpatch.pl over every C file (errors fail)
#      and the documentation checks (kernel-doc -Wall, docutils; any
#      warning fails)
#   3. dkms add + build for 6.1 and 6.12 (private DKMS tree)
#   4. KUnit suites in a UML kernel (linux-source-6.12)
#   5. make demo and a short make bench from a copy of the tree in /tmp
#   6. the kselftests, the peer kill test and the link capture on two
#      QEMU guests with Soft-RoCE, per kernel
#
# Installs what it needs first (tools/testing/deps.sh).  Each stage
# writes KTAP-style results; the last line is "N passed, N failed, N
# skipped" and the exit status is non-zero if anything failed.
#
# Environment:
#   VISOCK_CHECK_KERNELS   kernels to boot (default "6.1 6.12")
#   VISOCK_CHECK_SKIP      stages to leave out, e.g. "kunit dkms demo
#                          capture" (the closing line then says what was
#                          left out)
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T="$ROOT/tools/testing"
OUT="$ROOT/build/check"
KERNELS=${VISOCK_CHECK_KERNELS:-6.1 6.12}
SKIP=" ${VISOCK_CHECK_SKIP:-} "

# A checkout the test bed cannot use is refused before any work.
"$T/vm/vm.sh" check-path || exit 1

passed=0 failed=0 skipped=0
summary=()
consoles=()	# KTAP logs of the guests, for the failed tests' digest

rm -rf "$OUT"
mkdir -p "$OUT"
start=$(date +%s)

stage_wanted() { [[ $SKIP != *" $1 "* ]]; }

# Count KTAP result lines of FILE; add them to the totals.  A guest that
# stopped early (fewer top-level results than its plans announced, or
# none at all) counts the missing ones as failed.
count_ktap() {
	local file=$1 label=$2 p f s plan top missing=0 note=
	consoles+=("$file|$label")
	p=$(grep -cE '^ *ok [0-9]+ ' "$file" | head -1)
	s=$(grep -cE '^ *ok [0-9]+ .*# *SKIP' "$file" | head -1)
	f=$(grep -cE '^ *not ok [0-9]+ ' "$file" | head -1)
	p=$((p - s))
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$file" |
		awk '{ n += $1 } END { print n + 0 }')
	top=$(grep -cE '^(not )?ok [0-9]+ ' "$file" | head -1)
	if [ "$top" -lt "$plan" ]; then
		missing=$((plan - top))
	elif [ $((p + f + s)) = 0 ]; then
		missing=1
	fi
	[ "$missing" = 0 ] || note=" (of which $missing results missing)"
	f=$((f + missing))
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
	summary+=("$label: $p passed, $f failed$note, $s skipped")
}

check_name=check
# shellcheck source=check-lib.sh
. "$T/check-lib.sh"

banner "dependencies"
# Everything demo, check and bench need (tools/testing/deps.sh): Debian
# packages, QEMU, the test-bed kernels 6.1 and 6.12, Debian's 7.3 kernel
# with its build chroot (headers, compiler and sparse; a few minutes the
# first time, then nothing), the initramfs, the kernel source.
"$T/deps.sh" check || result 1 "dependencies (tools/testing/deps.sh check)"

banner "build (W=1, sparse)"
for k in 6.1 6.12 7.3; do
	case $k in
	7.*)	kver=$("$T/kernel-chroot.sh" kver "$k") || kver=$k ;;
	*)	kver=$("$T/vm/vm.sh" kver "$k") ;;
	esac
	"$T/build-module.sh" "$k"
	result $? "build $kver (W=1, sparse clean)"
done

if stage_wanted checkpatch; then
	banner "checkpatch"
	"$T/checkpatch.sh" | tee "$OUT/checkpatch.log" | tail -5
	result "${PIPESTATUS[0]}" "checkpatch (no errors)"
fi

if stage_wanted docs; then
	banner "documentation (kernel-doc, docutils)"
	"$T/docs-check.sh" >"$OUT/docs.log" 2>&1
	rc=$?
	tail -5 "$OUT/docs.log"
	[ "$rc" = 0 ] || grep -E 'warning|WARNING|ERROR|not found' "$OUT/docs.log" | head -20
	result "$rc" "documentation (kernel-doc -Wall, docutils: no warnings)"
fi

if stage_wanted ynl; then
	banner "netlink spec (YNL)"
	"$T/ynl-check.sh" >"$OUT/ynl.log" 2>&1
	rc=$?
	tail -20 "$OUT/ynl.log"
	result "$rc" "netlink spec (schema, generated uAPI header matches)"
fi

if stage_wanted dkms; then
	banner "dkms"
	"$T/dkms-check.sh" | tee "$OUT/dkms.ktap"
	count_ktap "$OUT/dkms.ktap" "dkms build"
fi

if stage_wanted kunit; then
	banner "KUnit (UML)"
	"$T/kunit/run_kunit.sh" 2>&1 | tee "$OUT/kunit.log" | tail -25
	rc=${PIPESTATUS[0]}
	line=$(grep -E '^kunit: [0-9]+ passed, [0-9]+ failed' "$OUT/kunit.log" | tail -1)
	if [ -n "$line" ]; then
		p=$(sed -E 's/^kunit: ([0-9]+) passed.*/\1/' <<<"$line")
		f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
		[ "$rc" != 0 ] && [ "$f" = 0 ] && f=1
		passed=$((passed + p)); failed=$((failed + f))
		summary+=("KUnit: $p passed, $f failed")
	else
		result 1 "KUnit (no result line)"
	fi
fi

banner "selftests (build)"
# The ctl tests run tools/visock/visockctl; the guests cannot build it.
{ make -s -C "$T/selftests/net/visock" && make -s -C "$ROOT/tools/visock"; } \
	>"$OUT/selftests-build.log" 2>&1
rc=$?
[ $rc = 0 ] || cat "$OUT/selftests-build.log"
result $rc "selftests build"

# make demo and a short make bench, as a newcomer runs them, from a copy
# of this tree in /tmp (the guests have a /tmp of their own, so this
# proves the bed does not depend on where the checkout is).
if stage_wanted demo; then
	banner "make demo and a short make bench, from a checkout in /tmp"
	copy=$(mktemp -d /tmp/visock-check.XXXXXX)
	tar -C "$ROOT" --exclude=./build --exclude=./.git -cf - . | tar -C "$copy" -xf -
	VISOCK_VM_INSTANCE=${VISOCK_VM_INSTANCE:-0} "$copy/tools/testing/demo.sh" \
		>"$OUT/demo.log" 2>&1
	rc=$?
	[ $rc = 0 ] || tail -40 "$OUT/demo.log"
	sed -n '/^=== make demo: summary/,$p' "$OUT/demo.log"
	result $rc "make demo from $copy"
	# The smallest bench that runs visock and TCP side by side.
	VISOCK_VM_INSTANCE=${VISOCK_VM_INSTANCE:-0} KERNEL=6.12 \
		BENCH_ONLY="tcp visock stream rtt" BENCH_SECS=1 BENCH_WSIZES=65536 \
		BENCH_MSGS=64 BENCH_ROUNDS=200 BENCH_WARMUP=20 \
		"$copy/tools/testing/bench/run-bench.sh" >"$OUT/bench.log" 2>&1
	rc=$?
	tail -25 "$OUT/bench.log"
	# Both transports measured (a part that could not run is a NOTE).
	res=$(sed -n 's/^results: \([^ ]*\) .*/\1/p' "$OUT/bench.log")
	for l in tcp visock; do
		[ -n "$res" ] && grep -Eq "^RESULT label=$l .*test=stream " "$res/bench.txt" || rc=1
	done
	result $rc "make bench (short) from $copy"
	# The guests' logs and results outlive the copy.
	cp -a "$copy/build/demo" "$OUT/demo" 2>/dev/null
	cp -a "$copy/build/bench" "$OUT/bench" 2>/dev/null
	rm -rf "$copy"
fi

for k in $KERNELS; do
	stage_wanted "vm-$k" || continue
	kver=$("$T/vm/vm.sh" kver "$k")
	banner "kselftests on two guests, kernel $kver"
	res="$ROOT/build/vm-results/$kver"
	VISOCK_RESULTS_DIR=$res "$T/vm/vm.sh" run --kernel "$k" --timeout 2400 -- \
		"$T/selftests/net/visock/run_tests.sh" >"$OUT/vm-$k.log" 2>&1
	rc=$?
	tail -40 "$OUT/vm-$k.log"
	for h in a b; do
		if [ -f "$res/$h/console.log" ]; then
			count_ktap "$res/$h/console.log" "kselftests $kver host $h"
		else
			result 1 "kselftests $kver host $h (no output)"
		fi
	done
	# Kernel log splats, missing results, timeouts.
	result $rc "test bed $kver (both guests finished, kernel logs clean)"

	# Host b dies under RDMA streams (tools/testing/vm/peer-kill.sh).
	banner "peer death on two guests, kernel $kver"
	res="$ROOT/build/vm-results/$kver-peer-kill"
	VISOCK_RESULTS_DIR=$res "$T/vm/vm.sh" run --kernel "$k" --timeout 600 -- \
		"$T/vm/peer-kill.sh" >"$OUT/peer-kill-$k.log" 2>&1
	rc=$?
	tail -20 "$OUT/peer-kill-$k.log"
	if [ -f "$res/a/console.log" ]; then
		count_ktap "$res/a/console.log" "peer kill $kver"
	else
		result 1 "peer kill $kver (no output)"
	fi
	result $rc "peer kill bed $kver (job finished, kernel logs clean)"
done

# The link captured while a marker text streams over RDMA without a
# transform and with two AEADs (tools/testing/check-capture.sh): the
# guests' KTAP and the capture checker's, one result each.
for k in $KERNELS; do
	stage_wanted capture || break
	kver=$("$T/vm/vm.sh" kver "$k")
	banner "link capture on two guests, kernel $kver"
	res="$ROOT/build/vm-results/$kver-capture"
	VISOCK_RESULTS_DIR=$res "$T/check-capture.sh" "$k" \
		>"$OUT/capture-$k.log" 2>&1
	rc=$?
	grep -v '^\[[ab]\] #' "$OUT/capture-$k.log" | tail -20
	for h in a b; do
		if [ -f "$res/$h/console.log" ]; then
			count_ktap "$res/$h/console.log" "capture kselftests $kver host $h"
		else
			result 1 "capture kselftests $kver host $h (no output)"
		fi
	done
	if [ -s "$res/capture.ktap" ]; then
		count_ktap "$res/capture.ktap" "link capture $kver"
	else
		result 1 "link capture $kver (no checker output)"
	fi
	result $rc "link capture bed $kver (bed and checker passed)"
done

# A short digest of the first kernel splat of each guest log, printed
# last so that a CI log's tail shows what went wrong and where.
splat_digest() { # FILE LABEL
	awk -v label="$2" '
		/Oops|WARNING:|BUG:|Kernel panic|KASAN|UBSAN|possible circular locking|PANIC:/ {
			if (!seen) { print "  " label ": " $0; seen = 1; n = 0 }
		}
		seen && /RIP:|Workqueue:|Comm:/ && shown < 3 { print "    " $0; shown++ }
		seen && /Call Trace:/ && !trace { trace = 1; next }
		trace && n < 7 && / [a-z_][a-z0-9_.]*\+0x/ && !/ \? / {
			sub(/^.*\] +/, ""); print "      " $0; n++
		}
	' "$1" | head -n 12
}
banner "summary"
for l in "${summary[@]}"; do
	echo "  $l"
done

# The failed tests by name, each with its first FAIL line, also for the
# CI log's tail.
failed_digest() { # FILE LABEL
	awk -v label="$2" '
		/: FAIL: / && !fail { fail = substr($0, 1, 200) }
		/^ *not ok [0-9]+ / {
			print "  " label ": " $0
			if (fail) print "    " fail
			fail = ""
			next
		}
		/^ *ok [0-9]+ / { fail = "" }
	' "$1" | head -n 16
}
shown=0
for c in "${consoles[@]}"; do
	d=$(failed_digest "${c%%|*}" "${c#*|}")
	[ -n "$d" ] || continue
	[ $shown = 1 ] || echo "=== failed tests"
	shown=1
	echo "$d"
done
digest=0
for k in $KERNELS; do
	stage_wanted "vm-$k" || continue
	kver=$("$T/vm/vm.sh" kver "$k")
	for h in a b; do
		f="$ROOT/build/vm-results/$kver/$h/serial.log"
		[ -s "$f" ] || f="$ROOT/build/vm-results/$kver/$h/dmesg.txt"
		[ -s "$f" ] || continue
		d=$(splat_digest "$f" "$kver host $h")
		[ -n "$d" ] || continue
		if [ $digest = 1 ]; then
			# The first one in full; the others' first lines.
			echo "$d" | head -n 1
		else
			echo "=== first kernel splat (guest log, for the CI log's tail)"
			echo "$d"
			digest=1
		fi
		last=$(grep -E '^(not )?ok [0-9]+ ' "$ROOT/build/vm-results/$kver/$h/console.log" 2>/dev/null | tail -n 1)
		echo "    last test result before it: ${last:-none}"
	done
done

note=""
[ -n "${VISOCK_CHECK_SKIP:-}" ] && note=" (stages left out: ${VISOCK_CHECK_SKIP})"
echo "make check took $(($(date +%s) - start)) s$note"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
