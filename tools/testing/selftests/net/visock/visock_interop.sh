#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Mixed visock releases and a live module upgrade, on the two-host bed
# (tools/testing/check-interop.sh boots it; both hosts run this script):
#
#   host a (10.77.0.1)                          host b (10.77.0.2)
#   module A                                    module B
#   serve :7711  <--- client of b ------------  connect a:7711
#   connect b:7711 -------- client of a --->    serve :7711
#
# Host X loads $VISOCK_KO (vm.sh --module-a/--module-b, e.g. the previous
# release's visock.ko) or else this tree's build/<kver>/visock.ko.  With
# one old and one new module, phase 1 runs old client -> new server and
# new client -> old server at the same time.
#
#   1. interop: NCONN connections each way (visock_interop, every byte
#      checked both ways, no progress in 30 s fails).  Each host's
#      /proc/net/visock must show 2 * NCONN connections on RDMA, no
#      fallback and no failover.
#   2. upgrade: with visock sockets open (visock_interop hold), rmmod is
#      refused ("in use"); /proc/net/visock counts them and this tree's
#      visockctl sockets lists them (sock_diag: old modules too); once
#      they are closed, rmmod succeeds and this tree's module is loaded
#      in its place (an old module is upgraded, a new one reloaded).
#   3. interop again, both hosts on this tree's module.
#
# Prints KTAP; exits non-zero if any step failed.
# Environment: VISOCK_INTEROP_NCONN (connections each way, default 5).

set -u

SRC=${VISOCK_SRC:?run on the test bed (tools/testing/check-interop.sh)}
HERE=$SRC/tools/testing/selftests/net/visock
PROG=$HERE/visock_interop
CTL=$SRC/tools/visock/visockctl
NEW_KO=$SRC/build/$(uname -r)/visock.ko
KO=${VISOCK_KO:-$NEW_KO}
NCONN=${VISOCK_INTEROP_NCONN:-5}
PROC=/proc/net/visock
WAIT_SECS=300
ntest=0
nfail=0

ok() { ntest=$((ntest + 1)); echo "ok $ntest $1"; }
not_ok() { ntest=$((ntest + 1)); nfail=$((nfail + 1)); echo "not ok $ntest $1"; }
note() { echo "# $*"; }

# Barrier with the peer: both hosts reach step NAME.
barrier() { # NAME
	local i
	: >"$VISOCK_RESULTS/barrier.$1"
	for ((i = 0; i < WAIT_SECS * 5; i++)); do
		[ -e "$VISOCK_PEER_RESULTS/barrier.$1" ] && return 0
		sleep 0.2
	done
	note "the peer did not reach '$1' within $WAIT_SECS s"
	return 1
}

counter() { # NAME -> value in /proc/net/visock (0 if absent)
	awk -v n="$1" '$1 == n { v = $2 } END { print v + 0 }' "$PROC"
}

module_load() { # KO
	modprobe ib_core 2>/dev/null
	if ! insmod "$1"; then
		note "insmod $1 failed"
		return 1
	fi
	sysctl -qw net.visock.enable=1
	note "loaded $1 (srcversion $(cat /sys/module/visock/srcversion 2>/dev/null))"
}

