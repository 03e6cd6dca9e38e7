#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench.sh - guest half of "make bench": stream throughput and 64 B
# ping-pong round-trip time for TCP, visock, raw verbs (perftest's
# ib_write_bw / ib_write_lat, and ib_send_bw / ib_send_lat with completion
# events) and in-kernel SMC-R, side by side.
#
#   bench.sh [BENCH_X=V...]  run in both guests of the two-host bed
#                            (VISOCK_HOST=a: clients, b: servers)
#   bench.sh --table FILE    print the side-by-side table of a result file
#
# A benchmark, not a test: it never asserts on numbers.  It exits non-zero
# only if it could not run at all.  A transport that cannot be measured
# gets a "NOTE <name>: not measured: <why>" line instead of numbers.
#
# Environment (defaults in brackets):
#   BENCH_SECS        stream seconds per transport [8]
#   BENCH_WSIZE       stream write size, bytes [65536]
#   BENCH_ROUNDS      timed ping-pong round trips [2000]
#   BENCH_WARMUP      warm-up round trips [200]
#   BENCH_MSG         ping-pong message size, bytes [64]
#   BENCH_IB_ITERS    ib_send_bw -e messages (no duration mode) [1000]
#   BENCH_RBUF        visock receive ring, net.visock.rbuf_default [1048576]
#   BENCH_ONLY        space-separated subset of
#                     "tcp visock verbs verbs-ev smc" [all]
#   BENCH_IBDEV       RDMA device [rxe0]
#   BENCH_GID_INDEX   perftest -x GID index [perftest's choice]
#   BENCH_SMC_EID     SMC-Rv2 user-defined EID [VISOCK-BENCH]
#   BENCH_SYNC_TIMEOUT  seconds to wait for the other host at each step [600]
#
# Client results go to $VISOCK_RESULTS/bench.txt on host a.
set -euo pipefail

DIR=$(cd "$(dirname "$0")" && pwd)
BENCH=$DIR/visock_bench
SMC_SETUP=$DIR/smc_setup

# ---------------------------------------------------------------------------
# Table (also used by the host wrapper)
# ---------------------------------------------------------------------------

# table FILE: one row per transport from the RESULT and NOTE lines.
table() {
	awk '
	function kv(line, key,    n, i, f, a) {
		n = split(line, f, " ")
		for (i = 1; i <= n; i++)
			if (index(f[i], key "=") == 1)
				return substr(f[i], length(key) + 2)
		return ""
	}
	function add(l) { if (!(l in seen)) { seen[l] = 1; order[++nl] = l } }
	/^RESULT / {
		l = kv($0, "label"); add(l)
		t = kv($0, "test")
		if (t == "stream") {
			mbs[l] = kv($0, "MBps"); gbs[l] = kv($0, "Gbps")
		} else if (t == "pingpong") {
			med[l] = kv($0, "rtt_median_us"); p99[l] = kv($0, "rtt_p99_us")
			mean[l] = kv($0, "rtt_mean_us")
		}
		p = kv($0, "rxe_sent_pkts")
		if (p != "")
			pk[l] += p + kv($0, "rxe_rcvd_pkts")
		m = kv($0, "mode")
		tl = kv($0, "tool")
		f = kv($0, "family")
		if (tl == "" && f == "inet") tl = "AF_INET"
		if (tl == "" && f == "visock") tl = "AF_VISOCK"
		if (tl == "" && f == "smc") tl = "AF_SMC (SMC-Rv2)"
		if (tl != "" && index(" + " tools[l] " + ", " + " tl " + ") == 0)
			tools[l] = tools[l] (tools[l] == "" ? "" : " + ") tl
		if (m != "" && index("/" mode[l] "/", "/" m "/") == 0)
			mode[l] = mode[l] (mode[l] == "" ? "" : "/") m
		r = kv($0, "ns_rdma_sent") + kv($0, "ns_rdma_rcvd")
		c = kv($0, "ns_tcp_sent") + kv($0, "ns_tcp_rcvd")
		if (kv($0, "ns_rdma_sent") != "") { rb[l] += r; tb[l] += c }
		n = kv($0, "note")
		gsub(/_/, " ", n)
		if (n != "")
			note[l] = n
		next
	}
	/^NOTE / {
		l = $2; sub(/:$/, "", l); add(l)
		s = $0; sub(/^NOTE [^ ]* /, "", s); skip[l] = s
	}
	function v(x) { return x == "" ? "-" : x }
	END {
		printf "%-8s %11s %9s %12s %9s %9s %10s  %s\n", "", "stream", "", \
			"64 B RTT", "", "", "RoCE pkts", ""
		printf "%-8s %11s %9s %12s %9s %9s %10s  %s\n", "transport", "MB/s", \
			"Gbit/s", "median us", "p99 us", "mean us", "(a, rx+tx)", "notes"
		for (i = 1; i <= nl; i++) {
			l = order[i]
			if (l in skip && !(l in mbs) && !(l in med)) {
				printf "%-8s %s\n", l, skip[l]
				continue
			}
			nt = ""
			if (l in tools)
				nt = tools[l]
			if (l in mode)
				nt = nt (nt == "" ? "" : ", ") "mode " mode[l]
			if (l in rb)
				nt = nt sprintf(", payload over RDMA %d B, over TCP %d B", rb[l], tb[l])
			if (l in note)
				nt = nt (nt == "" ? "" : ", ") note[l]
			if (l in skip)
				nt = nt (nt == "" ? "" : ", ") skip[l]
			printf "%-8s %11s %9s %12s %9s %9s %10s  %s\n", l, v(mbs[l]), \
				v(gbs[l]), v(med[l]), v(p99[l]), v(mean[l]), \
				(l in pk) ? pk[l] : "-", nt
		}
	}' "$1"
}

