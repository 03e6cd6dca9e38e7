#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: two emulated RDMA hosts (QEMU + Soft-RoCE, kernel 6.12 from
# bookworm-backports) where an unmodified iperf3 client and server, started
# through visock_run, talk over visock.  The output shows the handshake,
# the queue pairs, the visock counters and the RDMA packet counters, and
# ends with a summary: what iperf3 moved, how much of it over RDMA and
# over TCP, the queue pairs, and the fallback reasons if any.
#
# Exits non-zero if the test bed reported a problem or no payload crossed
# RDMA (make check runs the demo as one of its stages).
#
#   demo.sh                  the demo
#   demo.sh --summary [DIR]  the summary of the last run (build/demo)
#
# Environment: KERNEL (6.12 or 6.1), VISOCK_VM_INSTANCE (default 9).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd -P)
T="$ROOT/tools/testing"
KERNEL=${KERNEL:-6.12}
RES=$ROOT/build/demo

# summary DIR: a few lines from both hosts' counters (DIR/{a,b}/visock.txt).
summary() {
	local h
	for h in a b; do
		if [ ! -s "$1/$h/visock.txt" ]; then
			echo "  no counters from host $h: the demo did not finish (see $1/$h)"
			return 1
		fi
	done
	awk '
	function hb(x) {
		if (x >= 1073741824) return sprintf("%.1f GiB", x / 1073741824)
		if (x >= 1048576) return sprintf("%.1f MiB", x / 1048576)
		if (x >= 1024) return sprintf("%.1f KiB", x / 1024)
		return sprintf("%d B", x)
	}
	function pct(x, t) { return t > 0 ? sprintf("%.1f%%", 100 * x / t) : "-" }
	FNR == 1 { h = FILENAME ~ /\/a\/visock\.txt$/ ? "a" : "b" }
	{ v[h, $1] = $2 + 0 }
	/^fallback_/ && $2 + 0 > 0 {
		fb = fb sprintf("%s%s on host %s (%d)", fb == "" ? "" : ", ",
				substr($1, 10), h, $2)
		nfb[h] += $2
	}
	END {
		rdma = v["a", "rdma_bytes_sent"] + v["a", "rdma_bytes_rcvd"]
		tcp = v["a", "tcp_bytes_sent"] + v["a", "tcp_bytes_rcvd"]
		ab = v["a", "rdma_bytes_sent"] + v["a", "tcp_bytes_sent"]
		ba = v["a", "rdma_bytes_rcvd"] + v["a", "tcp_bytes_rcvd"]
		printf "  iperf3 moved     %s (host a to b: %s, b to a: %s)\n", hb(ab + ba), hb(ab), hb(ba)
		printf "  over RDMA        %s (%s)\n", hb(rdma), pct(rdma, rdma + tcp)
		printf "  over TCP         %s (%s)\n", hb(tcp), pct(tcp, rdma + tcp)
		printf "  connections      %d over RDMA, %d stayed on TCP (host a)\n",
			v["a", "connections_rdma"], nfb["a"]
		printf "  queue pairs      %d on host a, %d on host b (shared by the connections)\n",
			v["a", "lgr_qps_created"], v["b", "lgr_qps_created"]
		printf "  RoCE packets     %d sent by host a, %d by host b\n",
			v["a", "roce_pkts_sent"], v["b", "roce_pkts_sent"]
		printf "  fallback         %s\n", fb == "" ? "none" : fb
		if (v["a", "rdma_failovers"] + v["b", "rdma_failovers"] > 0)
			printf "  failovers        %d on host a, %d on host b (RDMA link lost, went on over TCP)\n",
				v["a", "rdma_failovers"], v["b", "rdma_failovers"]
		if (rdma == 0) {
			print "  no payload crossed RDMA"
			exit 1
		}
	}' "$1/a/visock.txt" "$1/b/visock.txt"
}

if [ "${1:-}" = --summary ]; then
	# The summary of an earlier run (or of DIR).
	summary "${2:-$RES}"
	exit
fi

"$T/deps.sh" demo --kernel "$KERNEL"
"$T/build-module.sh" "$KERNEL"
make -s -C "$ROOT/tools/visock"
kver=$("$T/vm/vm.sh" kver "$KERNEL")
rc=0
VISOCK_VM_INSTANCE=${VISOCK_VM_INSTANCE:-9} VISOCK_RESULTS_DIR=$RES \
	"$T/vm/vm.sh" run --kernel "$KERNEL" --timeout 600 -- "$T/demo-guest.sh" || rc=$?
echo
echo "=== make demo: summary (kernel $kver, results in $RES)"
summary "$RES" || rc=1
if [ "$rc" = 0 ]; then
	echo "make demo: PASS"
else
	echo "make demo: FAILED"
fi
exit "$rc"
