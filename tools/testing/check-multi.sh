#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check-multi: one host and several peer hosts at once, on the
# four-host test bed (vm.sh run --hosts 4: hosts a, b, c and d on one
# emulated Ethernet segment, 1 vCPU each).  The guest job
# tools/testing/vm/multi.sh runs three stages: host a serves b, c and d
# at once (one link group per peer host, the per-peer QP cap, every byte
# checked, all of it over RDMA, and the memory host a spends per peer
# host and per connection); host a streams to b, c and d at once; and
# host d dies in the middle of a stream to a while b and c finish theirs
# without a stall, and a frees d's link group.  Not part of "make check"
# (four TCG guests on a 2-core machine; see
# Documentation/networking/visock/testing.rst).
#
# Prints every host's passed and failed tests and the measured costs,
# and last "N passed, N failed"; the exit status is non-zero if a test
# failed, a guest logged a kernel report, or a host gave no result.
# Environment: VISOCK_VM_INSTANCE (test bed number), VISOCK_MULTI_KERNEL
# (default 6.12), VISOCK_MULTI_TIMEOUT (seconds, default 1800),
# VISOCK_MULTI_NOBUILD=1 (use the module in build/<kver>/ as it is).
# Arguments go to multi.sh (gap=MS, bytes=N, peers=N).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T="$ROOT/tools/testing"
VM="$T/vm/vm.sh"
OUT="$ROOT/build/check-multi"
KERNEL=${VISOCK_MULTI_KERNEL:-6.12}
TIMEOUT=${VISOCK_MULTI_TIMEOUT:-1800}

passed=0 failed=0
summary=()
start=$(date +%s)

check_name=check-multi
# shellcheck source=check-lib.sh
. "$T/check-lib.sh"

"$VM" check-path || exit 1
rm -rf "$OUT"
mkdir -p "$OUT"

kver=$("$VM" kver "$KERNEL") || { echo "check-multi: kernel $KERNEL not prepared (vm.sh prepare)" >&2; exit 1; }

if [ "${VISOCK_MULTI_NOBUILD:-0}" != 1 ]; then
	banner "build (W=1, sparse)"
	"$T/build-module.sh" "$KERNEL" >"$OUT/build.log" 2>&1
	rc=$?
	tail -2 "$OUT/build.log"
	result $rc "build $KERNEL"
	{ make -s -C "$T/selftests/net/visock" && make -s -C "$ROOT/tools/visock"; } \
		>"$OUT/selftests-build.log" 2>&1
	result $? "selftests and visockctl (build)"
fi

res="$ROOT/build/vm-results/$kver-4h"
[ "${VISOCK_VM_INSTANCE:-0}" = 0 ] || res=$res-i$VISOCK_VM_INSTANCE
banner "four hosts, $kver"
VISOCK_RESULTS_DIR=$res "$VM" run --hosts 4 --kernel "$KERNEL" \
	--timeout "$TIMEOUT" -- "$T/vm/multi.sh" "$@" >"$OUT/vm.log" 2>&1
rc=$?
tail -5 "$OUT/vm.log"
result $rc "test bed: all four guests finished, kernel logs clean"

for h in a b c d; do
	log=$res/$h/console.log
	if [ ! -s "$log" ]; then
		result 1 "host $h (no output)"
		continue
	fi
	p=$(grep -cE '^ok [0-9]+ ' "$log")
	f=$(grep -cE '^not ok [0-9]+ ' "$log")
	passed=$((passed + p)); failed=$((failed + f))
	summary+=("host $h: $p passed, $f failed")
	grep -E '^not ok [0-9]+ ' "$log" | sed "s/^/  host $h: /"
done
if [ -s "$res/a/costs.txt" ]; then
	banner "costs on host a (the server)"
	cat "$res/a/costs.txt"
fi

banner "summary"
for l in "${summary[@]}"; do
	echo "  $l"
done
echo "make check-multi took $(($(date +%s) - start)) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
