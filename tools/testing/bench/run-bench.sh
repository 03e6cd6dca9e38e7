#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run-bench.sh - host side of "make bench": boots the two-host QEMU +
# Soft-RoCE bed (tools/testing/vm/vm.sh), runs bench.sh in both guests and
# prints the side-by-side table of TCP, visock, SMC-R, rsocket, raw verbs
# (perftest), kernel TLS and visock's transforms, with the ratios visock/X
# and visock-gcm/ktls, as text, CSV and a PNG chart.
#
#   run-bench.sh [-h]
#
# Environment:
#   KERNEL              test-bed kernel series, 6.12 (default) or 6.1
#   VISOCK_VM_INSTANCE  test bed number (default 8; make check uses 0 and
#                       make demo 9)
#   BENCH_TIMEOUT       seconds before the bed is killed (default 3600)
#   BENCH_*             passed on to bench.sh (BENCH_ONLY, BENCH_SECS,
#                       BENCH_WSIZES, BENCH_MSGS, BENCH_ROUNDS, BENCH_PAR,
#                       ...; see bench.sh -h)
#
# Results: build/bench/<UTC time>-<kernel release>/ holds bench.txt (the
# RESULT lines), table.txt, table.csv, bench.png (gnuplot; installed from
# Debian if missing) and both guests' logs.  A benchmark, not a test: the
# numbers are never judged; on TCG emulation they are no performance
# claims.  On two real hosts, run bench.sh directly (see
# Documentation/networking/visock/bench.rst).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../../.." && pwd -P)
T=$ROOT/tools/testing
KERNEL=${KERNEL:-6.12}
export VISOCK_VM_INSTANCE=${VISOCK_VM_INSTANCE:-8}

case ${1:-} in
-h|--help) sed -n '4,27s/^# \{0,1\}//p' "$0"; exit 0 ;;
'') ;;
*) sed -n '4,27s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac

# Packages (gnuplot for the chart), the test-bed kernel, QEMU.
"$T/deps.sh" bench --kernel "$KERNEL"
kver=$("$T/vm/vm.sh" kver "$KERNEL")
# The module for the bench kernel (W=1, sparse), visock_run and the
# benchmark programs: all incremental.
"$T/build-module.sh" "$KERNEL"
make -s -C "$ROOT/tools/visock"
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
	--timeout "${BENCH_TIMEOUT:-3600}" -- "$T/bench/bench.sh" "${args[@]}" || rc=$?

cp -a "$vmres/." "$out/"
if [ ! -s "$out/a/bench.txt" ]; then
	echo "run-bench.sh: no results (vm.sh exit status $rc); logs in $out" >&2
	exit 1
fi
cp "$out/a/bench.txt" "$out/bench.txt"
"$T/bench/report.sh" "$out" \
	"visock benchmark, $(date -u '+%Y-%m-%d %H:%M') UTC, kernel $kver, two QEMU TCG guests, Soft-RoCE," \
	"1 vCPU each on $(nproc) host cores (load average $(cut -d' ' -f1-3 /proc/loadavg))." \
	"Raw verbs: perftest ib_write_* (busy polling) and ib_send_* -e (events);" \
	"their RTT is 2 x perftest's one-way latency.  CPU: busy time of both" \
	"guests (/proc/stat).  Emulated hosts: not a performance claim."
echo
cat "$out/table.txt"
echo
echo "results: $out (table.txt, table.csv$([ ! -f "$out/bench.png" ] || echo ", bench.png"))"
if [ "$rc" != 0 ]; then
	echo "run-bench.sh: the test bed reported a problem (vm.sh exit status $rc), see the logs" >&2
	exit "$rc"
fi
