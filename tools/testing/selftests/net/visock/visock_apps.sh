#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# visock_apps.sh - unmodified third-party programs over visock.
#
# iperf3, sockperf, nginx (with curl and wrk) and redis-server (with
# redis-benchmark and redis-cli) between two hosts: servers on the server
# host, clients on the client host.  Each runs once redirected to visock
# (visock_redirect(8) where the kernel has the update_socket_protocol()
# hook, else the LD_PRELOAD wrapper of visock_run(8)) and, where the test
# says so, once as plain TCP.  The /proc/net/visock counters of both
# hosts must show the redirected runs' bytes over RDMA and none for the
# plain runs.  apps.one_side redirects the client only, with
# net.visock.enable=0 on the server host: the programs still work, over
# TCP.
#
# Run by run_tests.sh in its handshake pass (net.visock.enable=1 on both
# hosts, after hs.rdma_ready passed), on both hosts at the same time.
# The two halves meet at sync points: files in the results directories
# that the VM bed shares between its guests ($VISOCK_RESULTS, and the
# peer's $VISOCK_PEER_RESULTS), as tools/testing/bench/bench.sh does.
#
#   visock_apps.sh --list
#   visock_apps.sh --role client|server [--peer ADDR] [--port-base N]
#                  [--pick NAME]...
#
# Output is KTAP; both halves report every test with the client's verdict.

DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=visock_lib.sh
. "$DIR/visock_lib.sh" || exit 2
shopt -s lastpipe

ALL_TESTS=(iperf3_visock iperf3_tcp sockperf nginx_curl_wrk redis one_side)
ROLE=
PEER=${VISOCK_PEER_IP:-}
PORT_BASE=${VISOCK_APPS_PORT_BASE:-7840}
SYNC_TIMEOUT=${VISOCK_APPS_SYNC_TIMEOUT:-180}
LIST=0
PICKS=()
SKIPS=()
# Bytes a run may carry over visock's TCP path and still count as "over
# RDMA" (nothing but handshakes should go there).
TCP_SLACK=${VISOCK_APPS_TCP_SLACK:-65536}
IPERF_BYTES=$((8 * 1024 * 1024))
BIG_BYTES=$((4 * 1024 * 1024))
# redis-benchmark's parallel connections: its default, 50.  Before the
# device count became lockless, 50 made 6.12 guests hit "BUG: scheduling
# while atomic" (mutex_lock() of visock_ibdevs_lock in
# visock_ib_device_count(), called for the SYN option from the netfilter
# hook) and hang, so this is also that bug's regression test.
REDIS_CLIENTS=${VISOCK_APPS_REDIS_CLIENTS:-50}

while [ $# -gt 0 ]; do
	case "$1" in
	--role) ROLE=$2; shift ;;
	--peer) PEER=$2; shift ;;
	--port-base) PORT_BASE=$2; shift ;;
	--list) LIST=1 ;;
	--pick) PICKS+=("$2"); shift ;;
	*) echo "usage: $0 --list | --role client|server [--peer ADDR] [--port-base N] [--pick NAME]..." >&2
	   exit 2 ;;
	esac
	shift
done

if [ "$LIST" = 1 ]; then
	printf '%s\n' "${ALL_TESTS[@]}"
	exit 0
fi
case "$ROLE" in
client) [ -n "$PEER" ] || { echo "--role client needs --peer" >&2; exit 2; } ;;
server) ;;
*) echo "--role client|server" >&2; exit 2 ;;
esac

for t in "${ALL_TESTS[@]}"; do
	add_test "$t"
done

ktap_plan

finish() {
	ktap_summary visock_apps
	[ "$NFAIL" = 0 ]
	exit
}

skip_all() {
	local t

	for t in "${TESTS[@]}"; do
		result "$t" skip "$1"
	done
	finish
}

