#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# visock selftests.
#
# Runs on one host (--role single) or on two hosts at the same time, one
# with --role server and one with --role client --peer <server address>.
# In the emulated two-VM bed VISOCK_HOST=a|b selects the role (a: client,
# b: server) and VISOCK_PEER_IP/VISOCK_PEER_IP6 the peer.
#
# Order: load the module, single-host checks (visock_basic), cross-host
# checks (visock_test) and stream tests (visock_stream) between the two
# hosts, the stream tests again over loopback, the LD_PRELOAD wrapper, the
# inet protosw and BPF redirect (all with net.visock.enable=0),
# then the handshake pass with net.visock.enable=1: handshake, fallback
# and hostile-peer tests (visock_hs), the RDMA data path tests
# (visock_dp), link groups (visock_lgr), random connect/close/abort
# (visock_stress), visockctl (visock_ctl), the stream tests again between
# the hosts, the BPF redirect and unmodified programs (iperf3, sockperf,
# nginx, redis: visock_apps.sh) between the hosts, the stream tests over
# loopback; module unload/reload, and finally the
# kernel log.  Output is KTAP; the exit status is 0 only if no test
# failed.

DIR=$(cd "$(dirname "$0")" && pwd)
ARGS=("$@")
# The helpers shared with visock_apps.sh: next to this script, or in the
# source tree when the script was copied elsewhere.
LIB=$DIR/visock_lib.sh
[ -f "$LIB" ] || LIB=${VISOCK_SRC:-}/tools/testing/selftests/net/visock/visock_lib.sh
# shellcheck source=visock_lib.sh
. "$LIB" || exit 2
# No process substitution anywhere: the VM bed's guests have no /dev/fd.
# The loop reading a program's output runs in this shell thanks to this.
shopt -s lastpipe
MOD=visock
SYSCTL_DIR=/proc/sys/net/visock
ENABLE=$SYSCTL_DIR/enable
HS_TIMEOUT=$SYSCTL_DIR/handshake_timeout_ms
ACK_TIMEOUT=$SYSCTL_DIR/rdma_ack_timeout
# Shared QPs stay lgr_idle_ms after their last connection; the handshake
# pass runs with 0 so that tests which check that every resource is gone
# after close see it at once (the lgr group sets its own values).
LGR_IDLE=$SYSCTL_DIR/lgr_idle_ms
# The emulated bed drops RoCE packets when its host is overloaded, and
# Soft-RoCE has no congestion control: a longer ACK timeout (19: 2.1 s per
# try, ~15 s before a QP gives up) keeps busy links alive there.  Harmless
# on real RoCE.
TEST_ACK_TIMEOUT=${VISOCK_TEST_ACK_TIMEOUT:-19}
RAW_HOOK=/sys/kernel/debug/visock/raw_handshake
FAULT_POINT=/sys/kernel/debug/visock/fault/point
IPT_TAG=visock-selftest
KLOG_PATTERN='Oops|WARNING:|BUG:|Call Trace:|Kernel panic|KASAN|UBSAN'

# The reports of failed allocations (warn_alloc(): "page allocation
# failure" or "vmalloc error", then a stack trace up to </TASK>) that the
# fault.alloc_* tests provoke on purpose are left out of the kernel log
# check; everything else in the log stays.
drop_alloc_reports() {
	awk '/page allocation failure:|vmalloc error:/ { skip = 1 }
	     skip && /<\/TASK>/ { skip = 0; next }
	     !skip'
}

ROLE=
PEER=
PEER6=
CTL_PORT=7790
FAMILY=visock
LOOPS=20
LIST=0
PICKS=()
SKIPS=()

usage() {
	cat <<EOF
usage: $0 [options]
  --role client|server|single  (default: from VISOCK_HOST, a=client b=server;
                               otherwise single)
  --peer ADDR       client: IPv4 address of the server host (default
                    \$VISOCK_PEER_IP); use its address on the RDMA interface
  --peer6 ADDR      client: IPv6 address of the server host (\$VISOCK_PEER_IP6)
  --ctl-port N      TCP port of the control connection (default 7790)
  --family visock|inet  sockets the stream tests use; inet runs them on
                    plain TCP to check the tests themselves (default visock)
  --loops N         module load/unload iterations (default 20)
  --list            print the names of the selected tests and exit
  --pick PATTERN    run only tests whose name matches (shell glob; repeatable)
  --skip PATTERN    do not run tests whose name matches (repeatable)
Environment: VISOCK_KO (module file: insmod it instead of modprobe visock),
VISOCK_TEST_TIME_SCALE (factor on test timeouts and on how long the two
  ends of a group wait for each other; 4 on a KASAN kernel),
VISOCK_TEST_CHURN_CYCLES (lgr.churn; 10000, 1000 when the time scale is > 1),
VISOCK_HOST, VISOCK_PEER_IP, VISOCK_PEER_IP6, VISOCK_RESULTS (directory to
store the output and the kernel log in), VISOCK_TEST_RXE_NETDEV (net device
of a Soft-RoCE device that the no-RDMA-device tests may delete and add
back; set automatically in the VM test bed), VISOCK_TEST_ALT_IP (a second
IPv4 address of the client host on the RDMA interface, for lgr.multi_peer
and the security tests that need another host;
added and removed automatically in the VM test bed).
EOF
}

while [ $# -gt 0 ]; do
	case "$1" in
	--role) ROLE=$2; shift ;;
	--peer) PEER=$2; shift ;;
	--peer6) PEER6=$2; shift ;;
	--ctl-port) CTL_PORT=$2; shift ;;
	--family) FAMILY=$2; shift ;;
	--loops) LOOPS=$2; shift ;;
	--list) LIST=1 ;;
	--pick) PICKS+=("$2"); shift ;;
	--skip) SKIPS+=("$2"); shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done

if [ -z "$ROLE" ]; then
	case "${VISOCK_HOST:-}" in
	a) ROLE=client ;;
	b) ROLE=server ;;
	*) ROLE=single ;;
	esac
fi
[ -z "$PEER" ] && PEER=${VISOCK_PEER_IP:-}
[ -z "$PEER6" ] && PEER6=${VISOCK_PEER_IP6:-}
case "$ROLE" in
client)
	if [ -z "$PEER" ]; then
		echo "--role client needs --peer (or VISOCK_PEER_IP)" >&2
		exit 2
	fi ;;
server|single) ;;
*) usage >&2; exit 2 ;;
esac
case "$FAMILY" in
visock|inet) ;;
*) usage >&2; exit 2 ;;
esac

# ---- test list ----

# Where the C programs are: next to this script, or (when the script was
# copied elsewhere, as the VM bed does) in the source tree.  Build them
# when they are missing from a source checkout.
BIN=$DIR
SRC_BIN=${VISOCK_SRC:+$VISOCK_SRC/tools/testing/selftests/net/visock}
if [ ! -f "$DIR/visock_stream.c" ] && [ ! -x "$DIR/visock_stream" ] &&
   [ -n "$SRC_BIN" ]; then
	BIN=$SRC_BIN
