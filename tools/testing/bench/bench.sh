#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench.sh - guest half of "make bench": TCP, visock, rsocket, in-kernel
# SMC-R and raw verbs (perftest) side by side, and visock's transforms
# beside kernel TLS over TCP with the same cipher, over this matrix:
# stream throughput per write size, request/response round trips per
# message size (median, p99), connection setup (CRR), parallel streams,
# guest CPU time and RDMA packets, work requests and completions per KiB,
# and real programs (iperf3, sockperf).
#
#   bench.sh [BENCH_X=V...]      run in both guests of the two-host bed
#                                (VISOCK_HOST=a: clients, b: servers)
#   bench.sh --table FILE [CSV]  print the table of a result file (and
#                                write it as CSV)
#
# Test by test, every transport runs one after the other (the servers of
# all socket transports stay up), so that all of them see about the same
# load of the shared host.  A benchmark, not a test: it never asserts on
# numbers.  It exits non-zero only if it could not run at all.  A part
# that cannot be measured gets a "NOTE label=... test=... size=...
# why=..." line, and the table shows "err" with the reason below it.
#
# Environment (defaults in brackets):
#   BENCH_ONLY        space-separated transports and/or tests to run; a
#                     class not named runs whole [all].  Transports: tcp
#                     visock rsocket smc verbs verbs-ev ktls ktls-chacha
#                     visock-gcm visock-chacha visock-gmac.  Tests: crr
#                     crr-keep rtt stream par iperf3 sockperf
#   BENCH_SECS        seconds per stream, CRR, parallel and program run [5]
#   BENCH_WSIZES      stream write sizes, bytes [64 1024 16384 65536 1048576]
#   BENCH_MSGS        request/response sizes, bytes [64 1024 16384]
#   BENCH_ROUNDS      timed round trips per size [1000]
#   BENCH_WARMUP      warm-up round trips [100]
#   BENCH_PAR         parallel streams (64 KiB writes) [64]
#   BENCH_CRR_MSG     CRR request and response size, bytes [64]
#   BENCH_IB_ITERS    ib_send_bw -e messages [about BENCH_SECS x 10 MB]
#   BENCH_RBUF        visock receive ring, net.visock.rbuf_default [1048576]
#   BENCH_LAZY        visock lazy start threshold, net.visock.lazy_bytes
#                     [4096; 0: every connection runs the handshake]
#   BENCH_IBDEV       RDMA device [rxe0]
#   BENCH_NETDEV      its net device, for SMC-R's pnet table [eth0]
#   BENCH_GID_INDEX   perftest -x GID index [perftest's choice]
#   BENCH_SMC_EID     SMC-Rv2 user-defined EID [VISOCK-BENCH]
#   BENCH_RSPRELOAD   rsocket preload library
#                     [/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so]
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

