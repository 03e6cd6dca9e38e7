#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-hosts.sh - "make bench" on two real hosts with RDMA NICs, no VMs:
# runs bench.sh directly on each host.
#
#   B# bench-hosts.sh --host b --peer A_IP --local B_IP --dir SHARED [BENCH_X=V...]
#   A# bench-hosts.sh --host a --peer B_IP --local A_IP --dir SHARED [BENCH_X=V...]
#
# A runs the clients, B the servers; start both at about the same time
# (each waits up to BENCH_SYNC_TIMEOUT, 600 s, for the other).  SHARED
# is one directory both hosts see at the same path (NFS, or sshfs from
# one host to the other): the two halves synchronise through files in
# SHARED/a and SHARED/b, and A's results end up there.  Use the
# addresses of the RoCE interfaces and set BENCH_IBDEV (e.g. mlx5_0) and
# BENCH_NETDEV (its net device, for SMC-R).  Each host needs: root, the
# visock module (loaded, installed, or built in build/<uname -r>/ of this
# tree), perftest, iperf3, sockperf, librdmacm1 (rsocket), and this
# directory built (make -C tools/testing/bench).  Host A writes the
# table, table.csv and bench.png (with gnuplot) to SHARED/a.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
usage() { sed -n '4,21s/^# \{0,1\}//p' "$0" >&2; exit 2; }

host='' peer='' local='' dir='' args=() ibdev=${BENCH_IBDEV:-rxe0}
while [ $# -gt 0 ]; do
	case $1 in
	--host) host=${2:?}; shift 2 ;;
	--peer) peer=${2:?}; shift 2 ;;
	--local) local=${2:?}; shift 2 ;;
	--dir) dir=${2:?}; shift 2 ;;
	BENCH_IBDEV=*) ibdev=${1#*=}; args+=("$1"); shift ;;
	BENCH_[A-Z_]*=*) args+=("$1"); shift ;;
	*) usage ;;
	esac
done
case $host in a) other=b ;; b) other=a ;; *) usage ;; esac
if [ -z "$peer" ] || [ -z "$local" ] || [ ! -d "$dir" ]; then usage; fi
[ "$(id -u)" = 0 ] || { echo "bench-hosts.sh: needs root (modules, SMC-R setup)" >&2; exit 1; }

# A fresh directory of our own; then wait for the peer's fresh one (a
# "hello" newer than half an hour), so that no sync file of an earlier
# run is taken for this one's.
mine=$dir/$host theirs=$dir/$other
rm -rf "$mine"
mkdir -p "$mine"
date -u +%s >"$mine/hello"
echo "bench-hosts.sh: host $host waiting for host $other in $theirs"
for _ in $(seq 6000); do
	[ -z "$(find "$theirs/hello" -newermt '30 minutes ago' 2>/dev/null)" ] || break
	sleep 0.1
done
[ -f "$theirs/hello" ] || { echo "bench-hosts.sh: host $other never came" >&2; exit 1; }

cd "$mine"
VISOCK_HOST=$host VISOCK_PEER_HOST=$other VISOCK_LOCAL_IP=$local VISOCK_PEER_IP=$peer \
VISOCK_RESULTS=$mine VISOCK_PEER_RESULTS=$theirs VISOCK_SRC=$(cd "$HERE/../../.." && pwd) \
	"$HERE/bench.sh" BENCH_IBDEV="$ibdev" "${args[@]}" 2>&1 | tee "$mine/console.log"
[ "$host" = a ] || exit 0
"$HERE/report.sh" "$mine" \
	"visock benchmark, $(date -u '+%Y-%m-%d %H:%M') UTC, kernel $(uname -r), two hosts, $(hostname) -> $peer," \
	"RDMA device $ibdev." \
	"Raw verbs: perftest ib_write_* (busy polling) and ib_send_* -e (events);" \
	"their RTT is 2 x perftest's one-way latency.  CPU: busy time of both" \
	"hosts, all CPUs (/proc/stat)."
cat "$mine/table.txt"
echo "results: $mine"