fi
for prog in visock_basic visock_test visock_stream visock_hs visock_dp \
	visock_lgr visock_stress visock_fault visock_preload_test visock_ctl \
	visock_redirect_test visock_security visock_dgram visock_api \
	visock_uring; do
	if [ ! -x "$BIN/$prog" ] && [ -f "$BIN/Makefile" ]; then
		make -s -C "$BIN" >/dev/null 2>&1
		break
	fi
done

# visockctl, for the ctl tests: $VISOCKCTL, the source tree's build, PATH.
if [ -z "${VISOCKCTL:-}" ]; then
	VISOCKCTL=$(command -v visockctl 2>/dev/null)
	for d in "${VISOCK_SRC:-}" "$DIR/../../../../.."; do
		if [ -n "$d" ] && [ -f "$d/tools/visock/visockctl.c" ]; then
			[ -x "$d/tools/visock/visockctl" ] ||
				make -s -C "$d/tools/visock" visockctl >/dev/null 2>&1
			[ -x "$d/tools/visock/visockctl" ] &&
				VISOCKCTL=$d/tools/visock/visockctl
			break
		fi
	done
fi
export VISOCKCTL

# list_prog GROUP PROGRAM [INCLUDE [EXCLUDE]]: the program's tests (only
# those matching the glob INCLUDE and not EXCLUDE) become GROUP.<name>.
list_prog() {
	local group=$1 prog=$2 incl=${3:-*} excl=${4:-} names n

	if ! names=$("$BIN/$prog" --list 2>/dev/null) || [ -z "$names" ]; then
		add_test "$group.build"
		return
	fi
	for n in $names; do
		# shellcheck disable=SC2053
		[[ $n == $incl ]] || continue
		# shellcheck disable=SC2053
		[ -n "$excl" ] && [[ $n == $excl ]] && continue
		add_test "$group.$n"
	done
}

add_test module.load
list_prog basic visock_basic
list_prog xhost visock_test
list_prog stream_xh visock_stream
list_prog stream_lo visock_stream
list_prog dgram visock_dgram
list_prog dgram_udp visock_dgram
list_prog preload visock_preload_test '*' 'xhost_*'
list_prog redirect visock_redirect_test '*' 'xhost_*'
add_test redirect.load
add_test redirect.show
add_test redirect.unload
list_prog hs visock_hs
list_prog dp visock_dp
list_prog api visock_api
list_prog uring visock_uring
list_prog lgr visock_lgr
list_prog stress visock_stress
list_prog fault visock_fault
list_prog security visock_security
list_prog ctl visock_ctl
list_prog stream_hs visock_stream
list_prog stream_hslo visock_stream
list_prog redirect_hs visock_redirect_test 'xhost_*'
list_prog preload_hs visock_preload_test 'xhost_*'
list_prog apps visock_apps.sh
add_test socks_freed
add_test module.unload_busy
add_test module.unload
add_test module.ctl_unloaded
add_test module.fresh_load
add_test module.reload_loop
add_test module.restore_state
add_test kernel_log_clean

if [ "$LIST" = 1 ]; then
	printf '%s\n' "${TESTS[@]}"
	exit 0
fi

# ---- output ----

RESULTS_BASE=
if [ -n "${VISOCK_RESULTS:-}" ] && [ -d "$VISOCK_RESULTS" ] &&
   [ -w "$VISOCK_RESULTS" ]; then
	RESULTS_BASE=$VISOCK_RESULTS/visock-selftests-${VISOCK_HOST:-$(hostname)}
	if [ -z "${VISOCK_SELFTEST_TEED:-}" ]; then
		# Run again with the output copied to the results directory.
		VISOCK_SELFTEST_TEED=1 "$0" "${ARGS[@]}" 2>&1 |
			tee "$RESULTS_BASE.ktap"
		exit "${PIPESTATUS[0]}"
	fi
fi

ktap_plan
diag "visock selftests: role $ROLE${PEER:+, peer $PEER}${PEER6:+ / $PEER6}, family $FAMILY, kernel $(uname -r)"

# A kernel with KASAN (the test bed's 6.12-debug, also lockdep) moves data
# several times slower: longer test timeouts (harness.h), unless set.
if [ -z "${VISOCK_TEST_TIME_SCALE:-}" ] &&
   grep -qw kasan_report /proc/kallsyms 2>/dev/null; then
	export VISOCK_TEST_TIME_SCALE=4
fi
[ -n "${VISOCK_TEST_TIME_SCALE:-}" ] &&
	diag "test timeouts x${VISOCK_TEST_TIME_SCALE} (VISOCK_TEST_TIME_SCALE)"
# lgr.churn's 10000 cycles take hours there: 1000 (the leak check after
# it is the point on such a kernel), unless set.
if [ -z "${VISOCK_TEST_CHURN_CYCLES:-}" ] &&
   [ "${VISOCK_TEST_TIME_SCALE:-1}" -gt 1 ]; then
	export VISOCK_TEST_CHURN_CYCLES=1000
fi
[ -n "${VISOCK_TEST_CHURN_CYCLES:-}" ] &&
	diag "lgr.churn: ${VISOCK_TEST_CHURN_CYCLES} cycles (VISOCK_TEST_CHURN_CYCLES)"

IS_ROOT=0
[ "$(id -u)" = 0 ] && IS_ROOT=1

# ---- kernel log ----

KLOG_TAG="visock-selftest-$$-$(date +%s)"
KLOG_SNAP=$(mktemp)
KLOG_MARK=0
dmesg > "$KLOG_SNAP" 2>/dev/null
KLOG_OK=$?
if [ -w /dev/kmsg ] && echo "$KLOG_TAG: start" > /dev/kmsg 2>/dev/null; then
	KLOG_MARK=1
fi

# Kernel log lines written since the start of the run.
klog_new() {
	if [ "$KLOG_MARK" = 1 ] && dmesg | grep -q "$KLOG_TAG: start"; then
		dmesg | sed -n "/$KLOG_TAG: start/,\$p"
	else
		dmesg | grep -vxF -f "$KLOG_SNAP"
	fi
}

# ---- module handling ----

mod_loaded() {
	[ -d /sys/module/$MOD ]
}

# The module file to insmod: VISOCK_KO, or when visock is not installed
# for the running kernel, a build for it in the source tree (VISOCK_SRC).
KO=${VISOCK_KO:-}
if [ -z "$KO" ] && [ -n "${VISOCK_SRC:-}" ] &&
   ! modinfo -n $MOD >/dev/null 2>&1; then
	for ko in "$VISOCK_SRC/build/$(uname -r)/$MOD.ko" "$VISOCK_SRC/$MOD.ko"; do
		vermagic=$(modinfo -F vermagic "$ko" 2>/dev/null)
		if [ "${vermagic%% *}" = "$(uname -r)" ]; then
			KO=$ko
			break
		fi
	done
