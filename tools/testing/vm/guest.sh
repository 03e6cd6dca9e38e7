#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest.sh - the visock test VM agent.
#
# Runs as PID 1 inside each guest, right after the initramfs switched into
# the overlay of the host's root file system.  It reads its role from the
# kernel command line (visock.host=a|b, visock.mode=run|persist,
# visock.src=DIR, visock.results=DIR, visock.modules=DIR for a kernel
# whose modules are not in the host's /lib/modules, and visock.hosts=abcd
# on a bed of more than two hosts), sets up the guest (mounts, hostname,
# addresses, soft-RoCE device), waits for the peer and then executes jobs
# that vm.sh drops into the "ctl" 9p share:
#
#   ctl/<host>/job    bash fragment setting VISOCK_JOB_ID and VISOCK_JOB_ARGV
#                     (and VISOCK_JOB_KO, exported to the job as VISOCK_KO)
#   ctl/<host>/done   written when the job finished (contains the job id)
#   ctl/<host>/stop   ask the guest to power off (persistent mode)
#   ctl/<host>/ready  written once the guest is fully set up
#
# In "run" mode exactly one job is executed, then the guest powers off.
# In "persist" mode the agent polls for new jobs every 0.2 s.
#
# PID 1 must never exit (the kernel would panic), so every exit path ends
# in power_off.  Messages printed here go to the serial console, which the
# host scans for kernel splats: never print the words it looks for.

set -euo pipefail

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C HOME=/root TERM=dumb

ctl=/run/visock/ctl
host='?'

say() { echo "visock-vm[$host]: $*"; }

power_off() {
	set +e
	trap - EXIT
	sync
	echo o >/proc/sysrq-trigger
	# The power-off happens asynchronously and takes the 9p root away
	# (no binary runs any more); PID 1 must not return meanwhile, so it
	# blocks in a bash builtin reading a FIFO nobody writes.
	while :; do
		if [ -p /run/visock-idle ]; then
			read -r _ <>/run/visock-idle
		else
			read -r -t 60 _ </dev/console
		fi
	done
}

on_exit() {
	say "agent stopped unexpectedly (line ${1:-?}), powering off"
	power_off
}
trap 'on_exit $LINENO' EXIT

mount9p() { # TAG DIR [EXTRA_OPTIONS]
	mkdir -p "$2"
	mount -t 9p -o "trans=virtio,version=9p2000.L,msize=262144${3:+,$3}" "$1" "$2"
}

# --- basic file systems ----------------------------------------------------
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# The host's /tmp and /run must not leak into the guest.
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /run
mkfifo /run/visock-idle	# see power_off()
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || true
mount -t configfs configfs /sys/kernel/config 2>/dev/null || true