[ ${#TESTS[@]} -gt 0 ] || finish
[ "$(id -u)" = 0 ] || skip_all "needs root"
[ -r /proc/net/visock ] || skip_all "no /proc/net/visock: module not loaded"
if [ -z "${VISOCK_RESULTS:-}" ] || [ -z "${VISOCK_PEER_RESULTS:-}" ] ||
   [ ! -d "$VISOCK_RESULTS" ] || [ ! -d "$VISOCK_PEER_RESULTS" ]; then
	skip_all "needs directories shared by both hosts (VISOCK_RESULTS, VISOCK_PEER_RESULTS: the VM test bed)"
fi

# ---- tools ----

REDIR_TOOL=${VISOCK_REDIRECT:-$(visock_tool visock_redirect)}
PRELOAD_SO=${VISOCK_PRELOAD_SO:-$(visock_tool visock_preload.so)}

# How programs get visock sockets: the BPF redirect where the kernel has
# the hook (6.6+), the LD_PRELOAD wrapper otherwise.
if has_redirect_hook && [ -n "$REDIR_TOOL" ]; then
	METHOD=bpf
elif [ -n "$PRELOAD_SO" ]; then
	METHOD=preload
else
	skip_all "neither visock_redirect (with the 6.6+ hook) nor visock_preload.so found (make tools)"
fi
REDIR_COMMS=(iperf3 sockperf nginx curl wrk redis-server redis-benchmark redis-cli)

# ---- synchronisation through the shared results directories ----

SYNC_ID=${VISOCK_JOB_ID:-0}
SYNC_ID=${SYNC_ID//[^A-Za-z0-9_.-]/_}
rm -f "$VISOCK_RESULTS"/apps-sync.*
PEER_LOST=
PEER_STATUS=

# sync_point NAME [STATUS]: publish STATUS and wait for the peer to reach
# the same point; the peer's status ends up in PEER_STATUS.  Fails at once
# once the peer missed a sync point.
sync_point() {
	local mine=$VISOCK_RESULTS/apps-sync.$SYNC_ID.$1
	local theirs=$VISOCK_PEER_RESULTS/apps-sync.$SYNC_ID.$1 i

	PEER_STATUS=
	printf '%s\n' "${2:-ok}" > "$mine.tmp"
	mv "$mine.tmp" "$mine"
	[ -z "$PEER_LOST" ] || return 1
	for i in $(seq $((SYNC_TIMEOUT * 10))); do
		if [ -s "$theirs" ]; then
			PEER_STATUS=$(cat "$theirs")
			return 0
		fi
		sleep 0.1
	done
	PEER_LOST=$1
	return 1
}

# ---- counters ----

# counters: "rdma_sent rdma_rcvd tcp_sent tcp_rcvd connections_rdma"
counters() {
	awk '{ v[$1] = $2 }
	     END { printf "%d %d %d %d %d\n", v["rdma_bytes_sent"],
		   v["rdma_bytes_rcvd"], v["tcp_bytes_sent"],
		   v["tcp_bytes_rcvd"], v["connections_rdma"] }' /proc/net/visock
}

# The fallback counters (fallback_<reason> N lines), and what changed
# between two snapshots ("reason +N ..."), to say why a run used TCP.
fb_counters() {
	grep '^fallback_' /proc/net/visock 2>/dev/null | grep -v '^fallback_none '
}
fb_delta() {
	# One stream, "--" between the snapshots: the guests have no /dev/fd
	# for <(...).
	printf '%s\n--\n%s\n' "$1" "$2" |
		awk '$0 == "--" { after = 1; next }
		     !after { b[$1] = $2; next }
		     $2 != b[$1] { printf "%s +%d ", substr($1, 10), $2 - b[$1] }'
}

# delta BEFORE AFTER: field-wise AFTER - BEFORE.
delta() {
	local -a b a
	local i out=

	read -ra b <<< "$1"
	read -ra a <<< "$2"

	for i in 0 1 2 3 4; do
		out+="$((a[i] - b[i])) "
	done
	echo "${out% }"
}

# fmt DELTA: readable form for the log.
fmt() {
	local -a d

	read -ra d <<< "$1"

	echo "rdma sent ${d[0]} rcvd ${d[1]}, tcp sent ${d[2]} rcvd ${d[3]}, rdma connections ${d[4]}"
}

# ---- modes ----

# set_mode visock|plain|oneside: what this host's programs get.
# oneside: the client host redirects, the server host neither redirects
# nor has visock enabled.
# Sets WRAP (the command prefix of the programs), MODE_ERR on errors.
WRAP=()
MODE_ERR=
set_mode() {
	local mode=$1 out args=() c

	[ "$mode" = oneside ] && [ "$ROLE" = server ] && mode=plain_off
	WRAP=()
	[ "$METHOD" = bpf ] && "$REDIR_TOOL" unload >/dev/null 2>&1
	case "$mode" in
	plain_off) echo 0 > /proc/sys/net/visock/enable ;;
	*) echo 1 > /proc/sys/net/visock/enable ;;
	esac
	case "$mode" in
	visock|oneside)
		if [ "$METHOD" = bpf ]; then
			for c in "${REDIR_COMMS[@]}"; do
				args+=(--comm "$c")
			done
			if ! out=$("$REDIR_TOOL" load "${args[@]}" 2>&1); then
				MODE_ERR="visock_redirect load: $out"
				return 1
			fi
		else
			WRAP=(env "LD_PRELOAD=$PRELOAD_SO")
		fi ;;
	esac
	return 0
}