fi

# mod_load [PARAM=VALUE...]
mod_load() {
	if [ -n "$KO" ]; then
		modprobe ib_core 2>/dev/null
		insmod "$KO" "$@"
	else
		modprobe $MOD "$@"
	fi
}

mod_unload() {
	rmmod $MOD
}

enable_value() {
	cat "$ENABLE" 2>/dev/null
}

ORIG_LOADED=0
ORIG_ENABLE=
ORIG_TIMEOUT=
ORIG_ACK=
mod_loaded && ORIG_LOADED=1
if [ "$ORIG_LOADED" = 1 ]; then
	ORIG_ENABLE=$(enable_value)
	ORIG_TIMEOUT=$(cat "$HS_TIMEOUT" 2>/dev/null)
	ORIG_ACK=$(cat "$ACK_TIMEOUT" 2>/dev/null)
fi

NEED_MODULE=0
for n in "${TESTS[@]}"; do
	case "$n" in
	module.*|basic.*|xhost.srcversion|hs.*|dp.*|api.*|uring.*|lgr.*|stress.*|fault.*|ctl.*|\
	redirect.*|apps.*|dgram.*|dgram_udp.*|\
	preload.*|preload_hs.*) NEED_MODULE=1 ;;
	stream_*) [ "$FAMILY" = visock ] && NEED_MODULE=1 ;;
	esac
done

# What the handshake tests may have left behind if they were killed:
# the debugfs hook, iptables rules, a deleted Soft-RoCE device.
hs_sweep() {
	local rule dev

	[ -w "$RAW_HOOK" ] && echo 0 > "$RAW_HOOK" 2>/dev/null
	[ -w "$FAULT_POINT" ] && echo none > "$FAULT_POINT" 2>/dev/null
	if command -v iptables >/dev/null 2>&1; then
		iptables -w 5 -t mangle -S PREROUTING 2>/dev/null |
			grep -- "--comment $IPT_TAG" | while read -r rule; do
			# shellcheck disable=SC2086
			iptables -w 5 -t mangle ${rule/#-A/-D} 2>/dev/null
		done
	fi
	if [ -n "${VISOCK_TEST_RXE_NETDEV:-}" ] && [ -n "$RXE_NAME" ]; then
		dev=$(rxe_on "$VISOCK_TEST_RXE_NETDEV")
		if [ -z "$dev" ]; then
			diag "adding RDMA device $RXE_NAME on $VISOCK_TEST_RXE_NETDEV back"
			rdma link add "$RXE_NAME" type rxe \
				netdev "$VISOCK_TEST_RXE_NETDEV" 2>/dev/null
		fi
	fi
}

# The Soft-RoCE device whose parent net device is $1.
rxe_on() {
	local d

	for d in /sys/class/infiniband/*; do
		[ "$(cat "$d/parent" 2>/dev/null)" = "$1" ] || continue
		echo "${d##*/}"
		return 0
	done
	return 1
}

# Number of ACTIVE RDMA ports on this host.
active_rdma_ports() {
	local n=0 st

	for st in /sys/class/infiniband/*/ports/*/state; do
		[ -r "$st" ] && grep -q ACTIVE "$st" && n=$((n + 1))
	done
	echo "$n"
}

# In the VM bed, the Soft-RoCE device may be deleted and added back by
# the no-RDMA-device tests; on other hosts only if the user says so.
RXE_NAME=
if [ -z "${VISOCK_TEST_RXE_NETDEV:-}" ] && [ -n "${VISOCK_JOB_ID:-}" ] &&
   RXE_NAME=$(rxe_on eth0); then
	export VISOCK_TEST_RXE_NETDEV=eth0
elif [ -n "${VISOCK_TEST_RXE_NETDEV:-}" ]; then
	RXE_NAME=$(rxe_on "$VISOCK_TEST_RXE_NETDEV")
fi