# --- role from the kernel command line -------------------------------------
mode=run src='' results='' modules='' all_hosts=ab
for arg in $(</proc/cmdline); do
	case "$arg" in
	visock.host=*)    host=${arg#*=} ;;
	visock.mode=*)    mode=${arg#*=} ;;
	visock.src=*)     src=${arg#*=} ;;
	visock.results=*) results=${arg#*=} ;;
	visock.modules=*) modules=${arg#*=} ;;
	visock.hosts=*)   all_hosts=${arg#*=} ;;
	esac
done
# Host number n (a = 1, b = 2, ...) has the addresses 10.77.0.n and
# fd77::n.  The peer of host a is b, every other host's peer is a.
case "$all_hosts" in ab | abcd) ;; *) say "bad visock.hosts"; power_off ;; esac
case "$host" in
a) me=1 peer=2 peer_host=b ;;
b) me=2 peer=1 peer_host=a ;;
c) me=3 peer=1 peer_host=a ;;
d) me=4 peer=1 peer_host=a ;;
*) say "bad visock.host"; power_off ;;
esac
[[ $all_hosts == *"$host"* ]] || { say "host $host is not on this bed"; power_off; }
others=()
for ((i = 0; i < ${#all_hosts}; i++)); do
	[ "${all_hosts:i:1}" = "$host" ] || others+=("${all_hosts:i:1}")
done

# The repository is shared directly (no overlay, no caching) so that files
# rebuilt on the host are seen at once; the results share is mounted at the
# same path as on the host so that paths in logs mean the same thing.
mount9p src "$src" ro
mkdir -p "$results" 2>/dev/null || true
mount9p results "$results"
mount9p ctl "$ctl"
mkdir -p "$ctl/$host"

echo "visock-$host" >/proc/sys/kernel/hostname

# A kernel built into the cache (6.12-debug): its module tree, seen through
# the read-only host root, goes where modprobe looks (in the overlay).
if [ -n "$modules" ] && [ ! -e "/lib/modules/$(uname -r)" ]; then
	mkdir -p /lib/modules
	ln -s "$modules" "/lib/modules/$(uname -r)"
fi

# --- network ---------------------------------------------------------------
local_ip=10.77.0.$me peer_ip=10.77.0.$peer
local_ip6=fd77::$me peer_ip6=fd77::$peer
# The NIC driver: virtio_net comes with the initramfs, others load here.
[ -e /sys/class/net/eth0 ] || modprobe "${VISOCK_NIC_DRIVER:-e1000}"
for c in all default eth0; do
	echo 0 >"/proc/sys/net/ipv6/conf/$c/accept_dad"
done
ip link set lo up
ip link set eth0 up
ip addr add "$local_ip/24" dev eth0
ip -6 addr add "$local_ip6/64" dev eth0 nodad

# --- soft-RoCE ---------------------------------------------------------------
modprobe rdma_rxe
modprobe ib_uverbs
modprobe rdma_ucm 2>/dev/null || true
rdma link add rxe0 type rxe netdev eth0
state=/sys/class/infiniband/rxe0/ports/1/state
for _ in $(seq 150); do
	grep -q ACTIVE "$state" 2>/dev/null && break
	sleep 0.2
done
grep -q ACTIVE "$state" || { say "rxe0 port not active: $(cat "$state")"; power_off; }

# --- wait for the peer --------------------------------------------------------
# Both guests boot in parallel, so this normally takes a second or two.
peer_ok=0
for _ in $(seq 60); do
	if busybox ping -q -c 1 -W 1 "$peer_ip" >/dev/null 2>&1; then
		peer_ok=1
		break
	fi
done
# On a bed of more hosts, every one of them.
for o in "${others[@]}"; do
	ip=10.77.0.$(( $(printf '%d' "'$o") - 96 ))
	[ "$ip" != "$peer_ip" ] || continue
	for _ in $(seq 60); do
		if busybox ping -q -c 1 -W 1 "$ip" >/dev/null 2>&1; then
			break
		fi
	done
done
[ "$peer_ok" = 1 ] || say "peer $peer_ip does not answer (jobs will run anyway)"

read -r up _ </proc/uptime
echo "$up" >"$ctl/$host/ready.tmp"
mv "$ctl/$host/ready.tmp" "$ctl/$host/ready"
say "ready after ${up}s (peer reachable: $peer_ok)"

# Rendezvous through the shared ctl directory: a quick job on one host must
# not finish (and power off) before the other host has even seen its peer.
for o in "${others[@]}"; do
	for _ in $(seq 300); do
		[ -f "$ctl/$o/ready" ] && break
		sleep 0.2
	done
done

# What every job (and the debug shell) gets in its environment.
job_env=(PATH="$PATH" LC_ALL=C HOME=/root
	VISOCK_HOST="$host" VISOCK_PEER_HOST="$peer_host"
	VISOCK_LOCAL_IP="$local_ip" VISOCK_PEER_IP="$peer_ip"
	VISOCK_LOCAL_IP6="$local_ip6" VISOCK_PEER_IP6="$peer_ip6"
	VISOCK_KVER="$(uname -r)" VISOCK_SRC="$src"
	VISOCK_RESULTS="$results/$host" VISOCK_PEER_RESULTS="$results/$peer_host")
# A bed of more than two hosts: their names, and where their results go.
[ "$all_hosts" = ab ] ||
	job_env+=(VISOCK_HOSTS="$(echo "$all_hosts" | sed 's/./& /g; s/ $//')"
		VISOCK_RESULTS_ROOT="$results")

# --- jobs ----------------------------------------------------------------------
# run_job JOBFILE: execute one job and leave console.log, rc and dmesg.txt in
# the per-host results directory, then signal completion through "done".
run_job() {
	local job=$1 res=$results/$host rc=0 pid marker
	local VISOCK_JOB_ID VISOCK_JOB_ARGV VISOCK_JOB_KO='' ko_env=()
	# shellcheck disable=SC1090
	source "$job"
	# vm.sh --module-a/--module-b: the module file this host's job loads.
	[ -z "$VISOCK_JOB_KO" ] || ko_env=(VISOCK_KO="$VISOCK_JOB_KO")
	mkdir -p "$res"
	rm -f "$res/console.log" "$res/rc" "$res/dmesg.txt"

	marker="visock-vm: job $VISOCK_JOB_ID begins"
	echo "$marker" >/dev/kmsg

	# A clean environment, its own session (so that leftovers can be
	# killed afterwards) and line-buffered stdio so the host sees output
	# as it is produced.
	(
		cd "$res"
		ulimit -l unlimited
		exec env -i "${job_env[@]}" "${ko_env[@]}" TERM=dumb VISOCK_JOB_ID="$VISOCK_JOB_ID" \
			setsid stdbuf -oL -eL "${VISOCK_JOB_ARGV[@]}"
	) >"$res/console.log" 2>&1 </dev/null &
	pid=$!
	wait "$pid" || rc=$?
	# Anything the job left running in its session dies with it.
	pkill -KILL -s "$pid" 2>/dev/null || true

	if [ "$mode" = run ]; then
		dmesg >"$res/dmesg.txt"
	else
		# Only what the kernel logged since this job started.
		dmesg | awk -v m="$marker" 'index($0, m) { on = 1 } on' >"$res/dmesg.txt"
	fi
	echo "$rc" >"$res/rc"
	sync
	echo "$VISOCK_JOB_ID" >"$ctl/$host/done.tmp"
	mv "$ctl/$host/done.tmp" "$ctl/$host/done"
}

if [ "$mode" = run ]; then
	if [ -f "$ctl/$host/job" ]; then
		run_job "$ctl/$host/job"
	else
		say "no job file"
	fi
	power_off
fi

# Debug shell on the second serial port (vm.sh shell), respawned on exit.
if [ -e /dev/ttyS1 ]; then
	(
		trap - EXIT
		while :; do
			env -i "${job_env[@]}" TERM=vt100 PS1="visock-$host:\\w# " \
				setsid -w -c bash --norc -i <>/dev/ttyS1 >&0 2>&0 || true
			sleep 1
		done
	) &
fi

while :; do
	if [ -e "$ctl/$host/stop" ]; then
		say "stop requested"
		power_off
	fi
	if [ -f "$ctl/$host/job" ]; then
		mv "$ctl/$host/job" "$ctl/$host/job.running"
		run_job "$ctl/$host/job.running"
	fi
	sleep 0.2
done