# table FILE [CSV]: one row per metric, one column per transport, and the
# ratios visock/SMC-R, visock/rsocket and visock/raw verbs; with kernel
# TLS and visock's transforms in the run also visock-gcm/ktls and
# visock-chacha/ktls-chacha (the same cipher on both sides).
table() {
	awk -v csv="${2:-}" '
	function kv(line, key,    n, i, f) {
		n = split(line, f, " ")
		for (i = 1; i <= n; i++)
			if (index(f[i], key "=") == 1)
				return substr(f[i], length(key) + 2)
		return ""
	}
	function hsize(b) {
		if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) " MiB"
		if (b >= 1024 && b % 1024 == 0) return (b / 1024) " KiB"
		return b " B"
	}
	# row ID NAME UNIT BETTER GROUP SIZE: declare a row (kept in order)
	# of the measurement in t and sz (a NOTE of the same test and size
	# becomes the error of its cells).
	function row(id, name, unit, better, group, size) {
		if (id in rname) return
		rname[id] = name; runit[id] = unit; rbetter[id] = better
		rgroup[id] = group; rsize[id] = size; rorder[++nr] = id
		rtest[id] = t == "pingpong" ? "rtt" : t; rtsize[id] = sz
	}
	function put(id, l, v) { if (v != "") val[id, l] = v }
	function num(x) { return x ~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/ }
	function fmt(x) {
		if (!num(x)) return x
		if (x >= 1000) return sprintf("%.0f", x)
		if (x >= 10) return sprintf("%.1f", x)
		if (x >= 0.1) return sprintf("%.2f", x)
		return sprintf("%.3g", x)
	}
	# Efficiency of a run that moved BYTES: CPU of both guests per GiB,
	# RoCE packets on the wire (sent plus received on both hosts, halved),
	# rxe receive completions and visock work requests and completions
	# (both hosts) per KiB.
	function eff(tag, desc, l, line, bytes,    k, p) {
		if (bytes <= 0) return
		k = bytes / 1024
		p = t == "par" ? "par" : ""
		row("cpu" tag, "CPU s/GiB, " desc, "s/GiB", "lower", "cpu" p, sz)
		put("cpu" tag, l, (kv(line, "a_cpu_s") + kv(line, "b_cpu_s")) / (bytes / 1073741824))
		if (l == "tcp" || l ~ /^ktls/) return
		row("pkt" tag, "RoCE pkts/KiB, " desc, "pkts/KiB", "lower", "pkts" p, sz)
		put("pkt" tag, l, (kv(line, "a_pkts") + kv(line, "b_pkts")) / 2 / k)
		row("rcq" tag, "rxe recv CQEs/KiB, " desc, "CQEs/KiB", "lower", "rcqe" p, sz)
		put("rcq" tag, l, (kv(line, "a_recvs") + kv(line, "b_recvs")) / k)
		if (kv(line, "a_wr") == "na" || kv(line, "a_wr") == "") return
		row("wr" tag, "visock WRs/KiB, " desc, "WRs/KiB", "lower", "wr" p, sz)
		put("wr" tag, l, (kv(line, "a_wr") + kv(line, "b_wr")) / k)
		row("wc" tag, "visock WCs/KiB, " desc, "WCs/KiB", "lower", "wc" p, sz)
		put("wc" tag, l, (kv(line, "a_wc") + kv(line, "b_wc")) / k)
	}
	function addl(l) { if (!(l in seen)) { seen[l] = 1; lorder[++nl] = l } }
	/^INFO / { info = $0 }
	/^RESULT / {
		l = kv($0, "label"); t = kv($0, "test"); addl(l)
		if (t == "stream") {
			sz = kv($0, "write_size")
			id = "s" sz
			row(id, "stream " hsize(sz) " writes", "MB/s", "higher", "stream", sz)
			put(id, l, kv($0, "MBps"))
			eff(id, hsize(sz) " stream", l, $0, kv($0, "bytes"))
		} else if (t == "pingpong") {
			sz = kv($0, "msg_size")
			row("rm" sz, "RTT " hsize(sz) ", median", "us", "lower", "rtt", sz)
			row("rp" sz, "RTT " hsize(sz) ", p99", "us", "lower", "rttp99", sz)
			put("rm" sz, l, kv($0, "rtt_median_us"))
			put("rp" sz, l, kv($0, "rtt_p99_us"))
			n = kv($0, "rounds") + kv($0, "warmup")
			if (l != "tcp" && l !~ /^ktls/ && n > 0 && kv($0, "a_pkts") != "") {
				row("rk" sz, "RoCE pkts per " hsize(sz) " round trip", "pkts", "lower", "rtpkts", sz)
				put("rk" sz, l, (kv($0, "a_pkts") + kv($0, "b_pkts")) / 2 / n)
			}
			if (n > 0 && kv($0, "a_wr") != "" && kv($0, "a_wr") != "na") {
				row("rw" sz, "visock WRs per " hsize(sz) " round trip", "WRs", "lower", "rtwr", sz)
				put("rw" sz, l, (kv($0, "a_wr") + kv($0, "b_wr")) / n)
			}
		} else if (t == "crr") {
			sz = kv($0, "msg_size")
			row("cf", "CRR new peer: first connection", "us", "lower", "crrfirst", sz)
			row("cr", "CRR, no other connection open", "conn/s", "higher", "crr", sz)
			row("cm", "CRR, no other connection open, median", "us", "lower", "crrlat", sz)
			put("cf", l, kv($0, "first_us"))
			put("cr", l, kv($0, "conn_per_s"))
			put("cm", l, kv($0, "crr_median_us"))
		} else if (t == "crr-keep") {
			sz = kv($0, "msg_size")
			row("kr", "CRR, one connection open (existing link)", "conn/s", "higher", "crr", sz)
			row("km", "CRR, one connection open, median", "us", "lower", "crrlat", sz)
			put("kr", l, kv($0, "conn_per_s"))
			put("km", l, kv($0, "crr_median_us"))
		} else if (t == "par") {
			id = "par"
			sz = kv($0, "streams")
			row(id, sz " parallel streams, 64 KiB writes", "MB/s", "higher", "par", sz)
			put(id, l, kv($0, "MBps"))
			eff(id, kv($0, "streams") " streams", l, $0, kv($0, "bytes"))
		} else if (t == "iperf3") {
			sz = kv($0, "write_size")
			row("ip", "iperf3, " hsize(sz) " writes", "MB/s", "higher", "iperf3", sz)
			put("ip", l, kv($0, "MBps"))
		} else if (t == "sockperf") {
			sz = kv($0, "msg_size")
			row("spm", "sockperf ping-pong " hsize(sz) ", median", "us", "lower", "sockperf", sz)
			row("spp", "sockperf ping-pong " hsize(sz) ", p99", "us", "lower", "sockperfp99", sz)
			put("spm", l, kv($0, "rtt_median_us"))
			put("spp", l, kv($0, "rtt_p99_us"))
		}
		next
	}
	/^NOTE / {
		l = kv($0, "label"); t = kv($0, "test"); sz = kv($0, "size"); addl(l)
		w = $0; sub(/^.* why=/, "", w)
		notes[++nn] = l (t == "all" ? "" : " " t (sz == "" ? "" : " " sz)) ": " w
		err[l, t, sz] = nn
		if (t == "all") errall[l] = nn
		next
	}
	# The cell of row ID for transport L: value, "err[N]" or "-".
	function cell(id, l) {
		if ((id, l) in val) return val[id, l]
		if ((l, rtest[id], rtsize[id]) in err) return "err[" err[l, rtest[id], rtsize[id]] "]"
		if (l in errall) return "err[" errall[l] "]"
		return "-"
	}
	function ratio(id, a, b,    x, y) {
		x = cell(id, a); y = cell(id, b)
		if (!num(x) || !num(y) || y == 0) return "-"
		return sprintf("%.2f", x / y)
	}
	END {
		# Columns: the known transports first, in this order.
		nk = split("tcp ktls ktls-chacha visock visock-gcm visock-chacha visock-gmac " \
			"smc-r rsocket verbs verbs-ev", known, " ")
		nc = 0
		for (i = 1; i <= nk; i++)
			if (known[i] in seen) { col[++nc] = known[i]; iscol[known[i]] = 1 }
		for (i = 1; i <= nl; i++)
			if (!(lorder[i] in iscol)) col[++nc] = lorder[i]
		# Ratios: numerator rnum, denominator rat, column head rhead.
		# The first three always; the transform pairs when both
		# sides ran.
		nrat = 3
		rnum[1] = rnum[2] = rnum[3] = "visock"
		rat[1] = "smc-r"; rat[2] = "rsocket"; rat[3] = "verbs"
		for (r = 1; r <= 3; r++) rhead[r] = "v/" rat[r]
		if (("visock-gcm" in seen) && ("ktls" in seen)) {
			rnum[++nrat] = "visock-gcm"; rat[nrat] = "ktls"; rhead[nrat] = "vgcm/ktls"
		}
		if (("visock-chacha" in seen) && ("ktls-chacha" in seen)) {
			rnum[++nrat] = "visock-chacha"; rat[nrat] = "ktls-chacha"; rhead[nrat] = "vcha/kcha"
		}
		# Rows by group, then size, then first appearance.
		ng = split("crrfirst crr crrlat rtt rttp99 stream par iperf3 sockperf sockperfp99 " \
			"cpu pkts rcqe wr wc rtpkts rtwr", gl, " ")
		for (i = 1; i <= ng; i++) grank[gl[i]] = i
		for (i = 1; i <= nr; i++) {
			id = rorder[i]
			g = rgroup[id]
			if (g != "par") sub(/par$/, "", g)
			key[id] = sprintf("%03d %015d %04d", grank[g], rtest[id] == "par" ? 999999999 : rsize[id], i)
		}
		for (i = 2; i <= nr; i++) {
			id = rorder[i]
			for (j = i - 1; j >= 1 && key[rorder[j]] > key[id]; j--)
				rorder[j + 1] = rorder[j]
			rorder[j + 1] = id
		}
		if (info != "")
			print info
		printf "%-44s %-8s", "metric", "unit"
		for (c = 1; c <= nc; c++) {
			cw[c] = length(col[c]) > 9 ? length(col[c]) : 9
			printf " %" cw[c] "s", col[c]
		}
		for (r = 1; r <= nrat; r++) printf " %9s", rhead[r]
		printf "\n"
		if (csv != "") {
			printf "metric,unit,better,group,size" > csv
			for (c = 1; c <= nc; c++) printf ",%s", col[c] > csv
			for (r = 1; r <= nrat; r++) printf ",%s/%s", rnum[r], rat[r] > csv
			printf "\n" > csv
		}
		for (i = 1; i <= nr; i++) {
			id = rorder[i]
			printf "%-44s %-8s", rname[id], runit[id]
			for (c = 1; c <= nc; c++) printf " %" cw[c] "s", fmt(cell(id, col[c]))
			for (r = 1; r <= nrat; r++) printf " %9s", ratio(id, rnum[r], rat[r])
			printf "\n"
			if (csv == "") continue
			nm = rname[id]
			gsub(/,/, ";", nm)
			printf "%s,%s,%s,%s,%s", nm, runit[id], rbetter[id], rgroup[id], rsize[id] > csv
			for (c = 1; c <= nc; c++) {
				x = cell(id, col[c])
				printf ",%s", num(x) ? x : (x ~ /^err/ ? "ERR" : "") > csv
			}
			for (r = 1; r <= nrat; r++) {
				x = ratio(id, rnum[r], rat[r])
				printf ",%s", num(x) ? x : "" > csv
			}
			printf "\n" > csv
		}
		print ""
		print "v/X: visock divided by X (throughput and conn/s: above 1 is better for visock;"
		print "us, s/GiB and per-KiB counts: below 1 is better).  -: not applicable or not run."
		if (nrat > 3)
			print "vgcm/ktls: visock-gcm / ktls, vcha/kcha: visock-chacha / ktls-chacha (the same AEAD), read alike."
		for (i = 1; i <= nn; i++)
			print "[" i "] " notes[i]
	}' "$1"
}