# lgr.multi_peer needs a second address of the client host on the RDMA
# interface (VISOCK_TEST_ALT_IP).  In the VM bed the client adds one for
# the lgr group, and waits for its RoCE GID; elsewhere the user may name
# one that is configured already.
ALT_ADDED=
alt_ip_add() {
	local ip hex i

	[ -n "${VISOCK_JOB_ID:-}" ] && [ "$ROLE" = client ] &&
		[ -z "${VISOCK_TEST_ALT_IP:-}" ] &&
		[ -n "${VISOCK_LOCAL_IP:-}" ] &&
		[ -n "${VISOCK_TEST_RXE_NETDEV:-}" ] || return 0
	ip=${VISOCK_LOCAL_IP%.*}.$((${VISOCK_LOCAL_IP##*.} + 100))
	ip addr add "$ip/24" dev "$VISOCK_TEST_RXE_NETDEV" || return 0
	ALT_ADDED=$ip
	export VISOCK_TEST_ALT_IP=$ip
	# shellcheck disable=SC2086 # the octets, one argument each
	hex=$(printf '%02x%02x:%02x%02x' ${ip//./ })
	for i in $(seq 50); do
		grep -qs "ffff:$hex" /sys/class/infiniband/*/ports/*/gids/* &&
			return 0
		sleep 0.2
	done
	diag "no RoCE GID for $ip after 10 s"
}

alt_ip_del() {
	[ -n "$ALT_ADDED" ] || return 0
	ip addr del "$ALT_ADDED/24" dev "$VISOCK_TEST_RXE_NETDEV" 2>/dev/null
	ALT_ADDED=
	unset VISOCK_TEST_ALT_IP
}

RESTORED=0
restore_state() {
	[ "$RESTORED" = 1 ] && return 0
	RESTORED=1
	[ "$IS_ROOT" = 1 ] || return 0
	hs_sweep
	if [ "$ORIG_LOADED" = 1 ]; then
		mod_loaded || mod_load >/dev/null 2>&1
		if [ -n "$ORIG_ENABLE" ] && [ -w "$ENABLE" ]; then
			echo "$ORIG_ENABLE" > "$ENABLE" 2>/dev/null
		fi
		if [ -n "$ORIG_TIMEOUT" ] && [ -w "$HS_TIMEOUT" ]; then
			echo "$ORIG_TIMEOUT" > "$HS_TIMEOUT" 2>/dev/null
		fi
		if [ -n "$ORIG_ACK" ] && [ -w "$ACK_TIMEOUT" ]; then
			echo "$ORIG_ACK" > "$ACK_TIMEOUT" 2>/dev/null
		fi
	elif mod_loaded && [ "$NEED_MODULE" = 1 ]; then
		mod_unload >/dev/null 2>&1
	fi
}

HOLDER_PID=
cleanup() {
	if [ -n "$HOLDER_PID" ]; then
		kill "$HOLDER_PID" 2>/dev/null
		wait "$HOLDER_PID" 2>/dev/null
	fi
	declare -F redirect_cleanup >/dev/null && redirect_cleanup
	alt_ip_del
	restore_state
	rm -f "$KLOG_SNAP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$NEED_MODULE" = 1 ]; then
	diag "module: ${KO:-modprobe $MOD}"
	if [ "$IS_ROOT" != 1 ]; then
		result module.load fail "not root: cannot load $MOD"
	elif [ "$ORIG_LOADED" = 1 ]; then
		diag "$MOD already loaded (srcversion $(cat /sys/module/$MOD/srcversion 2>/dev/null))"
		result module.load pass
	elif out=$(mod_load 2>&1); then
		result module.load pass
	else
		result module.load fail "loading $MOD: $out"
	fi
	if [ -w "$ENABLE" ]; then
		diag "net.visock.enable: $(enable_value) -> 0 for the run"
		echo 0 > "$ENABLE"
	fi
	if [ -w "$ACK_TIMEOUT" ]; then
		diag "net.visock.rdma_ack_timeout: $(cat "$ACK_TIMEOUT") -> $TEST_ACK_TIMEOUT for the run"
		echo "$TEST_ACK_TIMEOUT" > "$ACK_TIMEOUT"
	fi
else
	result module.load skip "no selected test needs the module"
fi

# ---- C test programs ----

# ONLY (names without the group, space-separated) limits run_prog to
# those tests of the group, for groups that run in phases.
ONLY=

# Is test @1 (GROUP.name) one that run_prog should run now?
only_has() {
	[ -z "$ONLY" ] && return 0
	[[ " $ONLY " == *" ${1#*.} "* ]]
}

# run_prog GROUP PROGRAM ARGS...: run the selected tests of GROUP (see
# ONLY) and report them under "GROUP.<name>".
run_prog() {
	local group=$1 prog=$2 line name res reason n
	local re='^(not )?ok [0-9]+ ([^ ]+)( # SKIP ?(.*))?$'
	local picks=("${EXTRA_PICKS[@]}")

	shift 2
	group_selected "$group" || return 0
	if [ -n "${SEL[$group.build]:-}" ]; then
		result "$group.build" fail "$BIN/$prog missing (make -C $BIN)"
		return 0
	fi
	for n in "${TESTS[@]}"; do
		[[ $n == "$group".* ]] && only_has "$n" &&
			picks+=(--pick "${n#"$group".}")
	done
	# Nothing of this phase selected: --pick-less would run everything.
	[ ${#picks[@]} -eq 0 ] && return 0
	"$BIN/$prog" "$@" "${picks[@]}" 2>&1 | while IFS= read -r line; do
		if [[ $line =~ $re ]]; then
			name=$group.${BASH_REMATCH[2]}
			if [ -n "${BASH_REMATCH[1]}" ]; then
				res=fail
			elif [ -n "${BASH_REMATCH[3]}" ]; then
				res=skip
			else
				res=pass
			fi
			reason=${BASH_REMATCH[4]}
			RES[$name]=$res
			RES_REASON[$name]=$reason
			if [ -n "${SEL[$name]:-}" ]; then
				result "$name" "$res" "$reason"
			else
				diag "$prog: $line"
			fi
		elif [[ $line =~ ^(TAP\ version|1\.\.[0-9]+$) ]]; then
			:
		elif [[ $line =~ ^#\ $prog:\ [0-9]+\ passed ]]; then
			:
		elif [[ $line == \#* ]]; then
			echo "$line"
			[[ $line == *"no client connected within"* ]] &&
				NO_CLIENT=1
		else
			diag "$prog: $line"
		fi
	done
	for n in "${TESTS[@]}"; do
		[[ $n == "$group".* ]] && only_has "$n" &&
			result "$n" fail "$prog ended without reporting this test"
	done
	socks_left "$group"
}

# After a group's program ended, its visock sockets go, at the latest
# when a background close gives up (30 s).  Says which sockets were still
# there if they took more than 2 s, and which are left 40 s later: they
# would keep the module from unloading.
socks_left() {
	local f=/sys/kernel/debug/visock/socks i first

	[ -r "$f" ] || return 0
	first=$(head -20 "$f" 2>/dev/null)
	[ -z "$first" ] && return 0
	for i in $(seq 80); do
		if [ -z "$(head -1 "$f" 2>/dev/null)" ]; then
			[ "$i" -gt 4 ] &&
				diag "after group $1: visock sockets took $((i / 2)) s to go; at first: $first"
			return 0
		fi
		sleep 0.5
	done
	diag "after group $1: visock sockets left 40 s later (refcnt $(cat /sys/module/$MOD/refcnt 2>/dev/null)):"
	diag "$(head -20 "$f")"
	SOCKS_LEFT+="$1 ($(grep -c . "$f") left) "
}
SOCKS_LEFT=

NO_CLIENT=0
EXTRA_PICKS=()
declare -A RES=() RES_REASON=()

run_prog basic visock_basic --role single

case "$ROLE" in
client)
	run_prog xhost visock_test --role client --peer "$PEER" \
		--ctl-port "$CTL_PORT"
	run_prog stream_xh visock_stream --role client --peer "$PEER" \
		${PEER6:+--peer6 "$PEER6"} --ctl-port "$CTL_PORT" \
		--family "$FAMILY"
	;;
server)
	run_prog xhost visock_test --role server --ctl-port "$CTL_PORT" \
		--wait 300
	wait_s=120
	[ "$NO_CLIENT" = 1 ] && wait_s=30
	run_prog stream_xh visock_stream --role server --ctl-port "$CTL_PORT" \
		--wait "$wait_s"
	;;
single)
	finish_group xhost skip "role single: no peer host"
	finish_group stream_xh skip "role single: no peer host"
	;;
esac

run_prog stream_lo visock_stream --role single --family "$FAMILY"

# Datagram sockets (visock_dgram turns net.visock.dgram_enable on for
# its tests), then the same checks on plain UDP sockets (dgram_udp) as
# the reference: between the hosts when there are two, else loopback.
dgram_groups() {
	local g fam

	for g in dgram dgram_udp; do
		fam=visock
		[ $g = dgram_udp ] && fam=inet
		case "$ROLE" in
		client)
			run_prog $g visock_dgram --role client --peer "$PEER" \
				${PEER6:+--peer6 "$PEER6"} \
				--ctl-port "$CTL_PORT" --family $fam
			;;
		server)
			run_prog $g visock_dgram --role server \
				--ctl-port "$CTL_PORT" --wait 120 --family $fam
			;;
		*)
			run_prog $g visock_dgram --role single --family $fam
			;;
		esac
	done
}
dgram_groups

# The LD_PRELOAD wrapper of visock_run(8), from the source tree (built
# here when missing) or $VISOCK_PRELOAD_SO.
preload_so() {
	if [ -n "${VISOCK_PRELOAD_SO:-}" ]; then
		echo "$VISOCK_PRELOAD_SO"
		return
	fi
	visock_tool visock_preload.so all
}
if group_selected preload; then
	PRELOAD=$(preload_so)
	if [ -z "$PRELOAD" ]; then
		finish_group preload fail "visock_preload.so not found (make tools, or set VISOCK_PRELOAD_SO)"
	else
		LD_PRELOAD=$PRELOAD run_prog preload visock_preload_test \
			--role single
	fi
fi

# ---- inet protosw and BPF redirect (visock_redirect(8)) ----

# The loader, from the source tree (built here when missing) or
# $VISOCK_REDIRECT.
redirect_tool() {
	if [ -n "${VISOCK_REDIRECT:-}" ]; then
		echo "$VISOCK_REDIRECT"
		return
	fi
	visock_tool visock_redirect visock_redirect
}

REDIR_CG=
REDIR_CG_MNT=
REDIR_TOOL=

# A cgroup v2 directory for redirect.cgroup_match, or nothing.
redirect_cgroup() {
	local root=/sys/fs/cgroup

	if [ "$(stat -fc %T $root 2>/dev/null)" != cgroup2fs ]; then
		REDIR_CG_MNT=$(mktemp -d)
		if ! mount -t cgroup2 none "$REDIR_CG_MNT" 2>/dev/null; then
			rmdir "$REDIR_CG_MNT"
			REDIR_CG_MNT=
			return
		fi
		root=$REDIR_CG_MNT
	fi
	REDIR_CG=$root/visock-redirect-test-$$
	mkdir "$REDIR_CG" 2>/dev/null || REDIR_CG=
}

redirect_cleanup() {
	[ -n "$REDIR_TOOL" ] && "$REDIR_TOOL" unload >/dev/null 2>&1
	[ -n "$REDIR_CG" ] && rmdir "$REDIR_CG" 2>/dev/null
	if [ -n "$REDIR_CG_MNT" ]; then
		umount "$REDIR_CG_MNT" 2>/dev/null && rmdir "$REDIR_CG_MNT"
	fi
	REDIR_CG=
	REDIR_CG_MNT=
}

redirect_group() {
	local out why

	ONLY="inet_direct inet6_direct inet_reuseport policy_netns policy_unpriv" \
		run_prog redirect visock_redirect_test --role single
	if ! has_redirect_hook; then
		# The inet registration is there on every kernel.
		redirect_taken
		finish_group redirect skip "kernel $(uname -r) has no update_socket_protocol() hook (6.6+); the preload group covers it"
		return
	fi
	REDIR_TOOL=$(redirect_tool)
	if [ -z "$REDIR_TOOL" ]; then
		finish_group redirect fail "visock_redirect not found (make tools, or set VISOCK_REDIRECT)"
		return
	fi
	"$REDIR_TOOL" unload >/dev/null 2>&1
	redirect_cgroup
	[ -n "$REDIR_CG" ] || diag "redirect: no cgroup v2 directory for cgroup_match"

	# Loaded through "visockctl redirect" (which runs visock_redirect)
	# when visockctl sits next to it, as built and as installed.
	local loader=("$REDIR_TOOL")
	[ -x "${REDIR_TOOL%/*}/visockctl" ] &&
		loader=("${REDIR_TOOL%/*}/visockctl" redirect)
	if ! out=$("${loader[@]}" load --comm vr_redirected --uid 4242 \
		   ${REDIR_CG:+--cgroup "$REDIR_CG"} \
		   --exclude-comm vr_excluded 2>&1); then
		finish_group redirect fail "${loader[*]} load: $out"
		redirect_cleanup
		return
	fi
	diag "loaded with: ${loader[*]##*/} load"
	diag "$out"
	result redirect.load pass

	VISOCK_TEST_CGROUP=$REDIR_CG \
	ONLY="comm_match comm_other type_flags uid_match cgroup_match disabled enabled" \
		run_prog redirect visock_redirect_test --role single

	# show lists what load was given and counts what the tests did.
	out=$("$REDIR_TOOL" show 2>&1)
	diag "$out"
	why=
	grep -q "^visock_redirect: loaded" <<< "$out" || why="not shown as loaded"
	grep -q "redirect comm vr_redirected" <<< "$out" || why="comm missing"
	grep -q "exclude  comm vr_excluded" <<< "$out" || why="exclusion missing"
	grep -q "redirect uid 4242" <<< "$out" || why="uid missing"
	[ -z "$REDIR_CG" ] || grep -q "redirect cgroup .*(id " <<< "$out" ||
		why="cgroup missing"
	grep -Eq "sockets: [0-9]+ seen, [1-9][0-9]* redirected, [1-9][0-9]* excluded" \
		<<< "$out" || why="no redirected/excluded sockets counted"
	result redirect.show "$([ -z "$why" ] && echo pass || echo fail)" "$why"

	why=
	out=$("$REDIR_TOOL" unload 2>&1) || why="unload: $out"
	[ -e /sys/fs/bpf/visock ] && why="${why:+$why; }/sys/fs/bpf/visock still there"
	"$REDIR_TOOL" show 2>&1 | grep -q "not loaded" ||
		why="${why:+$why; }show does not say 'not loaded'"
	result redirect.unload "$([ -z "$why" ] && echo pass || echo fail)" "$why"

	ONLY="after_unload" run_prog redirect visock_redirect_test --role single
	redirect_cleanup
	redirect_taken
}

# Reload the module with inet_proto=262, which MPTCP's protosw already
# uses: the module must back out of the inet registration and say so,
# visock_redirect (where the kernel has the hook) must refuse to load.
# Then reload it as before.
redirect_taken() {
	local out why='' i

	[ -n "${SEL[redirect.proto_taken]:-}" ] || return 0
	if [ ! -d /proc/sys/net/mptcp ]; then
		result redirect.proto_taken skip "no MPTCP: nothing else uses a protocol number"
		return
	fi
	for i in $(seq 50); do
		mod_unload 2>/dev/null && break
		sleep 0.2
	done
	if mod_loaded; then
		result redirect.proto_taken fail "cannot unload $MOD"
		return
	fi
	if ! out=$(mod_load inet_proto=262 2>&1); then
		result redirect.proto_taken fail "loading with inet_proto=262: $out"
		mod_load >/dev/null 2>&1
		return
	fi
	klog_new | grep -q "visock: protocol 262 of AF_INET stream sockets is already used" ||
		why="no 'already used' message in the kernel log"
	if [ -z "$REDIR_TOOL" ]; then
		:	# no hook, no loader: nothing to refuse
	elif out=$("$REDIR_TOOL" load --comm vr_redirected 2>&1); then
		why="${why:+$why; }visock_redirect loaded"
		"$REDIR_TOOL" unload >/dev/null 2>&1
	elif ! grep -q "does not create a visock socket" <<< "$out"; then
		why="${why:+$why; }unexpected refusal: $out"
	fi
	if [ -n "$why" ]; then
		result redirect.proto_taken fail "$why"
	else
		ONLY="proto_taken" run_prog redirect visock_redirect_test \
			--role single
	fi
	mod_unload 2>/dev/null
	if ! out=$(mod_load 2>&1); then
		diag "reloading $MOD: $out"
		return
	fi
	# The settings of the run, as module.load made them.
	[ -w "$ENABLE" ] && echo 0 > "$ENABLE"
	[ -w "$ACK_TIMEOUT" ] && echo "$TEST_ACK_TIMEOUT" > "$ACK_TIMEOUT"
}
if group_selected redirect; then
	redirect_group
	ONLY=
fi

# redirect_hs WHY WAIT: an unmodified program (visock_redirect_test with
# comm vr_redirected) gets RDMA between the hosts through the redirect,
# loaded on both hosts.  WHY: reason to skip (no RDMA between the hosts).
redirect_hs() {
	local why=$1 wait_s=$2 out

	group_selected redirect_hs || return 0
	if [ -z "$why" ] && ! has_redirect_hook; then
		why="kernel $(uname -r) has no update_socket_protocol() hook (6.6+)"
	fi
	[ -z "$why" ] && [ -z "$REDIR_TOOL" ] && REDIR_TOOL=$(redirect_tool)
	[ -z "$why" ] && [ -z "$REDIR_TOOL" ] && why="visock_redirect not found"
	if [ -n "$why" ]; then
		finish_group redirect_hs skip "$why"
		return
	fi
	"$REDIR_TOOL" unload >/dev/null 2>&1
	# Both hosts come here; a host that cannot load still runs its half,
	# which then fails (the peer's half sees that).
	out=$("$REDIR_TOOL" load --comm vr_redirected 2>&1) ||
		diag "visock_redirect load: $out"
	if [ "$ROLE" = client ]; then
		run_prog redirect_hs visock_redirect_test --role client \
			--peer "$PEER" --ctl-port "$CTL_PORT"
	else
		run_prog redirect_hs visock_redirect_test --role server \
			--ctl-port "$CTL_PORT" --wait "$wait_s"
	fi
	"$REDIR_TOOL" unload >/dev/null 2>&1
}

# preload_hs WHY WAIT: the LD_PRELOAD wrapper between the hosts
# (visock_preload_test's xhost_* tests, every kernel).  WHY: reason to
# skip (no RDMA between the hosts).
preload_hs() {
	local why=$1 wait_s=$2

	group_selected preload_hs || return 0
	[ -z "$why" ] && [ -z "${PRELOAD:-}" ] && PRELOAD=$(preload_so)
	[ -z "$why" ] && [ -z "$PRELOAD" ] && why="visock_preload.so not found"
	if [ -n "$why" ]; then
		finish_group preload_hs skip "$why"
		return
	fi
	if [ "$ROLE" = client ]; then
		LD_PRELOAD=$PRELOAD run_prog preload_hs visock_preload_test \
			--role client --peer "$PEER" --ctl-port "$CTL_PORT"
	else
		LD_PRELOAD=$PRELOAD run_prog preload_hs visock_preload_test \
			--role server --ctl-port "$CTL_PORT" --wait "$wait_s"
	fi
}

# apps WHY: unmodified third-party programs (iperf3, sockperf, nginx with
# curl and wrk, redis) between the hosts, redirected to visock and plain
# (visock_apps.sh, which meets its peer half through the results
# directories the VM bed shares).  WHY: reason to skip.
apps_group() {
	local why=$1

	group_selected apps || return 0
	if [ -n "$why" ]; then
		finish_group apps skip "$why"
		return
	fi
	if [ "$ROLE" = client ]; then
		run_prog apps visock_apps.sh --role client --peer "$PEER"
	else
		run_prog apps visock_apps.sh --role server
	fi
}

# ---- handshake pass: net.visock.enable=1 ----

# A cross-host group of the handshake pass that needs RDMA: GROUP PROG.
# Skipped with $why (hs.rdma_ready's verdict) if set; uses hs_pass's
# locals why and wait_s.
rdma_group() {
	if [ -n "$why" ]; then
		finish_group "$1" skip "$why"
	elif [ "$ROLE" = client ]; then
		run_prog "$1" "$2" --role client --peer "$PEER" \
			--ctl-port "$CTL_PORT" --family visock
	else
		run_prog "$1" "$2" --role server \
			--ctl-port "$CTL_PORT" --wait "$wait_s"
	fi
}

# The data path tests (dp.*) and the stream tests run with
# net.visock.enable=1 on both hosts, so that every connection does the
# handshake (and uses RDMA where the module does).  Between the hosts
# only when hs.rdma_ready passed (both hosts have visock and an ACTIVE
# RDMA port: both runners see the same result); the stream tests also
# over loopback when this host has an ACTIVE RDMA port.
hs_pass() {
	local wait_s=120 why g

	if [ "$FAMILY" != visock ]; then
		for g in hs dp api uring lgr stress fault security ctl stream_hs stream_hslo apps; do
			finish_group "$g" skip "family $FAMILY: needs AF_VISOCK"
		done
		return
	fi
	if ! group_selected hs && ! group_selected dp &&
	   ! group_selected api && ! group_selected uring &&
	   ! group_selected lgr && ! group_selected stress &&
	   ! group_selected fault && ! group_selected security &&
	   ! group_selected ctl && ! group_selected stream_hs &&
	   ! group_selected stream_hslo && ! group_selected redirect_hs &&
	   ! group_selected preload_hs && ! group_selected apps; then
		return
	fi
	if [ -w "$ENABLE" ]; then
		diag "net.visock.enable: $(enable_value) -> 1 for the handshake pass"
		echo 1 > "$ENABLE"
	fi
	local orig_idle=
	if [ -w "$LGR_IDLE" ]; then
		orig_idle=$(cat "$LGR_IDLE")
		echo 0 > "$LGR_IDLE"
		diag "net.visock.lgr_idle_ms: $orig_idle -> 0 for the handshake pass"
	fi
	[ -n "${VISOCK_TEST_RXE_NETDEV:-}" ] &&
		diag "Soft-RoCE device ${RXE_NAME:-?} on $VISOCK_TEST_RXE_NETDEV may be deleted and added back"

	# hs.rdma_ready decides about dp and stream_hs: run it even if not
	# picked.
	EXTRA_PICKS=()
	if group_selected dp || group_selected api ||
	   group_selected uring || group_selected lgr ||
	   group_selected stress || group_selected fault || group_selected security ||
	   group_selected ctl ||
	   group_selected stream_hs || group_selected redirect_hs ||
	   group_selected preload_hs || group_selected apps; then
		EXTRA_PICKS=(--pick rdma_ready)
	fi
	[ "$NO_CLIENT" = 1 ] && wait_s=30
	case "$ROLE" in
	client)
		if group_selected hs || group_selected dp || group_selected api ||
		   group_selected uring || group_selected lgr ||
		   group_selected stress || group_selected fault ||
		   group_selected security ||
		   group_selected ctl || group_selected stream_hs ||
		   group_selected redirect_hs || group_selected preload_hs ||
		   group_selected apps; then
			run_prog_always hs visock_hs --role client --peer "$PEER" \
				${PEER6:+--peer6 "$PEER6"} --ctl-port "$CTL_PORT"
		fi ;;
	server)
		if group_selected hs || group_selected dp || group_selected api ||
		   group_selected uring || group_selected lgr ||
		   group_selected stress || group_selected fault ||
		   group_selected security ||
		   group_selected ctl || group_selected stream_hs ||
		   group_selected redirect_hs || group_selected preload_hs ||
		   group_selected apps; then
			run_prog_always hs visock_hs --role server \
				--ctl-port "$CTL_PORT" --wait "$wait_s"
		fi ;;
	single)
		finish_group hs skip "role single: no peer host" ;;
	esac
	EXTRA_PICKS=()

	case "$ROLE" in
	single)
		finish_group dp skip "role single: no peer host"
		finish_group api skip "role single: no peer host"
		finish_group uring skip "role single: no peer host"
		finish_group lgr skip "role single: no peer host"
		finish_group stress skip "role single: no peer host"
		finish_group fault skip "role single: no peer host"
		finish_group security skip "role single: no peer host"
		finish_group ctl skip "role single: no peer host"
		finish_group stream_hs skip "role single: no peer host"
		finish_group redirect_hs skip "role single: no peer host"
		finish_group preload_hs skip "role single: no peer host"
		finish_group apps skip "role single: no peer host" ;;
	*)
		why=
		if [ "${RES[hs.rdma_ready]:-}" != pass ]; then
			why=${RES_REASON[hs.rdma_ready]:-}
			why="hs.rdma_ready: ${why:-${RES[hs.rdma_ready]:-not run}}"
		fi
		rdma_group dp visock_dp
		# The receive API compared with TCP's.
		rdma_group api visock_api
		# io_uring's socket operations compared with TCP's.
		rdma_group uring visock_uring
		# Link groups: shared QPs, pools, idle teardown.
		[ -z "$why" ] && [ "$ROLE" = client ] && alt_ip_add
		rdma_group lgr visock_lgr
		alt_ip_del
		# Random connect/transfer/shutdown/close/abort, signal storms.
		rdma_group stress visock_stress
		# Fault injection at each fault point of the module.
		rdma_group fault visock_fault
		# Hostile peers and local users (a second client address
		# plays another host).
		[ -z "$why" ] && [ "$ROLE" = client ] && alt_ip_add
		rdma_group security visock_security
		alt_ip_del
		# visockctl against the connections of visock_ctl.
		if [ -n "$why" ]; then
			finish_group ctl skip "$why"
		elif [ "$ROLE" = client ]; then
			run_prog ctl visock_ctl --role client \
				--peer "$PEER" ${PEER6:+--peer6 "$PEER6"} \
				--ctl-port "$CTL_PORT"
		else
			run_prog ctl visock_ctl --role server \
				--ctl-port "$CTL_PORT" --wait "$wait_s"
		fi
		if [ -n "$why" ]; then
			finish_group stream_hs skip "$why"
		elif [ "$ROLE" = client ]; then
			run_prog stream_hs visock_stream --role client \
				--peer "$PEER" ${PEER6:+--peer6 "$PEER6"} \
				--ctl-port "$CTL_PORT" --family visock
		else
			run_prog stream_hs visock_stream --role server \
				--ctl-port "$CTL_PORT" --wait "$wait_s"
		fi
		redirect_hs "$why" "$wait_s"
		preload_hs "$why" "$wait_s"
		apps_group "$why" ;;
	esac

	if group_selected stream_hslo; then
		if [ "$(active_rdma_ports)" = 0 ]; then
			finish_group stream_hslo skip "no ACTIVE RDMA port on this host"
		else
			run_prog stream_hslo visock_stream --role single \
				--family visock
		fi
	fi

	if [ -w "$ENABLE" ]; then
		echo 0 > "$ENABLE"
		diag "net.visock.enable: back to 0"
	fi
	if [ -n "$orig_idle" ] && [ -w "$LGR_IDLE" ]; then
		echo "$orig_idle" > "$LGR_IDLE"
	fi
	hs_sweep
}