# One round: serve NCONN on this host, connect NCONN to the peer, then
# check the counters of this host.
interop_round() { # LABEL PORT
	local label=$1 port=$2 srv rc_s rc_c f d bad=0 seen=0
	local before=$VISOCK_RESULTS/proc.$port.before after=$VISOCK_RESULTS/proc.$port.after
	sort "$PROC" >"$before"
	"$PROG" serve "$port" "$NCONN" >"$VISOCK_RESULTS/serve.$port.log" 2>&1 &
	srv=$!
	barrier "listen.$port" || bad=1
	"$PROG" connect "$VISOCK_PEER_IP" "$port" "$NCONN" \
		>"$VISOCK_RESULTS/connect.$port.log" 2>&1
	rc_c=$?
	wait "$srv"
	rc_s=$?
	sed 's/^/# /' "$VISOCK_RESULTS/connect.$port.log" "$VISOCK_RESULTS/serve.$port.log"
	sort "$PROC" >"$after"
	if [ "$rc_c" = 0 ] && [ "$bad" = 0 ]; then
		ok "$label.client_to_$VISOCK_PEER_HOST"
	else
		not_ok "$label.client_to_$VISOCK_PEER_HOST"
	fi
	if [ "$rc_s" = 0 ]; then
		ok "$label.server_for_$VISOCK_PEER_HOST"
	else
		not_ok "$label.server_for_$VISOCK_PEER_HOST"
	fi
	# How the connections were carried, from this host's counters (no
	# process substitution: the guests have no /dev/fd).
	join "$before" "$after" | awk '{ print $1, $3 - $2 }' >"$after.delta"
	bad=0
	while read -r f d; do
		case "$f" in
		connections_rdma)
			note "$f +$d"
			seen=1
			[ "$d" = $((2 * NCONN)) ] || bad=1 ;;
		fallback_* | rdma_failovers)
			if [ "$d" != 0 ]; then
				note "$f +$d"
				bad=1
			fi ;;
		rdma_bytes_sent | rdma_bytes_rcvd | handshakes_done)
			note "$f +$d" ;;
		esac
	done <"$after.delta"
	if [ "$bad" = 0 ] && [ "$seen" = 1 ]; then
		ok "$label.rdma_no_fallback"
	else
		not_ok "$label.rdma_no_fallback # want connections_rdma +$((2 * NCONN)), no fallback_*, no rdma_failovers"
	fi
}

# Sockets open: rmmod must be refused and the holders visible.
upgrade_step() {
	local holder out n i l
	"$PROG" hold 7790 >"$VISOCK_RESULTS/hold.log" 2>&1 &
	holder=$!
	for ((i = 0; i < 300; i++)); do
		grep -q '^hold: holding' "$VISOCK_RESULTS/hold.log" && break
		kill -0 "$holder" 2>/dev/null || break
		sleep 0.2
	done
	sed 's/^/# /' "$VISOCK_RESULTS/hold.log"
	out=$(rmmod visock 2>&1)
	if [ -d /sys/module/visock ] && grep -q 'in use' <<<"$out"; then
		ok "upgrade.rmmod_refused_while_sockets_open"
	else
		not_ok "upgrade.rmmod_refused_while_sockets_open # rmmod said: $out"
	fi
	note "rmmod: $out"
	note "lsmod: $(grep '^visock ' /proc/modules)"
	n=$(counter sockets)
	if [ "$n" -ge 3 ]; then
		ok "upgrade.proc_counts_sockets"
	else
		not_ok "upgrade.proc_counts_sockets # sockets $n, want >= 3"
	fi
	# sock_diag: this tree's visockctl reads v0.1.0's module too.
	out=$("$CTL" sockets -a 2>&1)
	while IFS= read -r l; do echo "# visockctl: $l"; done <<<"$out"
	if [ "$(grep -c ':7790 ' <<<"$out")" -ge 3 ]; then
		ok "upgrade.visockctl_lists_holders"
	else
		not_ok "upgrade.visockctl_lists_holders # want 3 sockets on port 7790"
	fi
	kill -KILL "$holder"
	wait "$holder" 2>/dev/null
	# Closing sockets may linger briefly (close handshake, QP teardown).
	for ((i = 0; i < 150; i++)); do
		rmmod visock 2>/dev/null && break
		sleep 0.2
	done
	if [ ! -d /sys/module/visock ]; then
		ok "upgrade.rmmod_after_close"
	else
		not_ok "upgrade.rmmod_after_close # $(grep '^visock ' /proc/modules), sockets $(counter sockets)"
		return 1
	fi
	if module_load "$NEW_KO"; then
		ok "upgrade.load_new_module"
	else
		not_ok "upgrade.load_new_module"
		return 1
	fi
}

echo "KTAP version 1"
note "host $VISOCK_HOST, kernel $(uname -r), module $KO"
[ -x "$PROG" ] || { note "no $PROG (make -C tools/testing/selftests/net/visock)"; exit 1; }
if [ -d /sys/module/visock ]; then
	rmmod visock || exit 1
fi
if ! module_load "$KO"; then
	not_ok "interop.module_load"
	exit 1
fi
barrier loaded || exit 1

interop_round interop 7711
barrier round1 || exit 1
upgrade_step
barrier upgraded || exit 1
interop_round after_upgrade 7712
barrier finished

echo "1..$ntest"
note "$nfail of $ntest failed"
[ "$nfail" = 0 ] && [ "$ntest" = 11 ]