if [ "${1:-}" = --table ]; then
	[ $# = 2 ] || [ $# = 3 ] || { echo "usage: $0 --table FILE [CSV]" >&2; exit 2; }
	table "$2" "${3:-}"
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
	sed -n '4,47s/^# \{0,1\}//p' "$0" >&2
	echo "run inside the test bed (VISOCK_HOST, VISOCK_PEER_IP), e.g. via run-bench.sh" >&2
	exit 2
fi

# ---------------------------------------------------------------------------
# Guest side
# ---------------------------------------------------------------------------

ALL_TRANSPORTS="tcp visock rsocket smc verbs verbs-ev ktls ktls-chacha visock-gcm visock-chacha visock-gmac"
ALL_TESTS="crr crr-keep rtt stream par iperf3 sockperf"
SECS=${BENCH_SECS:-5}
WSIZES=${BENCH_WSIZES:-64 1024 16384 65536 1048576}
MSGS=${BENCH_MSGS:-64 1024 16384}
ROUNDS=${BENCH_ROUNDS:-1000}
WARMUP=${BENCH_WARMUP:-100}
PAR=${BENCH_PAR:-64}
CRR_MSG=${BENCH_CRR_MSG:-64}
RBUF=${BENCH_RBUF:-1048576}
LAZY=${BENCH_LAZY:-4096}
SYNC_TIMEOUT=${BENCH_SYNC_TIMEOUT:-600}
IBDEV=${BENCH_IBDEV:-rxe0}
EID=${BENCH_SMC_EID:-VISOCK-BENCH}
RSPRELOAD=${BENCH_RSPRELOAD:-/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so}
NETDEV=${BENCH_NETDEV:-eth0}
PORTDIR=/sys/class/infiniband/$IBDEV/ports/1
OUT=$VISOCK_RESULTS/bench.txt
KVER=$(uname -r)
HZ=$(getconf CLK_TCK)
GID=()
[ -z "${BENCH_GID_INDEX:-}" ] || GID=(-x "$BENCH_GID_INDEX")

# BENCH_ONLY: transports and tests; a class not named at all runs whole.
TRANSPORTS=" " TESTS=" "
for w in ${BENCH_ONLY:-}; do
	case " $ALL_TRANSPORTS " in *" $w "*) TRANSPORTS+="$w "; continue ;; esac
	case " $ALL_TESTS " in *" $w "*) TESTS+="$w "; continue ;; esac
	echo "bench.sh: unknown BENCH_ONLY word '$w' (transports: $ALL_TRANSPORTS; tests: $ALL_TESTS)" >&2
	exit 2
