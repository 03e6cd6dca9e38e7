#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run-bench.sh - host side of "make bench": boots the two-host QEMU +
# Soft-RoCE bed (tools/testing/vm/vm.sh), runs bench.sh in both guests and
# prints the side-by-side table of TCP, visock, raw verbs (perftest) and
# SMC-R.
#
#   run-bench.sh [-h]
#
# Environment:
#   KERNEL              test-bed kernel series, 6.12 (default) or 6.1
#   VISOCK_VM_INSTANCE  test bed number (default 8; make check uses 0 and
#                       make demo 9)
#   BENCH_TIMEOUT       seconds before the bed is killed (default 900)
#   BENCH_*             passed on to bench.sh (BENCH_SECS, BENCH_ROUNDS,
#                       BENCH_WARMUP, BENCH_MSG, BENCH_WSIZE, BENCH_ONLY,
#                       BENCH_IB_ITERS, BENCH_IBDEV, BENCH_GID_INDEX,
#                       BENCH_SMC_EID; see bench.sh)
#
# Results: build/bench/<UTC time>-<kernel release>/ holds bench.txt (the
# RESULT lines), table.txt and both guests' logs.  A benchmark, not a
# test: the numbers are never judged; on TCG emulation they are no
# performance claims.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
T=$ROOT/tools/testing
KERNEL=${KERNEL:-6.12}
export VISOCK_VM_INSTANCE=${VISOCK_VM_INSTANCE:-8}

case ${1:-} in
-h|--help) sed -n '4,24s/^# \{0,1\}//p' "$0"; exit 0 ;;
'') ;;
*) sed -n '4,24s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac

"$T/vm/vm.sh" prepare --kernel "$KERNEL"
kver=$("$T/vm/vm.sh" kver "$KERNEL")
# make bench builds the module with modules-testbed; standalone runs
# build it here if it is missing.
[ -f "$ROOT/build/$kver/visock.ko" ] || "$T/build-module.sh" "$KERNEL"
make -s -C "$T/bench"

args=()
while IFS='=' read -r name _; do
	case $name in
	BENCH_TIMEOUT) ;;
	BENCH_*) args+=("$name=${!name}") ;;
	esac
done <<<"$(env)"

stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=$ROOT/build/bench/$stamp-$kver
vmres=$ROOT/build/bench/vm-$kver-i$VISOCK_VM_INSTANCE
mkdir -p "$out" "$vmres"

rc=0
VISOCK_RESULTS_DIR=$vmres "$T/vm/vm.sh" run --kernel "$KERNEL" \
	--timeout "${BENCH_TIMEOUT:-900}" -- "$T/bench/bench.sh" "${args[@]}" || rc=$?

cp -a "$vmres/." "$out/"
if [ ! -s "$out/a/bench.txt" ]; then
	echo "run-bench.sh: no results (vm.sh exit status $rc); logs in $out" >&2
	exit 1
fi
cp "$out/a/bench.txt" "$out/bench.txt"
{
	echo "visock benchmark, $(date -u +%Y-%m-%d) UTC, kernel $kver,"
	echo "two QEMU TCG guests (1 vCPU each) on $(nproc) host cores, Soft-RoCE (rxe)."
	echo "Stream: $(sed -n 's/.*write_size=\([0-9]*\).*/\1/p;q' "$out/bench.txt") B writes;" \
		"RTT: $(sed -n 's/.*msg_size=\([0-9]*\).*/\1/p;q' "$out/bench.txt") B ping-pong" \
		"(raw verbs: 2 x perftest's one-way latency)."
	echo "Emulated hosts: not a performance claim."
	echo
	"$T/bench/bench.sh" --table "$out/bench.txt"
} >"$out/table.txt"
echo
cat "$out/table.txt"
echo
echo "results: $out"
if [ "$rc" != 0 ]; then
	echo "run-bench.sh: the test bed reported a problem (vm.sh exit status $rc), see the logs" >&2
	exit "$rc"
fi