if [ "${1:-}" = --table ]; then
	[ $# = 2 ] || { echo "usage: $0 --table FILE" >&2; exit 2; }
	table "$2"
	exit 0
fi
# The test bed does not pass the host's environment on: settings may
# also come as BENCH_NAME=VALUE arguments (run-bench.sh does that).
for arg in "$@"; do
	case $arg in
	BENCH_[A-Z_]*=*) export "${arg?}" ;;
	*) set -- --usage ;;
	esac
done
if [ "${1:-}" = --usage ] || [ -z "${VISOCK_HOST:-}" ] || [ -z "${VISOCK_PEER_IP:-}" ]; then
	sed -n '4,31s/^# \{0,1\}//p' "$0" >&2
	echo "run inside the test bed (VISOCK_HOST, VISOCK_PEER_IP), e.g. via run-bench.sh" >&2
	exit 2
fi

# ---------------------------------------------------------------------------
# Guest side
# ---------------------------------------------------------------------------

SECS=${BENCH_SECS:-8}
WSIZE=${BENCH_WSIZE:-65536}
ROUNDS=${BENCH_ROUNDS:-2000}
WARMUP=${BENCH_WARMUP:-200}
MSG=${BENCH_MSG:-64}
ONLY=" ${BENCH_ONLY:-tcp visock verbs verbs-ev smc} "
IB_ITERS=${BENCH_IB_ITERS:-1000}
RBUF=${BENCH_RBUF:-1048576}
SYNC_TIMEOUT=${BENCH_SYNC_TIMEOUT:-600}
IBDEV=${BENCH_IBDEV:-rxe0}
EID=${BENCH_SMC_EID:-VISOCK-BENCH}
CNT=/sys/class/infiniband/$IBDEV/ports/1/hw_counters
OUT=$VISOCK_RESULTS/bench.txt
KVER=$(uname -r)
GID=()
[ -z "${BENCH_GID_INDEX:-}" ] || GID=(-x "$BENCH_GID_INDEX")

say() { echo "--- [$VISOCK_HOST] $*"; }
wanted() { [[ $ONLY == *" $1 "* ]]; }
result() { echo "$*" | tee -a "$OUT"; }
pkts() { echo "$(cat "$CNT/sent_pkts") $(cat "$CNT/rcvd_pkts")"; }

# sync_point NAME [STATUS]: publish STATUS (default "ok") and wait for the
# peer to reach the same point; the peer's status ends up in PEER_STATUS.
sync_point() {
	local mine=$VISOCK_RESULTS/sync.$1 theirs=$VISOCK_PEER_RESULTS/sync.$1 _
	echo "${2:-ok}" >"$mine.tmp"
	mv "$mine.tmp" "$mine"
	for _ in $(seq $((SYNC_TIMEOUT * 10))); do
		if [ -s "$theirs" ]; then
			PEER_STATUS=$(cat "$theirs")
			return 0
		fi
		sleep 0.1
	done
	echo "bench.sh: peer never reached sync point $1" >&2
	exit 1
}

# client_run LABEL ARGS...: run one visock_bench client test and append
# the RoCE packet counts of this host over it to each RESULT line.
client_run() {
	local label=$1 p0 p1 s0 r0 s1 r1 line
	shift
	p0=$(pkts)
	"$BENCH" client -c "$VISOCK_PEER_IP" -l "$label" -T "$((${SECS%.*} + SYNC_TIMEOUT))" "$@" \
		>"$VISOCK_RESULTS/client.out" || return $?
	p1=$(pkts)
	read -r s0 r0 <<<"$p0"
	read -r s1 r1 <<<"$p1"
	while read -r line; do
		case $line in
		RESULT*) result "$line rxe_sent_pkts=$((s1 - s0)) rxe_rcvd_pkts=$((r1 - r0))" ;;
		*) echo "$line" ;;
		esac
	done <"$VISOCK_RESULTS/client.out"
}