done
[ "$TRANSPORTS" != " " ] || TRANSPORTS=" $ALL_TRANSPORTS "
[ "$TESTS" != " " ] || TESTS=" $ALL_TESTS "

say() { echo "--- [$VISOCK_HOST] $*"; }
transport_wanted() { [[ $TRANSPORTS == *" $1 "* ]]; }
test_wanted() { [[ $TESTS == *" $1 "* ]]; }
result() { echo "$*" | tee -a "$OUT"; }
# note LABEL TEST SIZE WHY...: a part that could not be measured (host a).
note() {
	local l=$1 t=$2 sz=$3
	shift 3
	[ "$VISOCK_HOST" = a ] || return 0
	result "NOTE label=$l test=$t size=$sz why=$(echo "$*" | tr '\n' ' ' | sed 's/  */ /g; s/ $//')"
}

# publish NAME [STATUS] / await NAME: one host says it reached a point,
# the other waits for it; the status ends up in PEER_STATUS.
publish() {
	local f=$VISOCK_RESULTS/sync.$1
	echo "${2:-ok}" >"$f.tmp"
	mv "$f.tmp" "$f"
}
await() {
	local f=$VISOCK_PEER_RESULTS/sync.$1 _
	for _ in $(seq $((SYNC_TIMEOUT * 10))); do
		if [ -s "$f" ]; then
			PEER_STATUS=$(cat "$f")
			return 0
		fi
		sleep 0.1
	done
	echo "bench.sh: peer never reached sync point $1" >&2
	exit 1
}
# sync_point NAME [STATUS]: both hosts.
sync_point() {
	publish "$@"
	await "$1"
}

# ctr NAME...: the first of these port counters the device has (rxe:
# hw_counters; real NICs: the standard port counters), else 0.
ctr() {
	local n
	for n in "$@"; do
		if [ -r "$PORTDIR/$n" ]; then
			cat "$PORTDIR/$n"
			return
		fi
	done
	echo 0
}

# snap: "cpu_busy_jiffies sent_pkts rcvd_pkts rdma_recvs visock_wr visock_wc"
# of this host now (na where there is no such counter).
snap() {
	local _c u n s idle iow irq sirq st wr=na wc=na
	read -r _c u n s idle iow irq sirq st _ </proc/stat
	: "$idle" "$iow"
	if [ -r /proc/net/visock ]; then
		wr=$(awk '$1 == "rdma_wr_posted" { print $2 }' /proc/net/visock)
		wc=$(awk '$1 == "rdma_wc" { print $2 }' /proc/net/visock)
	fi
	echo "$((u + n + s + irq + sirq + st))" \
		"$(ctr hw_counters/sent_pkts counters/port_xmit_packets)" \
		"$(ctr hw_counters/rcvd_pkts counters/port_rcv_packets)" \
		"$(ctr hw_counters/rdma_recvs) ${wr:-na} ${wc:-na}"
}
# delta PREFIX BEFORE AFTER LABEL: the key=value form of the difference
# (visock's counters only for visock's own measurements: the module stays
# loaded while the others run).
delta() {
	awk -v p="$1" -v hz="$HZ" -v b="$2" -v a="$3" -v l="$4" 'BEGIN {
		split(b, x, " "); split(a, y, " ")
		printf "%s_cpu_s=%.2f %s_pkts=%d %s_recvs=%d", p, (y[1] - x[1]) / hz,
			p, y[2] + y[3] - x[2] - x[3], p, y[4] - x[4]
		if (x[5] == "na" || y[5] == "na" || l !~ /^visock/)
			printf " %s_wr=na %s_wc=na", p, p
		else
			printf " %s_wr=%d %s_wc=%d", p, y[5] - x[5], p, y[6] - x[6]
	}'
}

# measure LABEL TEST SIZE: one measurement.  Host b runs SRV (if any) in
# the background, host a runs CLI; both take counter snapshots around
# it.  CLI prints RESULT lines; each gets both hosts' counter deltas.
SRV=() CLI=()
measure() {
	local label=$1 test=$2 size=$3 id="$1-$2-$3" s0 s1 srv='' rc=0 line n=0
	local log=$VISOCK_RESULTS/run.$id.txt
	if [ "$VISOCK_HOST" = b ]; then
		s0=$(snap)
		if [ ${#SRV[@]} -gt 0 ]; then
			"${SRV[@]}" >"$log" 2>&1 &
			srv=$!
		fi
		publish "$id-go"
		await "$id-end"
		if [ -n "$srv" ]; then
			# One-shot servers end by themselves; give them a moment.
			for _ in $(seq 20); do kill -0 "$srv" 2>/dev/null || break; sleep 0.1; done
			kill "$srv" 2>/dev/null || true
			wait "$srv" 2>/dev/null || true
		fi
		s1=$(snap)
		publish "$id-end" "$(delta b "$s0" "$s1" "$label")"
		return 0
	fi
	await "$id-go"
	say "$label $test $size"
	s0=$(snap)
	"${CLI[@]}" >"$log" 2>&1 || rc=$?
	s1=$(snap)
	publish "$id-end"
	await "$id-end"
	while read -r line; do
		case $line in
		RESULT*)
			result "$line $(delta a "$s0" "$s1" "$label") $PEER_STATUS"
			n=$((n + 1)) ;;
		*) echo "$line" ;;
		esac
	done <"$log"
	if [ "$n" = 0 ]; then
		note "$label" "$test" "$size" "rc $rc: $(grep -v '^RESULT' "$log" | tail -n 2)"
	fi
}

# ------------------------------------------------------------ socket tests

# wrapper TRANSPORT: WR becomes the command prefix that runs a program
# as TRANSPORT's programs run (each part execs the next: $! of a
# background "${WR[@]}" PROGRAM is PROGRAM itself).
wrapper() {
	case $1 in
	rsocket) WR=(env "LD_PRELOAD=$RSPRELOAD") ;;
	visock-app) WR=("$VISOCK_SRC/tools/visock/visock_run") ;;
	*) WR=(env) ;;
	esac
}

