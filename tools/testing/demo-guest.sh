#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest half of make demo (runs on both emulated hosts; see demo.sh).
# Leaves /proc/net/visock and the RoCE packets this host sent in
# $VISOCK_RESULTS/visock.txt, for the summary demo.sh prints.
set -euo pipefail

SRC=$VISOCK_SRC
RUN="$SRC/tools/visock/visock_run"
CNT=/sys/class/infiniband/rxe0/ports/1/hw_counters
say() { echo "--- $*"; }

modprobe ib_core
insmod "$SRC/build/$(uname -r)/visock.ko"
sysctl -qw net.visock.enable=1
pkts0=$(cat $CNT/sent_pkts)

if [ "$VISOCK_HOST" = b ]; then
	say "host b: iperf3 server (unmodified binary, via visock_run)"
	timeout 120 "$RUN" iperf3 -s -1 >"$VISOCK_RESULTS/iperf3-server.txt" 2>&1 &
	srv=$!
	sleep 9
	say "host b: RDMA queue pairs while the test runs"
	rdma resource show qp | grep -v GSI || true
	wait $srv || true
else
	sleep 3
	say "host a: iperf3 -c $VISOCK_PEER_IP -t 10 (unmodified binary, via visock_run)"
	VISOCK_PRELOAD_DEBUG=1 timeout 120 "$RUN" iperf3 -c "$VISOCK_PEER_IP" -t 10 -l 64K
	sleep 2
fi

say "host $VISOCK_HOST: /proc/net/visock (counters that are 0 left out)"
cat /proc/net/visock >"$VISOCK_RESULTS/visock.txt"
awk '$2 != 0' "$VISOCK_RESULTS/visock.txt"
pkts1=$(cat $CNT/sent_pkts)
echo "roce_pkts_sent $((pkts1 - pkts0))" >>"$VISOCK_RESULTS/visock.txt"
say "host $VISOCK_HOST: RoCE packets sent by rxe0 during the demo: $((pkts1 - pkts0))"
sleep 2
rmmod visock