# run_prog even when only EXTRA_PICKS select something of the group.
run_prog_always() {
	local group=$1

	if ! group_selected "$group"; then
		TESTS+=("$group.__gate")
		run_prog "$@"
		unset 'TESTS[${#TESTS[@]}-1]'
		return
	fi
	run_prog "$@"
}

hs_pass

# ---- module unload / reload ----

# Wait up to 10 s for rmmod to succeed (sockets may be freed lazily).
unload_retry() {
	local i

	for i in $(seq 50); do
		mod_unload 2>/dev/null && return 0
		sleep 0.2
	done
	mod_unload
}

# What still holds the module: its reference count, the counters and
# whatever sockets, QPs and processes are left.
unload_diag() {
	diag "refcnt $(cat /sys/module/$MOD/refcnt 2>/dev/null)"
	diag "$(grep -E '^(sockets|lgr_|qps|links)' /proc/net/visock 2>&1)"
	diag "socks left: $(head -20 /sys/kernel/debug/visock/socks 2>&1)"
	if [ -n "${VISOCKCTL:-}" ]; then
		diag "$("$VISOCKCTL" sockets -a 2>&1 | head -20)"
		diag "$("$VISOCKCTL" links 2>&1 | head -20)"
	fi
	diag "$(ps -eo pid,ppid,stat,etimes,comm 2>/dev/null |
		grep -E 'visock|nginx|redis|iperf|sockperf|socat|curl|wrk' | head)"
}