# wait_listening FILE: until a server printed that it listens (30 s).
wait_listening() {
	local _
	for _ in $(seq 300); do
		grep -q listening "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	say "server never said it listens: $(tail -n 2 "$1" | tr '\n' ' ')"
}

# sock_params LABEL: FAM, PORT, WRAPNAME and the record layer options
# XOPT of a socket transport (kernel TLS and visock transforms: the
# same cipher on both sides of a pair).
sock_params() {
	XOPT=()
	case $1 in
	tcp) FAM=inet PORT=5301 WRAPNAME=tcp ;;
	visock) FAM=visock PORT=5302 WRAPNAME=visock ;;
	smc-r) FAM=smc PORT=5303 WRAPNAME=smc-r ;;
	rsocket) FAM=inet PORT=5304 WRAPNAME=rsocket ;;
	ktls) FAM=inet PORT=5305 WRAPNAME=tcp XOPT=(-K gcm-aes-128) ;;
	ktls-chacha) FAM=inet PORT=5306 WRAPNAME=tcp XOPT=(-K chacha20-poly1305) ;;
	visock-gcm) FAM=visock PORT=5307 WRAPNAME=visock XOPT=(-X gcm-aes-128) ;;
	visock-chacha) FAM=visock PORT=5308 WRAPNAME=visock XOPT=(-X chacha20-poly1305) ;;
	visock-gmac) FAM=visock PORT=5309 WRAPNAME=visock XOPT=(-X gmac-aes-128) ;;
	*) return 1 ;;
	esac
}
is_sock() { sock_params "$1"; }

# start_server LABEL (host b): visock_bench's server, for the whole run.
SERVERS=()
start_server() {
	sock_params "$1"
	wrapper "$WRAPNAME"
	"${WR[@]}" "$BENCH" server -f "$FAM" -p "$PORT" "${XOPT[@]}" -n 0 -T 86400 \
		>"$VISOCK_RESULTS/server.$1.txt" 2>&1 &
	SERVERS+=($!)
	# The first CRR connection is the first one to this peer: it must
	# not wait for the server to start.
	wait_listening "$VISOCK_RESULTS/server.$1.txt"
}

stop_servers() {
	local pid l
	for pid in "${SERVERS[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	for l in "${ACTIVE[@]}"; do
		if grep -qs 'visock_bench:' "$VISOCK_RESULTS/server.$l.txt"; then
			say "$l server: $(grep 'visock_bench:' "$VISOCK_RESULTS/server.$l.txt" | tail -n 1)"
		fi
	done
}

# sock_measure LABEL TEST SIZE ARGS...: one visock_bench client run.
sock_measure() {
	local label=$1 test=$2 size=$3
	shift 3
	sock_params "$label"
	wrapper "$WRAPNAME"
	SRV=()
	CLI=("${WR[@]}" "$BENCH" client -c "$VISOCK_PEER_IP" -f "$FAM" -p "$PORT" "${XOPT[@]}"
		-l "$label" -T "$((${SECS%.*} * 4 + 300))" "$@")
	measure "$label" "$test" "$size"
}

# iperf3 client: retries until the server listens; one RESULT line.
iperf_client() { # LABEL WRAP PORT
	local label=$1 port=$3 j=$VISOCK_RESULTS/iperf3.$1.json mbps _
	wrapper "$2"
	for _ in $(seq 50); do
		if "${WR[@]}" timeout $((${SECS%.*} * 2 + 20)) iperf3 -c "$VISOCK_PEER_IP" -p "$port" \
			-t "$SECS" -l 65536 -J >"$j" 2>&1 &&
			! grep -q 'Connection refused' "$j"; then
			mbps=$(awk '/"sum_received"/ { r = 1 } r && /"bits_per_second"/ {
				gsub(/[^0-9.e+]/, "", $2); printf "%.2f\n", $2 / 8e6; exit }' "$j")
			if [ -z "$mbps" ] || [ "$mbps" = 0.00 ]; then
				echo "iperf3 received ${mbps:-no} MB/s: $(grep -o '"error":.*' "$j")" >&2
				return 1
			fi
			echo "RESULT label=$label test=iperf3 tool=iperf3 write_size=65536 MBps=$mbps"
			return 0
		fi
		grep -q 'Connection refused\|unable to connect' "$j" || break
		sleep 0.2
	done
	grep -o '"error":.*' "$j" >&2 || tail -n 3 "$j" >&2
	return 1
}

sockperf_client() { # LABEL WRAP PORT
	local label=$1 port=$3 f=$VISOCK_RESULTS/sockperf.feed o=$VISOCK_RESULTS/sockperf.$1.out _
	wrapper "$2"
	echo "T:$VISOCK_PEER_IP:$port" >"$f"
	for _ in $(seq 50); do
		if "${WR[@]}" timeout $((${SECS%.*} * 2 + 20)) sockperf ping-pong -f "$f" -F s \
			-m 64 -t "$SECS" --full-rtt >"$o" 2>&1 &&
			grep -q 'percentile 50.000' "$o"; then
			awk -v l="$label" '/percentile 50.000/ { m = $NF } /percentile 99.000/ { p = $NF }
				END { printf "RESULT label=%s test=sockperf tool=sockperf msg_size=64 rtt_median_us=%s rtt_p99_us=%s\n", l, m, p }' "$o"
			return 0
		fi
		grep -q 'refused' "$o" || break
		sleep 0.2
	done
	grep -v '^sockperf: \(==\|\[\)' "$o" | tail -n 3 >&2
	return 1
}

