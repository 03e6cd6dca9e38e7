#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# peer-kill.sh - guest job: host b dies in the middle of RDMA streams.
#
#   vm.sh run --kernel K -- tools/testing/vm/peer-kill.sh
#
# Both hosts load visock (the build for the running kernel under
# $VISOCK_SRC/build, as run_tests.sh does) with net.visock.enable=1.
# Host b runs "visock_peer_kill serve": once the streams are going it
# leaves its exit status and kernel log in the results and powers off
# (sysrq o), so vm.sh sees a finished job and a clean log for it.  Host a
# runs "visock_peer_kill survive" (KTAP: its connections end with an
# error in time, and everything is freed after close), then checks that
# visock unloads.  See visock_peer_kill.c.
set -u

T=$VISOCK_SRC/tools/testing/selftests/net/visock
PORT=7795
sysctl_dir=/proc/sys/net/visock

load() {
	local ko=$VISOCK_SRC/build/$(uname -r)/visock.ko
	modprobe ib_core 2>/dev/null
	if [ -f "$ko" ]; then
		insmod "$ko"
	else
		modprobe visock
	fi
}

if ! load; then
	echo "peer-kill: cannot load visock" >&2
	exit 1
fi
echo 1 >"$sysctl_dir/enable"
# Soft-RoCE on a busy emulated host: the test suite's ACK timeout.
echo 19 >"$sysctl_dir/rdma_ack_timeout"
echo 1 >"$sysctl_dir/lgr_max_links"
# Idle readers and a writer waiting for a full ring post nothing: the
# QP's keepalive finds the dead peer.
echo "${VISOCK_TEST_KEEPALIVE_MS:-2000}" >"$sysctl_dir/lgr_keepalive_ms"
# As run_tests.sh does on a KASAN kernel: longer bounds.
if [ -z "${VISOCK_TEST_TIME_SCALE:-}" ] &&
   grep -qw kasan_report /proc/kallsyms 2>/dev/null; then
	export VISOCK_TEST_TIME_SCALE=4
fi

if [ "$VISOCK_HOST" = b ]; then
	exec "$T/visock_peer_kill" serve "$PORT"
fi

"$T/visock_peer_kill" survive "$VISOCK_PEER_IP" "$PORT"
rc=$?

# The survivor unloads cleanly: nothing holds the module any more.
echo "TAP version 13"
echo "1..1"
if out=$(rmmod visock 2>&1); then
	echo "ok 1 peer_kill.unload"
else
	echo "# rmmod visock: $out"
	echo "not ok 1 peer_kill.unload"
	rc=1
fi
exit "$rc"