# Checks after an unload; prints the problem and fails if any.
check_unloaded() {
	if mod_loaded; then
		echo "/sys/module/$MOD still exists"
		return 1
	fi
	if [ -e "$SYSCTL_DIR" ]; then
		echo "$SYSCTL_DIR still exists"
		return 1
	fi
	return 0
}

# Checks after a load.
check_loaded() {
	local val out

	if ! mod_loaded; then
		echo "/sys/module/$MOD missing"
		return 1
	fi
	val=$(enable_value)
	if [ "$val" != 0 ]; then
		echo "$ENABLE reads '$val' after loading, expected 0"
		return 1
	fi
	if ! out=$("$BIN/visock_basic" --probe); then
		echo "socket(AF_VISOCK) after loading: $out"
		return 1
	fi
	return 0
}

test_unload_busy() {
	local tmp i refcnt out

	mod_loaded || { result module.unload_busy fail "$MOD not loaded"; return; }
	tmp=$(mktemp)
	"$BIN/visock_basic" --hold 120 > "$tmp" 2>&1 &
	HOLDER_PID=$!
	for i in $(seq 100); do
		grep -q holding "$tmp" && break
		kill -0 "$HOLDER_PID" 2>/dev/null || break
		sleep 0.1
	done
	if ! grep -q holding "$tmp"; then
		result module.unload_busy fail "cannot open an AF_VISOCK socket: $(cat "$tmp")"
	else
		refcnt=$(cat /sys/module/$MOD/refcnt 2>/dev/null)
		if ! [ "${refcnt:-0}" -gt 0 ] 2>/dev/null; then
			result module.unload_busy fail "refcnt '$refcnt' with a socket open, expected > 0"
		elif out=$(mod_unload 2>&1); then
			result module.unload_busy fail "rmmod succeeded with a socket open"
			mod_load >/dev/null 2>&1
		else
			diag "rmmod with a socket open (refcnt $refcnt): $out"
			result module.unload_busy pass
		fi
	fi
	kill "$HOLDER_PID" 2>/dev/null
	wait "$HOLDER_PID" 2>/dev/null
	HOLDER_PID=
	rm -f "$tmp"
}