# sock_bench LABEL FAMILY PORT: one stream and one ping-pong connection.
sock_bench() {
	local label=$1 fam=$2 port=$3 srv
	if [ "$VISOCK_HOST" = b ]; then
		"$BENCH" server -f "$fam" -p "$port" -n 2 -T "$((2 * SYNC_TIMEOUT))" &
		srv=$!
		sleep 0.5
		sync_point "$label-listen"
		# The client is done: a server still waiting has lost its client.
		sync_point "$label-done"
		kill "$srv" 2>/dev/null || true
		wait "$srv" 2>/dev/null || true
	else
		sync_point "$label-listen"
		client_run "$label" -f "$fam" -p "$port" -S -t "$SECS" -w "$WSIZE" ||
			result "NOTE $label: stream not measured: client failed (rc $?)"
		client_run "$label" -f "$fam" -p "$port" -P -r "$ROUNDS" -W "$WARMUP" -m "$MSG" ||
			result "NOTE $label: ping-pong not measured: client failed (rc $?)"
		sync_point "$label-done"
	fi
}

# perftest: the server (b) runs first; the client (a) retries until it
# can connect (perftest clients fail at once if nobody listens).
perf_client() { # OUTFILE PROGRAM ARGS...
	local out=$1 _
	shift
	for _ in $(seq 30); do
		if timeout 120 "$@" "$VISOCK_PEER_IP" >"$out" 2>&1; then
			return 0
		fi
		grep -q "Couldn't connect\|Unable to open file descriptor\|Connection refused" "$out" || break
		sleep 1
	done
	return 1
}

# perf_pair LABEL bw|lat PORT PROGRAM ARGS...: one perftest measurement
# (server on b, client on a) as a RESULT line of LABEL.
perf_pair() {
	local label=$1 kind=$2 port=$3 tool=$4 log p0 p1 s0 r0 s1 r1 line extra=
	shift 3
	log=$VISOCK_RESULTS/$tool-$port.txt
	sync_point "$label-$kind-start"
	if [ "$VISOCK_HOST" = b ]; then
		timeout 120 "$@" -p "$port" >"$log" 2>&1 ||
			say "$tool server failed: $(tail -n 3 "$log" | tr '\n' ' ')"
		sync_point "$label-$kind-done"
		return 0
	fi
	p0=$(pkts)
	if perf_client "$log" "$@" -p "$port"; then
		p1=$(pkts)
		read -r s0 r0 <<<"$p0"
		read -r s1 r1 <<<"$p1"
		if [ "$kind" = bw ]; then
			# "#bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]",
			# perftest's MB being 2^20 bytes.
			line=$(awk -v s="$WSIZE" '$1 == s && NF >= 5 {
				m = $4 * 1.048576
				printf "test=stream write_size=%d MBps=%.2f Gbps=%.4f", s, m, m * 8 / 1000; exit }' "$log")
		else
			extra=" note=RTT_=_2_x_one-way"
			# "#bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%",
			# one-way latencies (half the round trip): doubled here.
			line=$(awk -v s="$MSG" '$1 == s && NF >= 8 {
				printf "test=pingpong msg_size=%d rtt_median_us=%.1f rtt_p99_us=%.1f rtt_mean_us=%.1f rtt_min_us=%.1f oneway_typical_us=%s",
					s, 2 * $5, 2 * $8, 2 * $6, 2 * $3, $5; exit }' "$log")
		fi
		if [ -n "$line" ]; then
			result "RESULT label=$label family=verbs $line rxe_sent_pkts=$((s1 - s0)) rxe_rcvd_pkts=$((r1 - r0)) tool=$tool$extra"
		else
			result "NOTE $label: $tool: not measured: no result line: $(tail -n 2 "$log" | tr '\n' ' ')"
		fi
	else
		result "NOTE $label: $tool: not measured: $(tail -n 2 "$log" | tr '\n' ' ')"
	fi
	cat "$log"
	sync_point "$label-$kind-done"
}

# Raw verbs as perftest does them by default: RDMA WRITE, busy polling.
verbs_bench() {
	perf_pair verbs bw 18515 ib_write_bw -d "$IBDEV" -i 1 "${GID[@]}" \
		-s "$WSIZE" -D "$SECS"
	perf_pair verbs lat 18516 ib_write_lat -d "$IBDEV" -i 1 "${GID[@]}" \
		-s "$MSG" -n "$ROUNDS"
}