# app_measure LABEL iperf3|sockperf: the program as LABEL runs programs.
app_measure() {
	local label=$1 test=$2 port w f=$VISOCK_RESULTS/sockperf-srv.feed size=65536
	[ "$test" = iperf3 ] || size=64
	if [ "$label" = smc-r ]; then
		note smc-r "$test" "$size" "no SMC preload library here (smc_run is part of smc-tools, not packaged in Debian 12)"
		return 0
	fi
	# Ports of their own: iperf3 at +100, sockperf at +200 (a port
	# another program just used may still have connections in
	# TIME_WAIT, and sockperf's server does not reuse addresses).
	sock_params "$label"
	port=$((PORT + 100))
	w=$WRAPNAME
	[ "$w" != visock ] || w=visock-app
	wrapper "$w"
	if [ "$test" = iperf3 ]; then
		SRV=("${WR[@]}" iperf3 -s -1 -p "$port")
		CLI=(iperf_client "$label" "$w" "$port")
	else
		echo "T:$VISOCK_LOCAL_IP:$((port + 100))" >"$f"
		SRV=("${WR[@]}" sockperf server -f "$f" -F s)
		CLI=(sockperf_client "$label" "$w" "$((port + 100))")
	fi
	measure "$label" "$test" "$size"
	SRV=()
}

# ------------------------------------------------------------ perftest

# perf_client KIND SIZE TOOL ARGS...: run a perftest client (retrying
# until its server listens) and print its RESULT line.
perf_client() {
	local kind=$1 size=$2 tool=$3 out=$VISOCK_RESULTS/perf.out _ line rc
	shift 3
	for _ in $(seq 30); do
		rc=0
		timeout "$PERF_TIMEOUT" "$tool" "$@" "$VISOCK_PEER_IP" >"$out" 2>&1 || rc=$?
		[ "$rc" != 0 ] || break
		if [ "$rc" = 124 ]; then
			echo "$tool timed out after $PERF_TIMEOUT s (stalled)" >&2
			return 1
		fi
		grep -q "Couldn't connect\|Unable to open file descriptor\|Connection refused" "$out" || {
			tail -n 2 "$out" >&2
			return 1
		}
		sleep 1
	done
	cat "$out" >&2
	if [ "$kind" != lat ]; then
		# "#bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]",
		# perftest's MB being 2^20 bytes.  Bytes moved: iterations
		# times size (-n), or average rate times duration (-D).
		line=$(awk -v s="$size" -v k="$kind" -v d="$PERF_SECS" -v q="$PAR" '$1 == s && NF >= 5 {
			m = $4 * 1.048576
			b = d > 0 ? m * 1e6 * d : $1 * $2
			printf "test=%s%s write_size=%d bytes=%.0f MBps=%.2f Gbps=%.4f", k == "par" ? "par" : "stream",
				k == "par" ? " streams=" q : "", s, b, m, m * 8 / 1000; exit }' "$out")
	else
		# "#bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%",
		# one-way latencies (half the round trip): doubled here.
		line=$(awk -v s="$size" '$1 == s && NF >= 8 {
			printf "test=pingpong msg_size=%d rounds=%d warmup=0 rtt_median_us=%.1f rtt_p99_us=%.1f rtt_mean_us=%.1f rtt_min_us=%.1f oneway_typical_us=%s",
				s, $2, 2 * $5, 2 * $8, 2 * $6, 2 * $3, $5; exit }' "$out")
	fi
	[ -n "$line" ] || { echo "no result line: $(tail -n 2 "$out" | tr '\n' ' ')" >&2; return 1; }
	echo "RESULT label=$PERF_LABEL family=verbs $line tool=$tool"
}

# perf_measure LABEL TEST SIZE: one perftest measurement (server on b,
# client on a) for verbs (RDMA WRITE, busy polling) or verbs-ev (SEND,
# completion events), on a port of its own.
PERF_PORT=18515
PERF_TIMEOUT=$((${SECS%.*} * 4 + 60))
perf_measure() {
	local label=$1 test=$2 sz=$3 tool kind=bw iters opts=()
	PERF_PORT=$((PERF_PORT + 1))
	PERF_LABEL=$label
	PERF_SECS=0
	case $label/$test in
	verbs/stream)
		tool=ib_write_bw opts=(-D "$SECS") PERF_SECS=$SECS ;;
	verbs-ev/stream)
		# No duration mode with events: about SECS x 10 MB.
		iters=${BENCH_IB_ITERS:-$((${SECS%.*} * 10000000 / sz))}
		[ "$iters" -ge 100 ] || iters=100
		[ "$iters" -le 50000 ] || iters=50000
		tool=ib_send_bw opts=(-n "$iters" -e) ;;
	verbs/par)
		tool=ib_write_bw kind=par sz=65536 opts=(-q "$PAR" -D "$SECS") PERF_SECS=$SECS ;;
	verbs/rtt)
		tool=ib_write_lat kind=lat opts=(-n "$ROUNDS") ;;
	verbs-ev/rtt)
		tool=ib_send_lat kind=lat opts=(-n "$ROUNDS" -e) ;;
	*)
		return 0 ;;
	esac
	opts=(-d "$IBDEV" -i 1 "${GID[@]}" -s "$sz" "${opts[@]}" -p "$PERF_PORT")
	SRV=(timeout "$((PERF_TIMEOUT + 30))" "$tool" "${opts[@]}")
	CLI=(perf_client "$kind" "$sz" "$tool" "${opts[@]}")
	measure "$label" "$test" "$3"
	SRV=()
}

# ------------------------------------------------------------ transports

