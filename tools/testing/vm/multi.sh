#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# multi.sh - guest job of the four-host test bed: one host and several
# peer hosts at once.
#
#   vm.sh run --hosts 4 --kernel K -- tools/testing/vm/multi.sh [gap=MS]
#	[bytes=N] [peers=N]
#
# Every host loads visock (the build for the running kernel under
# $VISOCK_SRC/build) and plays its role in three stages, which meet at
# marker files in the bed's results share ($VISOCK_RESULTS_ROOT/HOST/):
#
#   fanin   host a serves, b, c and d stream to it at once (4 connections
#           each, every byte checked).  With lgr_max_links=2 and
#           lgr_link_conns=2, host a must show one link group per peer
#           host of exactly 2 QPs (the per-peer cap, while the host has
#           6).  Host a measures its memory with no connection, with one
#           per peer host and with four per peer host: the costs per
#           peer host and per connection (costs.txt in its results).
#   fanout  host a streams to b, c and d at once (2 connections each).
#   kill    b, c and d stream to a again; d powers itself off in the
#           middle (sysrq o).  b and c must finish with every byte right
#           and without a stall; a's connections from d must end with an
#           error, and d's link group must be freed.
#
# Arguments: gap=MS (the hang detector's bound, default 30000), bytes=N
# (bytes per connection, default 1 MiB; 4 times that in the kill stage),
# peers=N (peer hosts host a must see, default 3: another number makes
# the test fail), stall=SECS (host a stops its fanin server process for
# that long once the streams run: the clients' hang detector must fail
# them if SECS is longer than the gap).
set -u

GAP=30000 BYTES=1048576 PEERS=3 STALL=0
for arg in "$@"; do
	case "$arg" in
	gap=*) GAP=${arg#*=} ;;
	stall=*) STALL=${arg#*=} ;;
	bytes=*) BYTES=${arg#*=} ;;
	peers=*) PEERS=${arg#*=} ;;
	*) echo "multi.sh: unknown argument $arg" >&2; exit 2 ;;
	esac
done

T=$VISOCK_SRC/tools/testing/selftests/net/visock
M=$T/visock_multi
CTL=$VISOCK_SRC/tools/visock/visockctl
R=$VISOCK_RESULTS_ROOT
me=$VISOCK_HOST
sysctl_dir=/proc/sys/net/visock
WAIT=600	# seconds to wait for another host at a meeting point

ip_of() { echo "10.77.0.$(( $(printf '%d' "'$1") - 96 ))"; }

results=()
check() { # OK(0/1) NAME [DIAG]
	if [ "$1" = 0 ]; then
		results+=("ok ${2}")
	else
		[ -z "${3:-}" ] || echo "# $2: $3"
		results+=("not ok ${2}")
	fi
}

finish() {
	local i=0 r rc=0
	echo "TAP version 13"
	echo "1..${#results[@]}"
	for r in "${results[@]}"; do
		i=$((i + 1))
		case "$r" in
		"not ok "*) echo "not ok $i ${r#not ok }"; rc=1 ;;
		*) echo "ok $i ${r#ok }" ;;
		esac
	done
	exit $((rc | ${1:-0}))
}

mark() { : >"$R/$me/$1"; }
# wait_for HOST... -- NAME: every HOST left marker NAME.
wait_for() {
	local h n=$(( WAIT * 5 ))
	local name=${*: -1}
	for h in "${@:1:$#-2}"; do
		while [ ! -e "$R/$h/$name" ]; do
			n=$((n - 1))
			if [ "$n" -le 0 ]; then
				echo "# host $h did not reach $name"
				return 1
			fi
			sleep 0.2
		done
	done
}

load() {
	local ko=${VISOCK_KO:-$VISOCK_SRC/build/$(uname -r)/visock.ko}
	modprobe ib_core 2>/dev/null
	if [ -f "$ko" ]; then insmod "$ko"; else modprobe visock; fi
}

proc() { awk -v k="$1" '$1 == k { print $2 }' /proc/net/visock; }
meminfo() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }

