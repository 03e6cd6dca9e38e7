#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check-fleet: the cross-host kselftest groups between hosts that run
# different kernels, as a fleet upgraded one host at a time does.  Each
# pair boots host a (the client) with one kernel and host b (the server)
# with the other (vm.sh --kernel-b), in both orders, so that each kernel
# is once the client and once the server:
#
#   6.1+7.3, 7.3+6.1, 6.12+7.3, 7.3+6.12   (VISOCK_FLEET_PAIRS)
#
# Groups: xhost stream_xh hs dp lgr ctl security stream_hs, plus
# module.load and kernel_log_clean (VISOCK_FLEET_GROUPS; arguments, if
# any, are passed to run_tests.sh instead of the group picks, e.g.
# --pick 'dp.*').  Not part of "make check" (CI time, see
# Documentation/networking/visock/testing.rst).
#
# Prints per pair and group the passed, failed and skipped tests of both
# hosts, and last "N passed, N failed"; the exit status is non-zero if a
# test failed, a guest logged a kernel report, or a pair gave no results.
# Environment: VISOCK_VM_INSTANCE (test bed number), VISOCK_FLEET_TIMEOUT
# (seconds per pair, default 3600), VISOCK_FLEET_NODEPS=1 (do not run
# deps.sh), VISOCK_FLEET_NOBUILD=1 (use the modules in build/<kver>/ as
# they are).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T="$ROOT/tools/testing"
VM="$T/vm/vm.sh"
OUT="$ROOT/build/check-fleet"
PAIRS=${VISOCK_FLEET_PAIRS:-6.1+7.3 7.3+6.1 6.12+7.3 7.3+6.12}
GROUPS_WANTED=${VISOCK_FLEET_GROUPS:-xhost stream_xh hs dp lgr ctl security stream_hs}
TIMEOUT=${VISOCK_FLEET_TIMEOUT:-3600}

passed=0 failed=0 skipped=0
summary=()
start=$(date +%s)

check_name=check-fleet
# shellcheck source=check-lib.sh
. "$T/check-lib.sh"

picks=(--pick module.load --pick kernel_log_clean)
if [ $# -gt 0 ]; then
	picks+=("$@")
else
	for g in $GROUPS_WANTED; do
		picks+=(--pick "$g.*")
	done
fi

"$VM" check-path || exit 1
rm -rf "$OUT"
mkdir -p "$OUT"

series=()
for p in $PAIRS; do
	[[ $p == ?*+?* ]] || { echo "check-fleet: bad pair '$p' (want A+B)" >&2; exit 2; }
	for k in "${p%%+*}" "${p#*+}"; do
		[[ " ${series[*]} " == *" $k "* ]] || series+=("$k")
	done
done

if [ "${VISOCK_FLEET_NODEPS:-0}" != 1 ]; then
	banner "dependencies"
	"$T/deps.sh" fleet || result 1 "dependencies (tools/testing/deps.sh fleet)"
fi

if [ "${VISOCK_FLEET_NOBUILD:-0}" != 1 ]; then
	banner "build (W=1, sparse)"
	for k in "${series[@]}"; do
		"$T/build-module.sh" "$k" >"$OUT/build-$k.log" 2>&1
		rc=$?
		tail -2 "$OUT/build-$k.log"
		result $rc "build $k"
	done
	{ make -s -C "$T/selftests/net/visock" && make -s -C "$ROOT/tools/visock"; } \
		>"$OUT/selftests-build.log" 2>&1
	result $? "selftests and visockctl (build)"
fi

# One summary line per group of a pair: both hosts' KTAP result lines.
count_pair() { # LABEL RESULTS_DIR
	local label=$1 res=$2 h line g p f s
	for h in a b; do
		[ -s "$res/$h/console.log" ] ||
			result 1 "$label host $h (no output)"
	done
	[ -d "$res" ] || return 0
	# "<group> <passed> <failed> <skipped>" per group, in order.
	cat "$res"/[ab]/console.log 2>/dev/null | awk '
		{ sub(/\r$/, "") }
		/^(not )?ok [0-9]+ [a-z0-9_]+\.[a-z0-9_.-]+/ {
			name = ($1 == "not") ? $4 : $3
			g = name; sub(/\..*/, "", g)
			if (!(g in seen)) { seen[g] = 1; order[++n] = g }
			if ($1 == "not") f[g]++
			else if ($0 ~ /# *SKIP/) s[g]++
			else p[g]++
		}
		/^(not )?ok [0-9]+ kernel_log_clean/ {
			g = "kernel_log_clean"
			if (!(g in seen)) { seen[g] = 1; order[++n] = g }
			if ($1 == "not") f[g]++; else p[g]++
		}
		END { for (i = 1; i <= n; i++) print order[i], p[order[i]] + 0, f[order[i]] + 0, s[order[i]] + 0 }
	' >"$res/groups.txt"
	while read -r g p f s; do
		line=$(printf '%-34s %-17s %4d passed, %d failed, %d skipped' \
			"$label" "$g" "$p" "$f" "$s")
		summary+=("$line")
		passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
	done <"$res/groups.txt"
}

for pair in $PAIRS; do
	ka=${pair%%+*} kb=${pair#*+}
	if ! kva=$("$VM" kver "$ka") || ! kvb=$("$VM" kver "$kb"); then
		result 1 "pair $pair (kernel not prepared)"
		continue
	fi
	res="$ROOT/build/vm-results/$kva+$kvb"
	[ "${VISOCK_VM_INSTANCE:-0}" = 0 ] || res=$res-i$VISOCK_VM_INSTANCE
	banner "a (client) $kva, b (server) $kvb"
	# xhost.srcversion compares the srcversion of the two hosts'
	# visock.ko, and kbuilds hash different files into it: 6.1 and
	# 6.12 the .c files and the headers next to them, 7.3 (which
	# builds from the module's directory, so modpost's "same
	# directory" match between ./net/visock/x.o and net/visock/x.h
	# fails) the .c files only.  Where the two builds differ in it,
	# the test cannot tell a stale module from another kbuild.
	skip=()
	sa=$(modinfo -F srcversion "$ROOT/build/$kva/visock.ko" 2>/dev/null)
	sb=$(modinfo -F srcversion "$ROOT/build/$kvb/visock.ko" 2>/dev/null)
	if [ -n "$sa" ] && [ -n "$sb" ] && [ "$sa" != "$sb" ]; then
		skip=(--skip xhost.srcversion)
		summary+=("$ka(a)+$kb(b): xhost.srcversion not run (srcversion $sa for $kva, $sb for $kvb from the same sources)")
	fi
	VISOCK_RESULTS_DIR=$res "$VM" run --kernel "$ka" --kernel-b "$kb" \
		--timeout "$TIMEOUT" -- "$T/selftests/net/visock/run_tests.sh" \
		"${picks[@]}" "${skip[@]}" >"$OUT/vm-$pair.log" 2>&1
	rc=$?
	tail -15 "$OUT/vm-$pair.log"
	count_pair "$ka(a)+$kb(b)" "$res"
	# Kernel log splats, missing results, timeouts.
	result $rc "test bed $ka(a)+$kb(b): both guests finished, kernel logs clean"
	# The failed tests, with the first lines of their diagnostics.
	for h in a b; do
		grep -E '^not ok [0-9]+ ' "$res/$h/console.log" 2>/dev/null |
			sed "s/^/  $pair host $h: /" | head -20
	done
done

banner "summary"
for l in "${summary[@]}"; do
	echo "  $l"
done
echo "make check-fleet took $(($(date +%s) - start)) s"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