# SMC-R on Soft-RoCE needs SMC-Rv2: a pnet entry eth0 <-> rxe0 and the
# same user-defined EID on both hosts.
smc_setup() {
	local log=$VISOCK_RESULTS/smc-setup.txt
	# Debian's kernels since 6.18 have no SMC: CONFIG_SMC depends on
	# CONFIG_DIBS there, which they leave unset.
	if [ ! -d /sys/module/smc ] && ! modinfo smc >/dev/null 2>&1; then
		echo "SMC-R not available on this kernel (CONFIG_SMC unset)"
		return 1
	fi
	case $KVER in
	6.1.*)
		echo "kernel $KVER: SMC-R on rxe needs SMC-Rv2 with a user EID, and on 6.1 the first SMC-Rv2 connection hung in the test bed; measured on 6.12 only"
		return 1 ;;
	esac
	if ! modprobe smc >"$log" 2>&1; then
		echo "modprobe smc failed: $(tr '\n' ' ' <"$log")"
		return 1
	fi
	if ! "$SMC_SETUP" pnet NET1 "$NETDEV" "$IBDEV" 1 >>"$log" 2>&1 ||
	   ! "$SMC_SETUP" ueid "$EID" >>"$log" 2>&1; then
		tr '\n' ' ' <"$log"
		echo
		return 1
	fi
	echo ok
}

# both_ok NAME WHY: publish this host's readiness for a transport and
# tell whether both hosts are ready (else WHY_BOTH says why).
both_ok() {
	sync_point "$1" "$2"
	if [ "$2" != ok ]; then
		WHY_BOTH="host $VISOCK_HOST: $2"
	elif [ "$PEER_STATUS" != ok ]; then
		WHY_BOTH="host $VISOCK_PEER_HOST: $PEER_STATUS"
	else
		return 0
	fi
	say "not measured: $WHY_BOTH"
	return 1
}

# The transports need setting up on both hosts; one that is not ready
# on either host gets a NOTE and is left out of ACTIVE on both.
smc_ready() {
	local why
	why=$(smc_setup) || true
	both_ok smc-setup "$why" || { note smc-r all "" "$WHY_BOTH"; return 1; }
}

rsocket_ready() {
	local why=ok
	if [ ! -r "$RSPRELOAD" ]; then
		why="no $RSPRELOAD (Debian package librdmacm1)"
	elif ! modprobe rdma_ucm 2>"$VISOCK_RESULTS/rdma_ucm.txt"; then
		why="modprobe rdma_ucm failed: $(tr '\n' ' ' <"$VISOCK_RESULTS/rdma_ucm.txt")"
	fi
	both_ok rsocket-setup "$why" || { note rsocket all "" "$WHY_BOTH"; return 1; }
}

VISOCK_LOADED=0 VISOCK_OK=
visock_ready() {
	[ -z "$VISOCK_OK" ] || { [ "$VISOCK_OK" = 1 ]; return; }
	VISOCK_OK=0
	local why=ok ko=${VISOCK_SRC:-/nonexistent}/build/$KVER/visock.ko
	modprobe ib_core
	# The bed loads the freshly built module; real hosts may have it
	# loaded or installed (DKMS) already.
	if [ -d /sys/module/visock ]; then
		VISOCK_LOADED=1
	elif [ -f "$ko" ]; then
		insmod "$ko" 2>"$VISOCK_RESULTS/insmod.txt" || why="insmod $ko failed"
	else
		modprobe visock 2>"$VISOCK_RESULTS/insmod.txt" || why="modprobe visock failed"
	fi
	if [ "$why" != ok ]; then
		why="$why: $(tr '\n' ' ' <"$VISOCK_RESULTS/insmod.txt")"
	else
		sysctl -qw net.visock.enable=1
		sysctl -qw net.visock.rbuf_default="$RBUF"
		say "visock receive rings: $(sysctl -n net.visock.rbuf_default) bytes"
		if [ -e /proc/sys/net/visock/lazy_bytes ]; then
			sysctl -qw net.visock.lazy_bytes="$LAZY"
			say "visock lazy start: $(sysctl -n net.visock.lazy_bytes) bytes"
		fi
	fi
	both_ok visock-setup "$why" || { note visock all "" "$WHY_BOTH"; return 1; }
	VISOCK_OK=1
}

# Kernel TLS needs the tls module (CONFIG_TLS) on both hosts.
KTLS_OK=
ktls_ready() {
	local why=ok
	if [ -n "$KTLS_OK" ]; then
		[ "$KTLS_OK" = 1 ] || note "$1" all "" "$KTLS_WHY"
		[ "$KTLS_OK" = 1 ]
		return
	fi
	KTLS_OK=0
	if [ ! -d /sys/module/tls ] && ! modprobe tls 2>"$VISOCK_RESULTS/tls.txt"; then
		why="no kernel TLS: modprobe tls failed: $(tr '\n' ' ' <"$VISOCK_RESULTS/tls.txt")"
	fi
	KTLS_WHY=$why
	both_ok ktls-setup "$why" || { KTLS_WHY=$WHY_BOTH; note "$1" all "" "$WHY_BOTH"; return 1; }
	KTLS_OK=1
}

# visock's transforms need an authenticated handshake: the same
# pre-shared key on both hosts (fixed, for the benchmark only) and
# net.visock.auth 1.  Each transport asks for its transform with the
# VISOCK_TRANSFORM socket option (visock_bench -X), so that plain visock
# runs without one in the same run.
BENCH_PSK=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
BENCH_PSK_ID=4242
XFORM_OK= AUTH_SAVED=
xform_ready() {
	local why=ok ctl=${VISOCK_SRC:-/nonexistent}/tools/visock/visockctl
	if [ -n "$XFORM_OK" ]; then
		[ "$XFORM_OK" = 1 ] || note "$1" all "" "$XFORM_WHY"
		[ "$XFORM_OK" = 1 ]
		return
	fi
	XFORM_OK=0 XFORM_WHY="visock is not ready on both hosts"
	visock_ready || { note "$1" all "" "$XFORM_WHY"; return 1; }
	if [ ! -x "$ctl" ]; then
		ctl=$(command -v visockctl || echo "$ctl")
	fi
	if [ ! -e /proc/sys/net/visock/transform ]; then
		why="this visock has no transforms (no net.visock.transform)"
	elif ! "$ctl" key add "$BENCH_PSK_ID" name bench secret-file - \
		<<<"$BENCH_PSK" >"$VISOCK_RESULTS/psk.txt" 2>&1; then
		why="visockctl key add failed: $(tr '\n' ' ' <"$VISOCK_RESULTS/psk.txt")"
	else
		AUTH_SAVED=$(sysctl -n net.visock.auth)
		[ "$AUTH_SAVED" != 0 ] || sysctl -qw net.visock.auth=1
		say "visock transforms: key $BENCH_PSK_ID, auth $(sysctl -n net.visock.auth)"
	fi
	XFORM_WHY=$why
	both_ok xform-setup "$why" || { XFORM_WHY=$WHY_BOTH; note "$1" all "" "$WHY_BOTH"; return 1; }
	XFORM_OK=1
}

