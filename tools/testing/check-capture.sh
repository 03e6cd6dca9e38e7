#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check-capture.sh [KERNEL] - what the emulated link carries of a stream
# with and without a transform (make check runs it per bed kernel).
#
# Boots the two-host bed (kernel 6.1 or 6.12, default 6.12) with the link
# captured (vm.sh run --capture) and runs the kselftests
# security.capture_none, security.capture_gcm_aes_128 and
# security.capture_chacha20_poly1305 (run_tests.sh --pick): each streams
# a marker text over RDMA between capture datagrams (visock_security.c).
# Then tools/testing/vm/capture-check.py reads both guests' captures:
# the marker of capture_none in the RoCEv2 payloads between its
# datagrams, the markers of the AEADs nowhere in the capture, and their
# RoCEv2 packets carrying at least the stream.  Its KTAP goes to
# <results>/capture.ktap (also when the bed failed: a missing capture is
# a failed result there), the guests' KTAP to <results>/{a,b}/console.log.
#
# Expects the module and the selftests built (make modules-testbed
# selftests).  Environment: VISOCK_RESULTS_DIR (default
# build/vm-results/<kver>-capture), VISOCK_VM_INSTANCE (test bed
# number), VISOCK_CAPTURE_TIMEOUT (default 600 s).  Cost: one boot of the
# bed and about 1 MiB of traffic; the captures are a few MiB.
# Exit status 0 only if the bed and every capture result passed.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$ROOT/tools/testing
SERIES=${1:-6.12}
TESTS=(capture_none capture_gcm_aes_128 capture_chacha20_poly1305)

kver=$("$T/vm/vm.sh" kver "$SERIES") || exit 1
res=${VISOCK_RESULTS_DIR:-$ROOT/build/vm-results/$kver-capture}
expect=()
for t in "${TESTS[@]}"; do expect+=(--expect "$t"); done

VISOCK_RESULTS_DIR=$res "$T/vm/vm.sh" run --capture --kernel "$SERIES" \
	--timeout "${VISOCK_CAPTURE_TIMEOUT:-600}" -- \
	"$T/selftests/net/visock/run_tests.sh" --pick module.load \
	--pick 'security.capture_*'
bed=$?

mkdir -p "$res"
echo "check-capture: captures $(du -ch "$res"/[ab]/link.pcap 2>/dev/null | tail -1 | cut -f1)"
python3 "$T/vm/capture-check.py" "${expect[@]}" \
	"$res/a/link.pcap" "$res/b/link.pcap" >"$res/capture.ktap" 2>&1
chk=$?
cat "$res/capture.ktap"
[ "$bed" = 0 ] && [ "$chk" = 0 ]