# ---- server side helpers ----

ORIG_ENABLE=$(cat /proc/sys/net/visock/enable 2>/dev/null)
SRV_PID=
SRV_LOG=/dev/null
PORT_OFF=0
SRV_TMP=$(mktemp -d /tmp/visock-apps.XXXXXX)
chmod 755 "$SRV_TMP"

cleanup() {
	stop_server
	SRV_PID=$NGINX_PID
	stop_server
	[ "$METHOD" = bpf ] && "$REDIR_TOOL" unload >/dev/null 2>&1
	[ -n "$ORIG_ENABLE" ] && [ -w /proc/sys/net/visock/enable ] &&
		echo "$ORIG_ENABLE" > /proc/sys/net/visock/enable
	rm -rf "$SRV_TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_server LOG CMD...: start a server in the background.
start_server() {
	local log=$1

	shift
	SRV_LOG=$log
	"${WRAP[@]}" "$@" > "$log" 2>&1 < /dev/null &
	SRV_PID=$!
}

# wait_listen PORT: until something listens on PORT (up to 20 s).
wait_listen() {
	local i

	for i in $(seq 150); do
		[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ] && return 0
		kill -0 "$SRV_PID" 2>/dev/null || return 1
		sleep 0.1
	done
	# Not in ss's list (a visock listener may not be): alive is enough.
	kill -0 "$SRV_PID" 2>/dev/null
}

# stop_server [WAIT_S]: wait up to WAIT_S for the server to exit by itself,
# then kill it.  Sets SRV_RC.
stop_server() {
	local i

	SRV_RC=
	[ -n "$SRV_PID" ] || return 0
	for i in $(seq $((${1:-0} * 10))); do
		kill -0 "$SRV_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$SRV_PID" 2>/dev/null; then
		kill "$SRV_PID" 2>/dev/null
		for i in $(seq 50); do
			kill -0 "$SRV_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$SRV_PID" 2>/dev/null
		wait "$SRV_PID" 2>/dev/null
		SRV_RC=killed
	else
		wait "$SRV_PID" 2>/dev/null
		SRV_RC=$?
	fi
	SRV_PID=
}

# ---- one run of an application, both halves ----

# run_app NAME MODE SERVER_FN CLIENT_FN CHECK
#
# Both hosts: set MODE, meet.  Server: SERVER_FN start (prints "ok ..." or
# a reason), publish.  Client: CLIENT_FN (prints "ok ..." or a reason) with
# the counters read around it.  Server: SERVER_FN stop, publish its
# counter delta.  Client: judge (the run's status and the counters, see
# check_counters with CHECK), publish the verdict.  Both: RUN_VERDICT is
# "ok" or the reason it failed.
RUN_VERDICT=
run_app() {
	local mode=$2 sfn=$3 cfn=$4 check=$5 sp=$1.$2
	local st c0 c1 f0 fbs mine theirs why='' cstat sinfo

	RUN_VERDICT=
	# A port per mode: a server killed at the end of one run leaves its
	# connections in TIME_WAIT, and not every server sets SO_REUSEADDR
	# (sockperf does not).
	case "$mode" in
	visock) PORT_OFF=0 ;;
	plain) PORT_OFF=10 ;;
	*) PORT_OFF=20 ;;
	esac
	if ! set_mode "$mode"; then
		why="$ROLE: $MODE_ERR"
	fi
	if ! sync_point "$sp.setup" "${why:-ok}"; then
		RUN_VERDICT="peer did not reach sync point $sp.setup"
		return
	fi
	[ "$PEER_STATUS" != ok ] && why="${why:+$why; }peer: $PEER_STATUS"
	if [ -n "$why" ]; then
		RUN_VERDICT=$why
		return
	fi

	c0=$(counters)
	f0=$(fb_counters)
	if [ "$ROLE" = server ]; then
		st=$("$sfn" start)
		# The server runs in this shell (command substitution would
		# make it a grandchild): start it again the same way.
		if [[ $st == ok* ]] && ! "$sfn" start_here; then
			st="server did not start: $(tail -n 3 "$SRV_LOG" 2>/dev/null | tr '\n' ' ')"
		fi
		sync_point "$sp.ready" "$st" || { RUN_VERDICT="peer lost at $sp.ready"; stop_server; return; }
		sync_point "$sp.done" "ok" || { RUN_VERDICT="peer lost at $sp.done"; stop_server; return; }
		"$sfn" stop
		c1=$(counters)
		mine=$(delta "$c0" "$c1")
		fbs=$(fb_delta "$f0" "$(fb_counters)")
		[ -n "$fbs" ] && diag "$sp: server fallbacks: $fbs"
		diag "$sp: server failovers $(awk '$1 == "rdma_failovers" { print $2 }' /proc/net/visock 2>/dev/null) in all"
		sync_point "$sp.sdone" "$mine|$SRV_INFO" || { RUN_VERDICT="peer lost at $sp.sdone"; return; }
		sync_point "$sp.verdict" "ok" || { RUN_VERDICT="peer lost at $sp.verdict"; return; }
		RUN_VERDICT=$PEER_STATUS
		return
	fi

	sync_point "$sp.ready" "ok" || { RUN_VERDICT="peer did not reach sync point $sp.ready"; return; }
	sinfo=$PEER_STATUS
	if [[ $sinfo == ok* ]]; then
		cstat=$("$cfn" "$sinfo")
	else
		cstat="server: $sinfo"
	fi
	c1=$(counters)
	mine=$(delta "$c0" "$c1")
	fbs=$(fb_delta "$f0" "$(fb_counters)")
	sync_point "$sp.done" "ok" || { RUN_VERDICT="peer lost at $sp.done"; return; }
	sync_point "$sp.sdone" "ok" || { RUN_VERDICT="peer did not reach sync point $sp.sdone"; return; }
	theirs=${PEER_STATUS%%|*}
	diag "$sp: client: $(fmt "$mine")${fbs:+; fallbacks: $fbs}"
	diag "$sp: client failovers $(awk '$1 == "rdma_failovers" { print $2 }' /proc/net/visock 2>/dev/null) in all"
	diag "$sp: server: $(fmt "$theirs")"
	echo "$sp a $mine b $theirs" >> "$VISOCK_RESULTS/apps-counters.txt"
	if [[ $cstat != ok* ]]; then
		why=$cstat
	elif [[ ${PEER_STATUS#*|} != ok* ]]; then
		why=${PEER_STATUS#*|}
	else
		[ "$cstat" != ok ] && diag "$sp: ${cstat#ok }"
		why=$(check_counters "$check" "$mine" "$theirs")
	fi
	RUN_VERDICT=${why:-ok}
	sync_point "$sp.verdict" "$RUN_VERDICT"
}

# check_counters rdma:BYTES|plain|oneside:BYTES CLIENT_DELTA SERVER_DELTA:
# prints what is wrong, nothing if all is well.
check_counters() {
	local kind=${1%%:*} bytes=${1#*:}
	local -a a b
	local why=''

	read -ra a <<< "$2"
	read -ra b <<< "$3"

	case "$kind" in
	rdma)
		[ $((a[0] + a[1])) -ge "$bytes" ] ||
			why+="client moved $((a[0] + a[1])) bytes over RDMA, expected >= $bytes; "
		[ $((b[0] + b[1])) -ge "$bytes" ] ||
			why+="server moved $((b[0] + b[1])) bytes over RDMA, expected >= $bytes; "
		[ $((a[2] + a[3])) -le "$TCP_SLACK" ] ||
			why+="client moved $((a[2] + a[3])) bytes over visock's TCP path; "
		[ $((b[2] + b[3])) -le "$TCP_SLACK" ] ||
			why+="server moved $((b[2] + b[3])) bytes over visock's TCP path; " ;;
	plain)
		[ $((a[0] + a[1] + a[2] + a[3] + b[0] + b[1] + b[2] + b[3])) -eq 0 ] ||
			why+="visock counters moved in a plain run (client $(fmt "$2"); server $(fmt "$3")); " ;;
	oneside)
		[ $((a[0] + a[1] + b[0] + b[1])) -eq 0 ] ||
			why+="RDMA bytes moved with visock on one host only; "
		[ $((a[2] + a[3])) -ge "$bytes" ] ||
			why+="client moved $((a[2] + a[3])) bytes over visock's TCP fallback, expected >= $bytes; " ;;
	esac
	echo "${why%; }"
}

# ---- the applications ----

have() {
	local p

	for p in "$@"; do
		command -v "$p" >/dev/null 2>&1 || { echo "$p"; return 1; }
	done
	return 0
}

SRV_INFO=
# A server that should have exited by itself (SRV_INFO "ok" if it did, with
# status 0).
srv_info_exit() {
	SRV_INFO=ok
	[ "$SRV_RC" = 0 ] ||
		SRV_INFO="$1 server: exit $SRV_RC: $(tail -n 3 "$SRV_TMP/$1.log" | tr '\n' ' ')"
}
# A server that should have run until killed.
srv_info_killed() {
	SRV_INFO=ok
	[ "$SRV_RC" = killed ] ||
		SRV_INFO="server exited by itself (status $SRV_RC): $(tail -n 3 "$SRV_LOG" | tr '\n' ' ')"
}

# iperf3: one test of IPERF_BYTES bytes.
P_IPERF=$PORT_BASE
srv_iperf3() {
	case "$1" in
	start) echo ok ;;
	start_here) start_server "$SRV_TMP/iperf3.log" iperf3 -s -1 -p "$((P_IPERF + PORT_OFF))"
		    wait_listen "$((P_IPERF + PORT_OFF))" ;;
	stop) stop_server 20
	      srv_info_exit iperf3 ;;
	esac
}
cli_iperf3() {
	local out rc

	out=$("${WRAP[@]}" timeout 120 iperf3 -c "$PEER" -p "$((P_IPERF + PORT_OFF))" -n "$IPERF_BYTES" 2>&1)
	rc=$?
	if [ "$rc" != 0 ]; then
		echo "iperf3 -c exit $rc: $(tail -n 3 <<< "$out")"
		return
	fi
	echo "ok $(grep -E 'sender|receiver' <<< "$out" | tr -s ' ' | tr '\n' ';')"
}