# snap LABEL: the counters and kernel memory now, in mem-LABEL.txt.
snap() {
	local f=$VISOCK_RESULTS/mem-$1.txt k
	sync
	echo 2 >/proc/sys/vm/drop_caches
	sleep 1
	{
		for k in qps links_up registered_bytes qp_queue_bytes \
			 lgr_connections sockets; do
			echo "$k $(proc "$k")"
		done
		for k in Slab SUnreclaim VmallocUsed Percpu MemAvailable; do
			echo "${k}_kB $(meminfo "$k")"
		done
		echo "rdma_qps $(rdma resource show qp 2>/dev/null | grep -c 'lqpn')"
	} >"$f"
	sed "s/^/# $1: /" "$f"
}

val() { awk -v k="$2" '$1 == k { print $2 }' "$VISOCK_RESULTS/mem-$1.txt"; }

# links_to IP: the QPs (distinct QPNs; visockctl lists one link per
# connection) to the peer host with that address, "" if none.
links_to() {
	"$CTL" peers 2>/dev/null | awk -v g="::ffff:$1" '$1 == g {
		n = split($NF, v, ",")
		for (i = 1; i <= n; i++) { split(v[i], q, "/"); u[q[1]] = 1 }
		for (k in u) c++
		print c }'
}

if ! load; then
	echo "# multi: cannot load visock"
	check 1 multi.load
	finish 1
fi
echo 1 >"$sysctl_dir/enable"
echo 19 >"$sysctl_dir/rdma_ack_timeout"
echo 2 >"$sysctl_dir/lgr_max_links"
echo 2 >"$sysctl_dir/lgr_link_conns"
echo 2000 >"$sysctl_dir/lgr_keepalive_ms"
if [ -z "${VISOCK_TEST_TIME_SCALE:-}" ] &&
   grep -qw kasan_report /proc/kallsyms 2>/dev/null; then
	export VISOCK_TEST_TIME_SCALE=4
fi
rc=0

# ---- fanin: a serves b, c and d --------------------------------------------
if [ "$me" = a ]; then
	snap idle
	rb0=$(proc rdma_bytes_rcvd) tb0=$(proc tcp_bytes_rcvd)
	"$M" -n fanin -G "$GAP" -p "$PEERS" -r "$R/a/fanin.listen" \
		serve 7801 12 >"$VISOCK_RESULTS/fanin.server" 2>&1 &
	srv=$!
	wait_for b c d -- fanin.conn1 || rc=1
	sleep 2
	snap peer1
	mark fanin.go1
	wait_for b c d -- fanin.conn4 || rc=1
	sleep 2
	snap peer4
	"$CTL" peers | sed 's/^/# /'
	bad=''
	for h in b c d; do
		n=$(links_to "$(ip_of "$h")")
		echo "# links to host $h: ${n:-none}"
		[ "${n:-0}" = 2 ] || bad+=" $h:${n:-0}"
	done
	npeers=$("$CTL" peers | awk 'NR > 1' | grep -c .)
	check "$([ -z "$bad" ] && [ "$npeers" = "$PEERS" ]; echo $?)" \
		multi.fanin.link_group_per_peer \
		"want $PEERS peers of 2 links each, have $npeers peers, wrong:$bad"
	check "$([ "$(val peer4 qps)" = 6 ]; echo $?)" multi.fanin.peer_cap \
		"$(val peer4 qps) QPs, want 2 per peer host (lgr_max_links)"
	mark fanin.go
	if [ "$STALL" -gt 0 ]; then
		sleep 2
		echo "# fanin: stopping the server for $STALL s"
		kill -STOP "$srv"
		sleep "$STALL"
		kill -CONT "$srv"
	fi
	wait "$srv"
	src=$?
	cat "$VISOCK_RESULTS/fanin.server"
	check "$src" multi.fanin.server
	rb=$(( $(proc rdma_bytes_rcvd) - rb0 )) tb=$(( $(proc tcp_bytes_rcvd) - tb0 ))
	echo "# fanin: $rb bytes in over RDMA, $tb over TCP"
	check "$([ "$rb" -ge $((12 * BYTES)) ] && [ "$tb" = 0 ]; echo $?)" \
		multi.fanin.all_rdma "$rb RDMA bytes (want >= $((12 * BYTES))), $tb TCP bytes"
	mark fanin.done
	# The costs, from the three snapshots.
	# idle -> peer1: 3 QPs and 3 connections; peer1 -> peer4: 3 QPs
	# and 9 connections.  So per connection ((p4 - p1) - (p1 - i)) / 6,
	# per QP (p1 - i) / 3 minus that.
	{
		printf '%-16s %9s %9s %9s %10s %10s %9s\n' what idle 3x1conn \
			3x4conns per_peer1 per_conn per_qp
		for k in qps registered_bytes qp_queue_bytes SUnreclaim_kB \
			 Slab_kB VmallocUsed_kB Percpu_kB MemAvailable_kB rdma_qps; do
			i=$(val idle "$k") p1=$(val peer1 "$k") p4=$(val peer4 "$k")
			awk -v k="$k" -v i="$i" -v p1="$p1" -v p4="$p4" 'BEGIN {
				c = ((p4 - p1) - (p1 - i)) / 6
				printf "%-16s %9d %9d %9d %10.1f %10.1f %9.1f\n",
					k, i, p1, p4, (p1 - i) / 3, c, (p1 - i) / 3 - c }'
		done
	} >"$VISOCK_RESULTS/costs.txt"
	sed 's/^/# cost: /' "$VISOCK_RESULTS/costs.txt"
