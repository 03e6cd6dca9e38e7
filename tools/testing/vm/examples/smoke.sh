#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Smoke test for the two-host test bed: shows the guest's identity and
# network, checks that rxe0 is up on both hosts and runs a short RDMA WRITE
# latency test from a (client) to b (server).
#
#   tools/testing/vm/vm.sh run --kernel 6.1 -- tools/testing/vm/examples/smoke.sh

set -euo pipefail

echo "host $VISOCK_HOST: $(uname -r), $(hostname)"
rdma link
ip -brief addr show eth0
ping -c 2 "$VISOCK_PEER_IP"
ping -c 2 "$VISOCK_PEER_IP6"

ibv_devinfo -d rxe0 | tee devinfo.txt
grep -q PORT_ACTIVE devinfo.txt

# The rxe packet counters prove that the RDMA traffic crossed the link.
counters() {
	local c=/sys/class/infiniband/rxe0/ports/1/hw_counters
	echo "rxe0 $1: sent_pkts=$(cat $c/sent_pkts) rcvd_pkts=$(cat $c/rcvd_pkts)"
}
counters before
trap 'counters after' EXIT

if [ "$VISOCK_HOST" = b ]; then
	# Server: serves exactly one client, then exits.
	ib_write_lat -d rxe0 -s 64 -n 100
else
	# Client: the server may not be listening yet, so retry for a while.
	for try in $(seq 30); do
		if ib_write_lat -d rxe0 -s 64 -n 100 "$VISOCK_PEER_IP"; then
			exit 0
		fi
		echo "client attempt $try failed, retrying"
		sleep 1
	done
	exit 1
fi