# sockperf: ping-pong and throughput, 2 s each.
P_SOCKPERF=$((PORT_BASE + 1))
srv_sockperf() {
	case "$1" in
	start) echo ok ;;
	start_here) start_server "$SRV_TMP/sockperf.log" sockperf server --tcp \
			-i 0.0.0.0 -p "$((P_SOCKPERF + PORT_OFF))"
		    wait_listen "$((P_SOCKPERF + PORT_OFF))" ;;
	stop) stop_server 0
	      srv_info_killed ;;
	esac
}
cli_sockperf() {
	local out rc info=

	for kind in ping-pong throughput; do
		out=$("${WRAP[@]}" timeout 60 sockperf "$kind" --tcp -i "$PEER" \
			-p "$((P_SOCKPERF + PORT_OFF))" -t 2 -m 1024 2>&1)
		rc=$?
		if [ "$rc" != 0 ]; then
			echo "sockperf $kind exit $rc: $(tail -n 3 <<< "$out")"
			return
		fi
		if [ "$kind" = ping-pong ]; then
			info+="$(grep -m1 -o 'Summary: Latency is [^ ]* usec' <<< "$out"); "
		else
			info+="$(grep -m1 -o 'Summary: BandWidth is [^(]*' <<< "$out"); "
		fi
	done
	echo "ok $info"
}