xform_cleanup() {
	local ctl=${VISOCK_SRC:-/nonexistent}/tools/visock/visockctl
	[ -n "$AUTH_SAVED" ] || return 0
	[ -x "$ctl" ] || ctl=visockctl
	"$ctl" key del "$BENCH_PSK_ID" >/dev/null 2>&1 || say "visockctl key del failed"
	sysctl -qw net.visock.auth="$AUTH_SAVED"
}

# for_each TEST SIZE ARGS...: TEST of every active transport, one after
# the other, so that all of them see about the same host load.
for_each() {
	local test=$1 size=$2 l
	shift 2
	for l in "${ACTIVE[@]}"; do
		if is_sock "$l"; then
			case $test in
			iperf3|sockperf)
				# Unmodified programs get no kernel TLS keys or
				# transform of their own: no such rows.
				[ "${#XOPT[@]}" = 0 ] || continue
				app_measure "$l" "$test" ;;
			*) sock_measure "$l" "$test" "$size" "$@" ;;
			esac
		else
			perf_measure "$l" "$test" "$size"
		fi
	done
}

if [ ! -x "$BENCH" ] || [ ! -x "$SMC_SETUP" ]; then
	echo "bench.sh: build first: make -C tools/testing/bench" >&2
	exit 1
fi
[ -d "$PORTDIR" ] || { echo "bench.sh: no RDMA device $IBDEV (BENCH_IBDEV)" >&2; exit 1; }
: >"$OUT"
result "INFO kernel=$KVER host=$VISOCK_HOST peer=$VISOCK_PEER_IP date=$(date -u +%Y-%m-%dT%H:%M:%SZ) secs=$SECS rounds=$ROUNDS warmup=$WARMUP par=$PAR transports=$(xargs <<<"$TRANSPORTS" | tr ' ' ,) tests=$(xargs <<<"$TESTS" | tr ' ' ,)"
say "kernel $KVER, $IBDEV: $(cat "$PORTDIR/state")"

ACTIVE=()
if transport_wanted tcp; then ACTIVE+=(tcp); fi
for l in ktls ktls-chacha; do
	if transport_wanted "$l" && ktls_ready "$l"; then ACTIVE+=("$l"); fi
done
if transport_wanted visock && visock_ready; then ACTIVE+=(visock); fi
for l in visock-gcm visock-chacha visock-gmac; do
	if transport_wanted "$l" && xform_ready "$l"; then ACTIVE+=("$l"); fi
done
if transport_wanted smc && smc_ready; then ACTIVE+=(smc-r); fi
if transport_wanted rsocket && rsocket_ready; then ACTIVE+=(rsocket); fi
if transport_wanted verbs; then ACTIVE+=(verbs); fi
if transport_wanted verbs-ev; then ACTIVE+=(verbs-ev); fi
say "transports: ${ACTIVE[*]} (rsocket: LD_PRELOAD=$RSPRELOAD)"
if [ "$VISOCK_HOST" = b ]; then
	for l in "${ACTIVE[@]}"; do
		if is_sock "$l"; then start_server "$l"; fi
	done
fi
sync_point servers

# Test by test, each over every transport.  CRR first: its first
# connection is the first one between the hosts over that transport.
if test_wanted crr; then for_each crr "$CRR_MSG" -C -t "$SECS" -m "$CRR_MSG"; fi
if test_wanted crr-keep; then for_each crr-keep "$CRR_MSG" -C -k -t "$SECS" -m "$CRR_MSG"; fi
if test_wanted rtt; then
	for sz in $MSGS; do for_each rtt "$sz" -P -r "$ROUNDS" -W "$WARMUP" -m "$sz"; done
fi
if test_wanted stream; then
	for sz in $WSIZES; do for_each stream "$sz" -S -t "$SECS" -w "$sz"; done
fi
if test_wanted par; then for_each par "$PAR" -N "$PAR" -t "$SECS" -w 65536; fi
if test_wanted iperf3; then for_each iperf3 65536; fi
if test_wanted sockperf; then for_each sockperf 64; fi

[ "$VISOCK_HOST" = a ] || stop_servers
if [ "$VISOCK_HOST" = a ] && [[ " ${ACTIVE[*]} " == *" visock "* ]]; then
	say "/proc/net/visock after the runs (zero fallback counters left out)"
	grep -v '^fallback_.* 0$' /proc/net/visock || true
	[ "$(awk '$1 == "rdma_bytes_sent" { print $2 }' /proc/net/visock)" != 0 ] ||
		note visock all "" "no payload crossed RDMA (rdma_bytes_sent 0): the connections fell back to TCP"
fi
if [ "$VISOCK_HOST" = a ] && [[ " ${ACTIVE[*]} " == *" smc-r "* ]]; then
	# rxe packets prove SMC-R did not fall back to TCP.
	grep -q "^RESULT label=smc-r .*a_pkts=[0-9]\{3,\}" "$OUT" ||
		note smc-r all "" "few or no RoCE packets: the connections may have fallen back to TCP"
fi
sync_point end
xform_cleanup
if [ "$VISOCK_OK" = 1 ] && [ "$VISOCK_LOADED" = 0 ]; then
	rmmod visock || say "rmmod visock failed"
fi
if [ "$VISOCK_HOST" = a ]; then
	say "results ($KVER)"
	table "$OUT"
fi
