#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: two emulated RDMA hosts (QEMU + Soft-RoCE, kernel 6.12 from
# bookworm-backports) where an unmodified iperf3 client and server, started
# through visock_run, talk over visock.  The output shows the handshake,
# the queue pairs, the visock counters and the RDMA packet counters.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T="$ROOT/tools/testing"
KERNEL=${KERNEL:-6.12}

"$T/deps.sh" demo --kernel "$KERNEL"
"$T/build-module.sh" "$KERNEL"
make -s -C "$ROOT/tools/visock"
VISOCK_VM_INSTANCE=${VISOCK_VM_INSTANCE:-9} \
	"$T/vm/vm.sh" run --kernel "$KERNEL" --timeout 600 -- "$T/demo-guest.sh"