# nginx: a 4 MiB random file and a small one, curl and wrk.
P_NGINX=$((PORT_BASE + 2))
srv_nginx() {
	local www=$SRV_TMP/www

	case "$1" in
	start)
		mkdir -p "$www" "$SRV_TMP/nginx"
		head -c "$BIG_BYTES" /dev/urandom > "$www/big.bin"
		echo "visock apps test $$" > "$www/small.txt"
		chmod -R a+rX "$www"
		cat > "$SRV_TMP/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $SRV_TMP/nginx/nginx.pid;
error_log $SRV_TMP/nginx/error.log;
events { worker_connections 64; }
http {
	access_log off;
	default_type application/octet-stream;
	client_body_temp_path $SRV_TMP/nginx/body;
	proxy_temp_path $SRV_TMP/nginx/proxy;
	fastcgi_temp_path $SRV_TMP/nginx/fastcgi;
	uwsgi_temp_path $SRV_TMP/nginx/uwsgi;
	scgi_temp_path $SRV_TMP/nginx/scgi;
	server {
		listen $((P_NGINX + PORT_OFF));
		root $www;
	}
}
EOF
		echo "ok $(cd "$www" && sha256sum big.bin small.txt | awk '{ printf "%s ", $1 }')" ;;
	start_here)
		start_server "$SRV_TMP/nginx.log" nginx -p "$SRV_TMP/nginx" \
			-e "$SRV_TMP/nginx/error.log" -c "$SRV_TMP/nginx/nginx.conf"
		wait_listen "$((P_NGINX + PORT_OFF))" ;;
	stop) stop_server 0
	      srv_info_killed ;;
	esac
}
cli_nginx() {
	local -a sums
	local tmp out rc f i=1 got reqs

	read -ra sums <<< "$1"

	tmp=$(mktemp -d)
	for f in big.bin small.txt; do
		out=$("${WRAP[@]}" timeout 60 curl -sS --fail -o "$tmp/$f" \
			"http://$PEER:$((P_NGINX + PORT_OFF))/$f" 2>&1)
		rc=$?
		if [ "$rc" != 0 ]; then
			echo "curl $f exit $rc: $out"
			rm -rf "$tmp"
			return
		fi
		got=$(sha256sum < "$tmp/$f" | awk '{ print $1 }')
		if [ "$got" != "${sums[i]}" ]; then
			echo "$f: sha256 $got, server has ${sums[i]} ($(stat -c %s "$tmp/$f") bytes)"
			rm -rf "$tmp"
			return
		fi
		i=$((i + 1))
	done
	rm -rf "$tmp"
	out=$("${WRAP[@]}" timeout 60 wrk -d2 -c4 -t1 "http://$PEER:$((P_NGINX + PORT_OFF))/small.txt" 2>&1)
	rc=$?
	reqs=$(awk '/requests in/ { print $1 }' <<< "$out")
	if [ "$rc" != 0 ] || ! [ "${reqs:-0}" -gt 0 ] 2>/dev/null ||
	   grep -qE 'Socket errors|Non-2xx' <<< "$out"; then
		echo "wrk exit $rc, ${reqs:-no} requests: $(tr '\n' ' ' <<< "$out")"
		return
	fi
	echo "ok big.bin and small.txt byte-identical; wrk: $reqs requests, no socket errors"
}