else
	wait_for a -- fanin.listen || rc=1
	"$M" -n "fanin_$me" -G "$GAP" -1 "$R/$me/fanin.conn1" -2 "$R/a/fanin.go1" \
		-r "$R/$me/fanin.conn4" -g "$R/a/fanin.go" \
		stream 7801 4 "$BYTES" "$(ip_of a)" || rc=1
	wait_for a -- fanin.done || rc=1
fi

# ---- fanout: a streams to b, c and d ---------------------------------------
if [ "$me" = a ]; then
	wait_for b c d -- fanout.listen || rc=1
	"$M" -n fanout -G "$GAP" -r "$R/a/fanout.conn" -g "$R/a/fanout.go" \
		stream 7803 2 "$BYTES" "$(ip_of b)" "$(ip_of c)" "$(ip_of d)" &
	cli=$!
	wait_for a -- fanout.conn || rc=1
	"$CTL" peers | sed 's/^/# /'
	bad=''
	for h in b c d; do
		n=$(links_to "$(ip_of "$h")")
		[ "${n:-0}" -ge 1 ] || bad+=" $h"
	done
	check "$([ -z "$bad" ]; echo $?)" multi.fanout.link_group_per_peer \
		"no link group to:$bad"
	mark fanout.go
	wait "$cli" || rc=1
	mark fanout.done
else
	"$M" -n "fanout_$me" -G "$GAP" -p 1 -r "$R/$me/fanout.listen" \
		serve 7803 2 || rc=1
	wait_for a -- fanout.done || rc=1
fi

# ---- kill: d dies while b and c stream to a ---------------------------------
KB=$((4 * BYTES))
if [ "$me" = a ]; then
	"$M" -n kill -G "$GAP" -p "$PEERS" -d "$(ip_of d)" -r "$R/a/kill.listen" \
		serve 7802 6 || rc=1
	# The dead host's group goes once its connections are closed: a
	# QP whose keepalive failed is freed with its last connection.
	t0=$(date +%s)
	n=''
	for _ in $(seq 600); do
		n=$(links_to "$(ip_of d)")
		[ -n "$n" ] || break
		sleep 0.2
	done
	echo "# kill: links to host d ${n:-none}, $(( $(date +%s) - t0 )) s after the server ended"
	"$CTL" peers | sed 's/^/# /'
	check "$([ -z "$n" ]; echo $?)" multi.kill.dead_group_freed \
		"host d's link group still has $n links"
	mark kill.done
elif [ "$me" = d ]; then
	wait_for a -- kill.listen || rc=1
	# Dies (sysrq o) after a quarter of its bytes; never returns.
	"$M" -n kill_d -G "$GAP" -k "$((2 * KB / 4))" \
		stream 7802 2 "$KB" "$(ip_of a)"
	rc=1
else
	wait_for a -- kill.listen || rc=1
	"$M" -n "kill_$me" -G "$GAP" stream 7802 2 "$KB" "$(ip_of a)" || rc=1
	wait_for a -- kill.done || rc=1
fi

if [ "$me" = a ]; then
	# Everything is freed once the connections are closed and idle.
	for _ in $(seq 300); do
		[ "$(proc sockets)" = 0 ] && [ "$(proc lgr_connections)" = 0 ] && break
		sleep 0.2
	done
fi
out=$(rmmod visock 2>&1)
check $? "multi.unload" "rmmod visock: $out"
finish "$rc"