test_unload() {
	local out rc

	mod_loaded || mod_load >/dev/null 2>&1
	if ! out=$(unload_retry 2>&1); then
		unload_diag
		result module.unload fail "rmmod after closing all sockets: $out"
		return
	fi
	if ! out=$(check_unloaded); then
		result module.unload fail "$out"
		return
	fi
	out=$("$BIN/visock_basic" --probe)
	rc=$?
	case "$rc" in
	1)
		result module.unload pass ;;
	0)
		if mod_loaded; then
			diag "socket(AF_VISOCK) auto-loaded $MOD again (net-pf-18 alias); accepted"
			unload_retry >/dev/null 2>&1
			result module.unload pass
		else
			result module.unload fail "socket(AF_VISOCK) works without the module"
		fi ;;
	*)
		result module.unload fail "socket(AF_VISOCK) without the module: $out, expected EAFNOSUPPORT" ;;
	esac
}

# visockctl without the module: exit status 3 and a message that says so.
test_ctl_unloaded() {
	local out rc cmd

	if [ -z "$VISOCKCTL" ] || [ ! -x "$VISOCKCTL" ]; then
		result module.ctl_unloaded skip "no visockctl (make tools)"
		return
	fi
	mod_loaded && unload_retry >/dev/null 2>&1
	if mod_loaded; then
		result module.ctl_unloaded fail "cannot unload $MOD"
		return
	fi
	for cmd in stats sockets devices; do
		out=$("$VISOCKCTL" "$cmd" 2>&1)
		rc=$?
		if [ "$rc" != 3 ] || [[ $out != *"not loaded"* ]]; then
			result module.ctl_unloaded fail "visockctl $cmd without the module: exit $rc, '$out'; expected exit 3, 'not loaded'"
			return
		fi
	done
	result module.ctl_unloaded pass
}