# redis: redis-benchmark SET/GET, redis-cli SET/GET of a known value.
P_REDIS=$((PORT_BASE + 3))
srv_redis() {
	case "$1" in
	start) echo ok ;;
	start_here) start_server "$SRV_TMP/redis.log" redis-server --port "$((P_REDIS + PORT_OFF))" \
			--bind 0.0.0.0 --protected-mode no --save '' \
			--appendonly no --dir "$SRV_TMP" --daemonize no
		    wait_listen "$((P_REDIS + PORT_OFF))" ;;
	stop) stop_server 0
	      srv_info_killed ;;
	esac
}
cli_redis() {
	local out rc val key=visock:apps:$$ sets gets

	val="visock-$RANDOM-$RANDOM-$(date +%s)"
	out=$("${WRAP[@]}" timeout 60 redis-cli -h "$PEER" -p "$((P_REDIS + PORT_OFF))" SET "$key" "$val" 2>&1)
	[ "$out" = OK ] || { echo "redis-cli SET: '$out'"; return; }
	out=$("${WRAP[@]}" timeout 60 redis-cli -h "$PEER" -p "$((P_REDIS + PORT_OFF))" GET "$key" 2>&1)
	[ "$out" = "$val" ] || { echo "redis-cli GET: '$out', expected '$val'"; return; }
	out=$("${WRAP[@]}" timeout 120 redis-benchmark -h "$PEER" -p "$((P_REDIS + PORT_OFF))" -q \
		-n 2000 -c "$REDIS_CLIENTS" -t set,get 2>&1)
	rc=$?
	out=$(tr '\r' '\n' <<< "$out")
	sets=$(grep -m1 -o '^SET: [0-9.]* requests per second' <<< "$out")
	gets=$(grep -m1 -o '^GET: [0-9.]* requests per second' <<< "$out")
	if [ "$rc" != 0 ] || [ -z "$sets" ] || [ -z "$gets" ]; then
		echo "redis-benchmark exit $rc: $(tail -n 3 <<< "$out" | tr '\n' ' ')"
		return
	fi
	echo "ok SET/GET read back; $sets; $gets"
}