# Raw verbs waiting for completion events instead of busy polling (SEND,
# since perftest has no events for WRITE).  On a 1-vCPU guest a polling
# process competes with Soft-RoCE's own kernel work, which events avoid.
verbs_ev_bench() {
	perf_pair verbs-ev bw 18517 ib_send_bw -d "$IBDEV" -i 1 "${GID[@]}" \
		-s "$WSIZE" -n "$IB_ITERS" -e
	perf_pair verbs-ev lat 18518 ib_send_lat -d "$IBDEV" -i 1 "${GID[@]}" \
		-s "$MSG" -n "$ROUNDS" -e
}

# SMC-R on Soft-RoCE needs SMC-Rv2: a pnet entry eth0 <-> rxe0 and the
# same user-defined EID on both hosts.
smc_setup() {
	local log=$VISOCK_RESULTS/smc-setup.txt
	case $KVER in
	6.1.*)
		echo "kernel $KVER: SMC-R on rxe needs SMC-Rv2 with a user EID, and on 6.1 the first SMC-Rv2 connection hung in the test bed; measured on 6.12 only"
		return 1 ;;
	esac
	if ! modprobe smc >"$log" 2>&1; then
		echo "modprobe smc failed: $(tr '\n' ' ' <"$log")"
		return 1
	fi
	if ! "$SMC_SETUP" pnet NET1 eth0 "$IBDEV" 1 >>"$log" 2>&1 ||
	   ! "$SMC_SETUP" ueid "$EID" >>"$log" 2>&1; then
		tr '\n' ' ' <"$log"
		echo
		return 1
	fi
	echo ok
}

smc_bench() {
	local why peer
	why=$(smc_setup) || true
	sync_point smc-setup "$why"
	peer=$PEER_STATUS
	if [ "$why" != ok ] || [ "$peer" != ok ]; then
		[ "$why" = ok ] && why="host $VISOCK_PEER_HOST: $peer" || why="host $VISOCK_HOST: $why"
		say "SMC-R: not measured: $why"
		[ "$VISOCK_HOST" = b ] || result "NOTE smc-r: not measured: $why"
		return 0
	fi
	sock_bench smc-r smc 5303
	if [ "$VISOCK_HOST" = a ]; then
		# rxe packets prove SMC-R did not fall back to TCP.
		grep -q "^RESULT label=smc-r .*rxe_sent_pkts=[0-9]\{3,\}" "$OUT" ||
			result "NOTE smc-r: few or no RoCE packets: the connection may have fallen back to TCP"
	fi
}

visock_bench() {
	modprobe ib_core
	insmod "$VISOCK_SRC/build/$KVER/visock.ko"
	sysctl -qw net.visock.enable=1
	sysctl -qw net.visock.rbuf_default="$RBUF"
	say "visock receive rings: $(sysctl -n net.visock.rbuf_default) bytes"
	sock_bench visock visock 5302
	if [ "$VISOCK_HOST" = a ]; then
		say "/proc/net/visock after the visock runs (zero fallback counters left out)"
		grep -v '^fallback_.* 0$' /proc/net/visock || true
	fi
	sync_point visock-unload
	rmmod visock || say "rmmod visock failed"
}

if [ ! -x "$BENCH" ] || [ ! -x "$SMC_SETUP" ]; then
	echo "bench.sh: build first: make -C tools/testing/bench" >&2
	exit 1
fi
[ -d "$CNT" ] || { echo "bench.sh: no $IBDEV counters in $CNT" >&2; exit 1; }
: >"$OUT"
result "INFO kernel=$KVER host=$VISOCK_HOST peer=$VISOCK_PEER_IP date=$(date -u +%Y-%m-%dT%H:%M:%SZ) secs=$SECS write_size=$WSIZE rounds=$ROUNDS warmup=$WARMUP msg_size=$MSG"
say "kernel $KVER, $IBDEV: $(cat /sys/class/infiniband/"$IBDEV"/ports/1/state)"

if wanted tcp; then
	say "TCP"
	sock_bench tcp inet 5301
fi
if wanted visock; then
	say "visock"
	visock_bench
fi
if wanted verbs; then
	say "raw verbs (ib_write_bw, ib_write_lat)"
	verbs_bench
fi
if wanted verbs-ev; then
	say "raw verbs with completion events (ib_send_bw -e, ib_send_lat -e)"
	verbs_ev_bench
fi
if wanted smc; then
	say "SMC-R"
	smc_bench
fi

sync_point end
if [ "$VISOCK_HOST" = a ]; then
	say "results ($KVER)"
	table "$OUT"
fi