test_fresh_load() {
	local out

	mod_loaded && unload_retry >/dev/null 2>&1
	if ! out=$(mod_load 2>&1); then
		result module.fresh_load fail "loading $MOD: $out"
		return
	fi
	if ! out=$(check_loaded); then
		result module.fresh_load fail "$out"
		return
	fi
	if ! grep -q '^VISOCK' /proc/net/protocols; then
		result module.fresh_load fail "no VISOCK line in /proc/net/protocols"
		return
	fi
	result module.fresh_load pass
}

test_reload_loop() {
	local i out

	mod_loaded || mod_load >/dev/null 2>&1
	for i in $(seq "$LOOPS"); do
		if ! out=$(unload_retry 2>&1) || ! out=$(check_unloaded); then
			result module.reload_loop fail "iteration $i: unload: $out"
			return
		fi
		if ! out=$(mod_load 2>&1) || ! out=$(check_loaded); then
			result module.reload_loop fail "iteration $i: load: $out"
			return
		fi
	done
	diag "module.reload_loop: $LOOPS unload/load cycles"
	result module.reload_loop pass
}

test_restore_state() {
	restore_state
	if [ "$ORIG_LOADED" = 1 ]; then
		if ! mod_loaded; then
			result module.restore_state fail "could not load $MOD again"
		elif [ -n "$ORIG_ENABLE" ] && [ "$(enable_value)" != "$ORIG_ENABLE" ]; then
			result module.restore_state fail "net.visock.enable is $(enable_value), was $ORIG_ENABLE"
		else
			result module.restore_state pass
		fi
	elif mod_loaded; then
		result module.restore_state fail "$MOD still loaded; it was not loaded before the run"
	else
		result module.restore_state pass
	fi
}

# Every group's sockets went within 40 s of its end (socks_left()).
if [ -n "${SEL[socks_freed]:-}" ]; then
	if [ ! -r /sys/kernel/debug/visock/socks ]; then
		result socks_freed skip "no /sys/kernel/debug/visock/socks (needs root, debugfs and $MOD loaded)"
	elif [ -n "$SOCKS_LEFT" ]; then
		result socks_freed fail "visock sockets outlived their group by 40 s: $SOCKS_LEFT"
	else
		result socks_freed pass
	fi
fi

if group_selected module; then
	if [ "$IS_ROOT" != 1 ]; then
		finish_group module skip "needs root"
	else
		[ -n "${SEL[module.unload_busy]:-}" ] && test_unload_busy
		[ -n "${SEL[module.unload]:-}" ] && test_unload
		[ -n "${SEL[module.ctl_unloaded]:-}" ] && test_ctl_unloaded
		[ -n "${SEL[module.fresh_load]:-}" ] && test_fresh_load
		[ -n "${SEL[module.reload_loop]:-}" ] && test_reload_loop
		[ -n "${SEL[module.restore_state]:-}" ] && test_restore_state
	fi
fi
restore_state

# ---- kernel log ----

if [ -n "${SEL[kernel_log_clean]:-}" ]; then
	if [ "$KLOG_OK" != 0 ] || ! dmesg >/dev/null 2>&1; then
		result kernel_log_clean skip "cannot read the kernel log (dmesg)"
	else
		[ "$KLOG_MARK" = 1 ] && echo "$KLOG_TAG: end" > /dev/kmsg 2>/dev/null
		new=$(klog_new)
		[ -n "$RESULTS_BASE" ] && printf '%s\n' "$new" > "$RESULTS_BASE.dmesg"
		new=$(printf '%s\n' "$new" | drop_alloc_reports)
		bad=$(printf '%s\n' "$new" | grep -E "$KLOG_PATTERN")
		if [ -n "$bad" ]; then
			diag "$(printf '%s\n' "$new" | grep -E -A 20 "$KLOG_PATTERN" | head -n 200)"
			result kernel_log_clean fail "$(printf '%s\n' "$bad" | wc -l) kernel log lines match $KLOG_PATTERN"
		else
			result kernel_log_clean pass
		fi
	fi
fi

ktap_summary "visock selftests"
echo "# Totals: pass:$NPASS fail:$NFAIL xfail:0 xpass:0 skip:$NSKIP error:0"
[ "$NFAIL" = 0 ]