# Both the iperf3 and curl checks of apps.one_side.
srv_oneside() {
	case "$1" in
	start) srv_nginx start ;;
	start_here) srv_iperf3 start_here && srv_nginx_bg ;;
	stop) stop_server 20
	      srv_info_exit iperf3
	      local info=$SRV_INFO
	      SRV_PID=$NGINX_PID
	      NGINX_PID=
	      stop_server 0
	      srv_info_killed
	      [ "$info" = ok ] || SRV_INFO=$info ;;
	esac
}
NGINX_PID=
srv_nginx_bg() {
	local ipid=$SRV_PID

	srv_nginx start_here
	NGINX_PID=$SRV_PID
	SRV_PID=$ipid
}
cli_oneside() {
	local st

	st=$(cli_iperf3)
	[[ $st == ok* ]] || { echo "$st"; return; }
	st=$(cli_nginx "$1")
	echo "$st"
}

# ---- the tests ----

# test_app TEST MODE... : run_app for each MODE; the test fails at the
# first failed run.
test_app() {
	local t=$1 sfn=$2 cfn=$3 missing

	shift 3
	if ! missing=$(have "${NEED[@]}"); then
		result "$t" skip "$missing not installed"
		return
	fi
	while [ $# -gt 0 ]; do
		run_app "$t" "${1%%=*}" "$sfn" "$cfn" "${1#*=}"
		if [ "$RUN_VERDICT" != ok ]; then
			result "$t" fail "${1%%=*} run: $RUN_VERDICT"
			return
		fi
		shift
	done
	result "$t" pass
}

diag "visock_apps: role $ROLE, $METHOD, kernel $(uname -r)"
for t in "${TESTS[@]}"; do
	case "$t" in
	iperf3_visock)
		NEED=(iperf3)
		test_app "$t" srv_iperf3 cli_iperf3 "visock=rdma:$IPERF_BYTES" ;;
	iperf3_tcp)
		NEED=(iperf3)
		test_app "$t" srv_iperf3 cli_iperf3 "plain=plain" ;;
	sockperf)
		NEED=(sockperf)
		test_app "$t" srv_sockperf cli_sockperf "visock=rdma:1" "plain=plain" ;;
	nginx_curl_wrk)
		NEED=(nginx curl wrk)
		test_app "$t" srv_nginx cli_nginx "visock=rdma:$BIG_BYTES" "plain=plain" ;;
	redis)
		NEED=(redis-server redis-cli redis-benchmark)
		test_app "$t" srv_redis cli_redis "visock=rdma:1" "plain=plain" ;;
	one_side)
		NEED=(iperf3 nginx curl)
		test_app "$t" srv_oneside cli_oneside "oneside=oneside:$IPERF_BYTES" ;;
	esac
done
finish
