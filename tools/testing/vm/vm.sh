#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# vm.sh - two-host QEMU test bed for visock (see README.md).
#
#   vm.sh prepare [--kernel 6.1|6.12|6.12-debug|7.3|all]
#   vm.sh kver 6.1|6.12|6.12-debug|7.3
#   vm.sh check-path   (refuse a repository path the guests cannot use)
#   vm.sh run   --kernel K [--kernel-b K] [--timeout SECS]
#               [--module-a KO] [--module-b KO] [--capture] -- SCRIPT [ARGS...]
#   vm.sh start --kernel K [--kernel-b K] [--timeout SECS]
#   vm.sh exec  --kernel K [--kernel-b K] [--timeout SECS]
#               [--module-a KO] [--module-b KO] -- SCRIPT [ARGS...]
#   vm.sh stop  --kernel K [--kernel-b K]
#   vm.sh status --kernel K [--kernel-b K]
#   vm.sh shell --kernel K [--kernel-b K] --host a|b   (shell on a started bed)
#
# --hosts 4 (with run, start, exec, stop, status, shell) boots four
# guests, hosts a, b, c and d (10.77.0.1 to 10.77.0.4), all with the same
# kernel, on one Ethernet segment: each guest's link goes to udp-hub.py,
# a learning switch on the host.  Such a bed has its own ports, state
# and results directory (<kver>-4h); without --hosts, or with --hosts 2,
# the bed is the two-host one as always.
#
# --kernel-b boots host b with another kernel than host a (a mixed bed,
# named <kver a>+<kver b>: its own state, ports and results directory).
# --module-a / --module-b give the job on host a / b VISOCK_KO=KO (the
# module file the kselftests insmod), e.g. another release's visock.ko
# for a bed of mixed visock versions.
#
# --capture (with run; or VISOCK_VM_CAPTURE=1) has QEMU write everything
# each guest's NIC sends and receives to <results>/<host>/link.pcap
# (filter-dump: pcap, Ethernet frames in full).  Off by default: it costs
# a copy of every frame and as much disk as the run moves.
#
# Environment:
#   VISOCK_CACHE        cache root (default ~/.cache/visock)
#   VISOCK_RESULTS_DIR  host results directory (default
#                       <repo>/build/vm-results/<kver>, <kver a>+<kver b>
#                       on a mixed bed)
#   VISOCK_VM_INSTANCE  test bed number 0..99 (default 0); separate numbers
#                       give separate UDP ports and state directories
#   VISOCK_VM_PORT_BASE first UDP port (default 27700)
#   VISOCK_VM_ACCEL     QEMU accelerator (default tcg)
#   VISOCK_VM_CPU       QEMU CPU model (default max)
#   VISOCK_VM_QEMU      QEMU binary (default qemu-system-x86_64, >= 8.1:
#                       "prepare" installs it from bookworm-backports)
#   VISOCK_VM_MEM       guest RAM in MiB (default 1024, 2048 on 6.12-debug)
#   VISOCK_VM_APPEND    more kernel command line (e.g. kmemleak=on)
#   VISOCK_VM_CAPTURE   1: as --capture
#
# Kernels: 6.1 and 6.12 are Debian's (/boot, /lib/modules); 6.12-debug is
# the KASAN/lockdep kernel built by tools/testing/debug-kernel.sh into the
# cache ("prepare --kernel 6.12-debug" builds it; "all" means 6.1 and 6.12;
# VISOCK_DEBUG_SOURCE_VERSION selects another linux-source-6.12 version).
# 7.3 is Debian's trixie-backports kernel: "prepare --kernel 7.3" takes
# its kernel and modules out of Debian's linux-binary-* and linux-modules-*
# packages into the cache (through the 7.3 chroot of
# tools/testing/kernel-chroot.sh, whose headers build visock.ko for it);
# nothing is installed on the host.  The guests' userland stays the
# host's (Debian 12).

set -euo pipefail

# Physical paths: the guests mount the repository at this path, and job
# scripts are matched against it after realpath.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../../.." && pwd -P)
cache_root=${VISOCK_CACHE:-$HOME/.cache/visock}/vm
kernels_root=${VISOCK_CACHE:-$HOME/.cache/visock}/kernels
inst=${VISOCK_VM_INSTANCE:-0}
port_base=${VISOCK_VM_PORT_BASE:-27700}
accel=${VISOCK_VM_ACCEL:-tcg}
mem=${VISOCK_VM_MEM:-}
cpu=${VISOCK_VM_CPU:-max}
qemu=${VISOCK_VM_QEMU:-qemu-system-x86_64}
debug_kernel=$repo/tools/testing/debug-kernel.sh

# Kernel series we know about.  The position in this list selects the UDP
# port pair (see setup_bed), so append new series at the end.
all_series=(6.1 6.12 6.12-debug 7.3)
# What "prepare --kernel all" prepares: the Debian kernels.
stock_series=(6.1 6.12)
# Built from source into the cache, not installed in /boot.
debug_series=" 6.12-debug "
# Series shipped by bookworm-backports rather than bookworm itself.
backports_series=" 6.12 "
# Debian kernels newer than the host's apt knows: unpacked into the cache.
unpacked_series=" 7.3 "
kernel_chroot=$repo/tools/testing/kernel-chroot.sh

# as_root, pkg_missing, apt_update, apt_install (its die is replaced below).
# shellcheck source=tools/testing/deps.sh
. "$repo/tools/testing/deps.sh"

# Userspace the guests use (they run the host's binaries).  QEMU itself is
# installed from bookworm-backports (see qemu_too_old()).
base_pkgs=(busybox-static kmod xz-utils zstd cpio iproute2
	procps iputils-ping socat rdma-core ibverbs-utils ibverbs-providers librdmacm1 perftest iperf3 sockperf
	iptables nginx-light curl wrk redis-server redis-tools)

# What the host looks for in guest kernel logs.
splat_patterns=("Oops" "WARNING:" "BUG:" "Call Trace:" "Kernel panic" "KASAN"
	"UBSAN" "suspected memory leak" "possible circular locking")

die() { echo "vm.sh: error: $*" >&2; exit 1; }

# QEMU NIC model (VISOCK_VM_NIC overrides): an emulated e1000 on every
# kernel.  With virtio-net, Debian's 6.1 guest stalled its transmit queue
# for good under heavy RDMA load on TCG (NETDEV WATCHDOG, three times in
# 64-connection tests), and 6.12 guests died of a double fault with
# impossible RFLAGS in the Soft-RoCE sender (rxe_requester ->
# __alloc_skb) during 64-connection tests (twice in CI, three times here
# in stress loops).  e1000 has shown neither (6.1 always; 6.12: 40 loops
# of the 64-connection tests).  See tools/testing/vm/README.md.  The
# debug kernel keeps virtio-net (below).
vm_nic() {
	if [ -n "${VISOCK_VM_NIC:-}" ]; then
		echo "$VISOCK_VM_NIC"
	elif is_debug_kver "$1"; then
		# Slow enough under TCG that ACPI's interrupt routing for
		# e1000's INTx times out (no GSI, link down); virtio-net uses
		# MSI-X, and the debug kernel is for hunting its crash anyway.
		echo virtio-net-pci
	else
		echo e1000
	fi
}
# Guest RAM per kernel (VISOCK_VM_MEM overrides): KASAN's shadow memory
# and quarantine, kmemleak and lockdep want more than the stock 1 GiB.
vm_mem() {
	if is_debug_kver "$1"; then echo 2048; else echo 1024; fi
}
# Kernel command line per kernel, plus VISOCK_VM_APPEND.  The debug kernel
# prints warnings (lockdep, WARN) on the serial console too, so that they
# are seen even when the guest dies before dmesg.txt is written.  no5lvl:
# with 5-level paging (QEMU's -cpu max has LA57), an interrupt while
# identify_cpu() refills the boot CPU's feature bits made KASAN report a
# "wild-memory-access" in handle_edge_irq at boot (the kernel briefly
# believes in 4 levels), and any KASAN report turns lockdep off.
# page_owner=on: KASAN reports on pages name who allocated and freed them.
vm_append() {
	local a=''
	if is_debug_kver "$1"; then a=' loglevel=5 no5lvl page_owner=on'; fi
	echo "$a${VISOCK_VM_APPEND:+ $VISOCK_VM_APPEND}"
}
info() { echo "vm.sh: $*"; }
now_ms() { echo $(( ${EPOCHREALTIME/./} / 1000 )); }
secs() { awk -v ms="$1" 'BEGIN { printf "%.1f", ms / 1000 }'; }

usage() {
	sed -n '4,50s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
	exit "${1:-2}"
}

# ---------------------------------------------------------------------------
# Kernel resolution
# ---------------------------------------------------------------------------

series_slot() { # SERIES -> index in all_series
	local i
	for i in "${!all_series[@]}"; do
		[ "${all_series[$i]}" = "$1" ] && { echo "$i"; return; }
	done
	die "unknown kernel series '$1' (known: ${all_series[*]})"
}

# Print the kernel release (uname -r) of the newest Debian linux-image-amd64
# metapackage of SERIES known to apt, e.g. 6.1 -> 6.1.0-56-amd64.  Falls back
# to the newest installed kernel of that series if apt knows none.
resolve_kver() {
	local series=$1 best='' bestk='' v k d
	series_slot "$series" >/dev/null
	if [[ $debug_series == *" $series "* ]]; then
		"$debug_kernel" kver 2>/dev/null ||
			die "the $series kernel is not built (run: vm.sh prepare --kernel $series)"
		return
	fi
	if [[ $unpacked_series == *" $series "* ]]; then
		"$kernel_chroot" kver "$series" 2>/dev/null ||
			die "no $series kernel yet (run: vm.sh prepare --kernel $series)"
		return
	fi
	# One "VERSION KREL" line per metapackage version apt knows about.
	while read -r v k; do
		[[ $v == "$series".* ]] || continue
		if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then
			best=$v bestk=$k
		fi
	done < <(apt-cache show linux-image-amd64 2>/dev/null | awk '
		/^Version:/ { v = $2 }
		/^Depends:/ && match($0, /linux-image-[0-9][^ ,]*/) {
			print v, substr($0, RSTART + 12, RLENGTH - 12)
		}')
	if [ -z "$bestk" ]; then
		bestk=$(for d in /lib/modules/"$series".*; do
			if [ -d "$d" ]; then echo "${d##*/}"; fi
		done | sort -V | tail -n 1)
	fi
	[ -n "$bestk" ] || die "cannot resolve a $series kernel (run: vm.sh prepare --kernel $series)"
	echo "$bestk"
}

# A debug kernel's release ends in -visock-debug (debug.config).
is_debug_kver() { [[ $1 == *-visock-debug ]]; }

# A kernel unpacked from Debian's packages into the cache.
is_unpacked_kver() { [ -e "$kernels_root/by-kver/$1/debian-packages" ]; }

kernel_image() { # KVER -> the bzImage to boot
	if is_debug_kver "$1" || is_unpacked_kver "$1"; then
		echo "$kernels_root/by-kver/$1/bzImage"
	else
		echo "/boot/vmlinuz-$1"
	fi
}

module_root() { # KVER -> root of its lib/modules/KVER ("" for /)
	if is_debug_kver "$1" || is_unpacked_kver "$1"; then
		echo "$kernels_root/by-kver/$1/mod"
	fi
}

# ---------------------------------------------------------------------------
# prepare
# ---------------------------------------------------------------------------

# The guests start their own nginx and redis-server (the apps selftests);
# the services the packages install on the host are not wanted there.
stop_services() {
	local svc
	for svc in nginx redis-server; do
		[ -e "/lib/systemd/system/$svc.service" ] || [ -e "/etc/init.d/$svc" ] || continue
		if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
			systemctl is-enabled -q "$svc" 2>/dev/null || systemctl is-active -q "$svc" 2>/dev/null || continue
			info "disabling the $svc service"
			as_root systemctl disable --now -q "$svc" 2>/dev/null || true
		elif [ -x "/etc/init.d/$svc" ]; then
			as_root update-rc.d "$svc" disable >/dev/null 2>&1 || true
			as_root "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
		fi
	done
}

# QEMU older than 8.1 (bookworm's 7.2) lacks the TCG fixes of 8.1
# ("accel/tcg: Always lock pages before translation" and the ones around
# it): with 7.2, 6.12 guests died now and then of a double fault with
# impossible RFLAGS in the slab allocator under heavy network load (see
# README.md, "Caveats").  Returns 0 if $qemu is missing or older.
qemu_too_old() {
	local v
	v=$("$qemu" --version 2>/dev/null | sed -nE '1s/.*version ([0-9]+)\.([0-9]+).*/\1 \2/p')
	[ -n "$v" ] || return 0
	set -- $v
	[ "$1" -lt 8 ] || { [ "$1" = 8 ] && [ "$2" -lt 1 ]; }
}

ensure_backports_source() {
	if grep -rqs '^[^#]*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		return 1
	fi
	info "adding the bookworm-backports apt source"
	echo "deb http://deb.debian.org/debian bookworm-backports main" |
		as_root tee /etc/apt/sources.list.d/bookworm-backports.list >/dev/null
	return 0
}

# The kernel and modules of Debian's packages of SERIES (linux-binary-*,
# linux-modules-* and linux-base-*: modules.builtin, config), unpacked into
# $kernels_root/by-kver/KVER/{bzImage,mod/lib/modules/KVER} with their
# modules.dep; the "debian-packages" file names the packages.
unpack_debian_kernel() { # SERIES
	local series=$1 kver dest tmp
	"$kernel_chroot" prepare "$series"
	kver=$("$kernel_chroot" kver "$series")
	dest=$kernels_root/by-kver/$kver
	if [ -e "$dest/debian-packages" ] && [ -r "$dest/bzImage" ] &&
	   [ -r "$dest/mod/lib/modules/$kver/modules.dep" ]; then
		return 0
	fi
	info "unpacking Debian's $kver kernel and modules into $dest"
	rm -rf "$dest"
	mkdir -p "$dest/mod/lib/modules"
	# In the chroot: its apt has the packages, its kmod knows their
	# format.  It works in its /var/tmp, which is $tmp here.
	tmp=$("$kernel_chroot" dir "$series")/var/tmp/visock-unpack
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# shellcheck disable=SC2016
	"$kernel_chroot" run "$series" -- /bin/sh -euc '
		cd /var/tmp/visock-unpack
		[ -x /usr/sbin/depmod ] ||
			apt-get install -y -q --no-install-recommends kmod >/dev/null
		apt-get download -q "linux-binary-$1" "linux-modules-$1" \
			"linux-base-$1" >/dev/null 2>&1
		for d in ./*.deb; do dpkg-deb -x "$d" root; done
		if [ -d "root/usr/lib/modules/$1" ]; then
			depmod -b root/usr "$1"
		else
			depmod -b root "$1"
		fi
		ls ./*.deb >packages
	' sh "$kver"
	if [ -d "$tmp/root/usr/lib/modules/$kver" ]; then
		mv "$tmp/root/usr/lib/modules/$kver" "$dest/mod/lib/modules/"
	else
		mv "$tmp/root/lib/modules/$kver" "$dest/mod/lib/modules/"
	fi
	# Since 7.x the image is lib/modules/KVER/vmlinuz, before in /boot.
	if [ -e "$dest/mod/lib/modules/$kver/vmlinuz" ]; then
		mv "$dest/mod/lib/modules/$kver/vmlinuz" "$dest/bzImage"
	else
		cp "$tmp/root/boot/vmlinuz-$kver" "$dest/bzImage"
	fi
	[ -r "$dest/mod/lib/modules/$kver/modules.dep" ] || die "no modules.dep for $kver"
	mv "$tmp/packages" "$dest/debian-packages"
	rm -rf "$tmp"
}

cmd_prepare() {
	local kernel=all series list=() need_update=0 kver pkgs p
	check_repo_path
	while [ $# -gt 0 ]; do
		case "$1" in
		--kernel) kernel=${2:?}; shift 2 ;;
		*) usage ;;
		esac
	done
	if [ "$kernel" = all ]; then list=("${stock_series[@]}"); else list=("$kernel"); fi
	for series in "${list[@]}"; do
		series_slot "$series" >/dev/null
		[[ $debug_series != *" $series "* ]] || continue
		[[ $unpacked_series != *" $series "* ]] || continue
		if [[ $backports_series == *" $series "* ]] && ensure_backports_source; then
			need_update=1
		fi
		# (no pipe into grep -q: with pipefail, SIGPIPE would count as failure)
		grep -Eq "\|[[:space:]]*${series//./\\.}\." <<<"$(apt-cache madison linux-image-amd64 2>/dev/null)" ||
			need_update=1
	done
	if [ -z "${VISOCK_VM_QEMU:-}" ] && qemu_too_old &&
	   ensure_backports_source; then
		need_update=1
	fi
	if [ "$need_update" = 1 ] || [ -n "$(pkg_missing "${base_pkgs[@]}")" ]; then
		apt_update
	fi

	# shellcheck disable=SC2046
	apt_install $(pkg_missing "${base_pkgs[@]}")
	if [ -z "${VISOCK_VM_QEMU:-}" ] && qemu_too_old; then
		apt_install -t bookworm-backports qemu-system-x86
		! qemu_too_old || die "QEMU >= 8.1 is needed ($qemu --version)"
	fi
	stop_services
	for series in "${list[@]}"; do
		if [[ $debug_series == *" $series "* ]]; then
			"$debug_kernel" build >/dev/null
			continue
		fi
		if [[ $unpacked_series == *" $series "* ]]; then
			unpack_debian_kernel "$series"
			continue
		fi
		kver=$(resolve_kver "$series")
		pkgs=$(pkg_missing "linux-image-$kver" "linux-headers-$kver")
		if [[ $backports_series == *" $series "* ]]; then
			# The metapackages too, unless they already are this series.
			for p in linux-image-amd64 linux-headers-amd64; do
				[[ $(dpkg-query -W -f='${Version}' "$p" 2>/dev/null) == "$series".* ]] ||
					pkgs+=" $p"
			done
			# shellcheck disable=SC2086
			apt_install -t bookworm-backports $pkgs
		else
			# shellcheck disable=SC2086
			apt_install $pkgs
		fi
	done
	for series in "${list[@]}"; do
		kver=$(resolve_kver "$series")
		ensure_initrd "$kver"
		info "kernel $series -> $kver"
	done
}

# ---------------------------------------------------------------------------
# initramfs cache
# ---------------------------------------------------------------------------

# Rebuild when missing, when mkinitrd.sh changed, or when the kernel's
# module tree was regenerated.
ensure_initrd() {
	local kver=$1 dir stamp modroot
	dir=$cache_root/$kver
	modroot=$(module_root "$kver")
	if [ ! -r "$(kernel_image "$kver")" ] || [ ! -d "$modroot/lib/modules/$kver" ]; then
		die "kernel $kver is not installed (run: vm.sh prepare)"
	fi
	mkdir -p "$dir"
	stamp="$(sha256sum <"$here/mkinitrd.sh" | cut -d' ' -f1) $kver \
$(stat -c %Y "$modroot/lib/modules/$kver/modules.dep")"
	(
		flock 9
		if [ -f "$dir/initrd.img" ] && [ "$(cat "$dir/initrd.stamp" 2>/dev/null)" = "$stamp" ]; then
			exit 0
		fi
		info "building initramfs for $kver"
		"$here/mkinitrd.sh" "$kver" "$dir/initrd.img" "$modroot"
		echo "$stamp" >"$dir/initrd.stamp"
	) 9>"$dir/.initrd.lock"
}

# ---------------------------------------------------------------------------
# Test bed state: one directory per (kernel, instance)
# ---------------------------------------------------------------------------

# setup_bed SERIES [SERIES_B]: sets kver_a and kver_b (the kernels of
# hosts a and b), kver (the bed's name: the kernel, or "<kver_a>+<kver_b>"
# on a mixed bed), state, ctl, ports and the VM names.
setup_bed() {
	local series=$1 series_b=${2:-$1} slot slot_b block
	[[ $inst =~ ^[0-9]{1,2}$ ]] || die "VISOCK_VM_INSTANCE must be 0..99"
	slot=$(series_slot "$series")
	slot_b=$(series_slot "$series_b")
	kver_a=$(resolve_kver "$series")
	kver_b=$(resolve_kver "$series_b")
	if [ "$nhosts" = 4 ]; then
		[ "$kver_a" = "$kver_b" ] || die "--hosts 4 boots one kernel on all hosts"
		hosts=(a b c d)
		kver=$kver_a
		# After the mixed beds' block (which ends below
		# port_base + 2000): five ports per bed (hosts a to d, then
		# the hub), 100 instances per series.
		port_a=$((port_base + 2000 + (slot * 100 + inst) * 5))
		port_b=$((port_a + 1))
		port_hub=$((port_a + 4))
		state=$cache_root/$kver/4h-inst$inst
		ctl=$state/ctl
		mkdir -p "$state"
		return
	fi
	hosts=(a b)
	if [ "$kver_a" = "$kver_b" ]; then
		kver=$kver_a
		# Two ports per bed: a listens on port_a, b on port_b.
		# Series come in blocks of two with 400 ports each (100
		# instances x 2 series x 2 hosts), so a new series never
		# moves the ports of an older one.
		block=$((slot / 2))
		port_a=$((port_base + block * 400 + inst * 4 + slot % 2 * 2))
	else
		kver=$kver_a+$kver_b
		# Mixed beds: one block after room for 8 series; per
		# instance one port pair for each order of the two kernels
		# (two mixed beds of other kernels on one instance share
		# ports: launch() refuses the second).
		port_a=$((port_base + 4 * 400 + inst * 4 + (slot < slot_b ? 0 : 2)))
	fi
	port_b=$((port_a + 1))
	state=$cache_root/$kver/inst$inst
	ctl=$state/ctl
	mkdir -p "$state"
}

host_kver() { # HOST -> the kernel release that host boots
	if [ "$1" = a ]; then echo "$kver_a"; else echo "$kver_b"; fi
}

host_index() { # HOST -> 0 for a, 1 for b, ...
	case "$1" in a) echo 0 ;; b) echo 1 ;; c) echo 2 ;; d) echo 3 ;; esac
}

host_port() { # HOST -> the UDP port of its link
	if [ "$nhosts" = 4 ]; then
		echo $((port_a + $(host_index "$1")))
	elif [ "$1" = a ]; then
		echo "$port_a"
	else
		echo "$port_b"
	fi
}

# The learning switch of a four-host bed (udp-hub.py), in the background.
hub_start() {
	local h ports=()
	[ "$nhosts" = 4 ] || return 0
	hub_stop
	for h in "${hosts[@]}"; do ports+=("$(host_port "$h")"); done
	if port_busy "$port_hub"; then
		die "UDP port $port_hub is in use (another test bed? set VISOCK_VM_INSTANCE)"
	fi
	python3 "$here/udp-hub.py" "$port_hub" "${ports[@]}" </dev/null \
		>"$state/hub.log" 2>&1 &
	echo $! >"$state/hub.pid"
}

hub_stop() {
	local pid
	[ "$nhosts" = 4 ] || return 0
	pid=$(cat "$state/hub.pid" 2>/dev/null) || return 0
	if [ -r "/proc/$pid/cmdline" ] &&
	   tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "udp-hub.py $port_hub "; then
		kill "$pid" 2>/dev/null || true
	fi
	rm -f "$state/hub.pid"
}

ensure_initrds() { # the initramfs of both hosts' kernels
	ensure_initrd "$kver_a"
	[ "$kver_b" = "$kver_a" ] || ensure_initrd "$kver_b"
}

vm_name() {
	if [ "$nhosts" = 4 ]; then
		echo "visock-$1-$kver-4h-i$inst"
	else
		echo "visock-$1-$kver-i$inst"
	fi
}

# vm_pid HOST: prints the QEMU pid if that VM is running (checked by name, so
# a recycled pid never gets mistaken for ours).
vm_pid() {
	local pid
	pid=$(cat "$state/$1.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "-name $(vm_name "$1") " || return 1
	echo "$pid"
}

vm_kill_all() {
	local h
	for h in "${hosts[@]}"; do vm_kill "$h"; done
}

vm_kill() { # HOST
	local pid i
	pid=$(vm_pid "$1") || return 0
	kill "$pid" 2>/dev/null || true
	for i in $(seq 20); do
		vm_pid "$1" >/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

port_busy() { [ -n "$(ss -Huln "sport = :$1" 2>/dev/null)" ]; }

results_dir_for() { # default results directory
	local d=${VISOCK_RESULTS_DIR:-$repo/build/vm-results/$kver}
	[ "$nhosts" = 2 ] || [ -n "${VISOCK_RESULTS_DIR:-}" ] || d=$d-4h
	[ "$inst" = 0 ] || [ -n "${VISOCK_RESULTS_DIR:-}" ] || d=$d-i$inst
	realpath -m "$d"
}

# Empty a directory without removing it (it may be a live 9p export).
wipe_dir() {
	mkdir -p "$1"
	find "$1" -mindepth 1 -delete
}

# launch HOST MODE: boot one guest in the background.
launch() {
	local host=$1 mode=$2 mac my_port peer_port extra=() hk
	hk=$(host_kver "$host")
	mac=52:54:00:77:00:0$host
	my_port=$(host_port "$host")
	if [ "$nhosts" = 4 ]; then
		peer_port=$port_hub
	elif [ "$host" = a ]; then
		peer_port=$port_b
	else
		peer_port=$port_a
	fi
	if qemu_too_old; then
		info "warning: $("$qemu" --version 2>/dev/null | head -1 || echo "$qemu: missing") is older than 8.1 (run: vm.sh prepare)"
	fi
	if port_busy "$my_port"; then
		die "UDP port $my_port is in use (another test bed? set VISOCK_VM_INSTANCE)"
	fi
	: >"$state/$host.serial.log"
	rm -f "$state/$host.pid" "$state/$host.shell.sock"
	if [ "$capture" = 1 ]; then
		# The whole link as this guest's NIC sees it, both ways.
		extra+=(-object "filter-dump,id=cap0,netdev=n0,file=$(qemu_opt_path "$results/$host/link.pcap")")
	fi
	if [ "$mode" = persist ]; then
		# Second serial port (ttyS1 in the guest) for "vm.sh shell".
		extra+=(-chardev "socket,id=shell,path=$state/$host.shell.sock,server=on,wait=off"
			-serial chardev:shell)
	fi
	# The link's UDP socket is opened by udp-link.py (see there why).
	python3 "$here/udp-link.py" "$my_port" "$peer_port" 3 \
	"$qemu" \
		-name "$(vm_name "$host")" \
		-accel "$accel" -cpu "$cpu" -smp 1 -m "${mem:-$(vm_mem "$hk")}" \
		-nodefaults -no-user-config -display none -monitor none -no-reboot \
		-serial "file:$state/$host.serial.log" "${extra[@]}" \
		-kernel "$(kernel_image "$hk")" \
		-initrd "$cache_root/$hk/initrd.img" \
		-append "$(kernel_cmdline "$host" "$mode")" \
		-fsdev "local,id=fsroot,path=/,security_model=none,readonly=on,multidevs=remap" \
		-device virtio-9p-pci,fsdev=fsroot,mount_tag=hostroot \
		-fsdev "local,id=fssrc,path=$(qemu_opt_path "$repo"),security_model=none,readonly=on,multidevs=remap" \
		-device virtio-9p-pci,fsdev=fssrc,mount_tag=src \
		-fsdev "local,id=fsctl,path=$(qemu_opt_path "$ctl"),security_model=none" \
		-device virtio-9p-pci,fsdev=fsctl,mount_tag=ctl \
		-fsdev "local,id=fsres,path=$(qemu_opt_path "$results"),security_model=none" \
		-device virtio-9p-pci,fsdev=fsres,mount_tag=results \
		-netdev "dgram,id=n0,local.type=fd,local.str=3" \
		-device "$(vm_nic "$hk"),netdev=n0,mac=$mac" \
		-daemonize -pidfile "$state/$host.qemu.pid" </dev/null
	# Keep our own copy: QEMU removes its pid file when it exits.
	cp "$state/$host.qemu.pid" "$state/$host.pid"
}

# Start streaming both guests' console.log with a "[a] " / "[b] " prefix.
# tail stops (after a last read) once the sentinel process is gone.
start_streams() {
	# Bounded, so that nothing lingers even if vm.sh itself gets killed.
	sleep $((timeout + 60)) &
	sentinel=$!
	stream_pids=()
	local h
	for h in "${hosts[@]}"; do
		tail -n +1 -F -s 0.2 --pid="$sentinel" "$results/$h/console.log" 2>/dev/null |
			sed -u "s/^/[$h] /" &
		stream_pids+=($!)
	done
}

stop_streams() {
	[ -n "${sentinel:-}" ] || return 0
	kill "$sentinel" 2>/dev/null || true
	wait "${stream_pids[@]}" 2>/dev/null || true
	sentinel=
}

# Write a job for both guests.  SCRIPT must be visible inside the guest at
# the same path.  The repository share is mounted at its host path, so a
# script of the repository runs in place, next to the programs it was
# built with, wherever the checkout is (/tmp included).  Other scripts
# see the host's / read-only, but the guest has its own /tmp, /run and
# /dev: scripts from there are copied into the ctl share first (such a
# script finds the repository through VISOCK_SRC, not next to itself).
write_jobs() { # ID SCRIPT [ARGS...]
	local id=$1 script=$2 h argv runner=()
	shift 2
	[ -f "$script" ] || die "no such script: $script"
	script=$(realpath "$script")
	[ -x "$script" ] || runner=(bash)
	case "$script" in
	"$repo"/*) ;;
	/tmp/* | /run/* | /dev/* | /proc/* | /sys/*)
		cp "$script" "$ctl/job-script"
		script=/run/visock/ctl/job-script ;;
	esac
	argv=$(printf '%q ' "${runner[@]}" "$script" "$@")
	for h in "${hosts[@]}"; do
		mkdir -p "$ctl/$h"
		rm -f "$ctl/$h/done" "$ctl/$h/job.running"
		{
			printf 'VISOCK_JOB_ID=%q\nVISOCK_JOB_ARGV=(%s)\n' "$id" "$argv"
			printf 'VISOCK_JOB_KO=%q\n' "${module_for[$h]:-}"
		} >"$ctl/$h/job.tmp"
		mv "$ctl/$h/job.tmp" "$ctl/$h/job"
	done
}

# FILE without the reports of failed allocations (warn_alloc(): "page
# allocation failure" or "vmalloc error", then a stack trace up to
# </TASK>), which the kselftests fault.alloc_* provoke on purpose.
drop_alloc_reports() { # FILE
	awk '/page allocation failure:|vmalloc error:/ { skip = 1 }
	     skip && /<\/TASK>/ { skip = 0; next }
	     !skip' "$1"
}

# Scan FILE for kernel splats; prints findings, returns 1 if any.
scan_log() { # LABEL FILE
	local label=$1 orig=$2 pat bad=0 file
	[ -f "$orig" ] || return 0
	file=$(mktemp)
	drop_alloc_reports "$orig" >"$file"
	local first=0 n
	for pat in "${splat_patterns[@]}"; do
		if grep -qF -- "$pat" "$file"; then
			echo "vm.sh: FAIL: $label contains \"$pat\":"
			grep -nF -- "$pat" "$file" | head -n 3 | sed 's/^/    /'
			n=$(grep -nF -m1 -- "$pat" "$file" | cut -d: -f1)
			if [ "$first" = 0 ] || [ "$n" -lt "$first" ]; then
				first=$n
			fi
			bad=1
		fi
	done
	if [ "$first" != 0 ]; then
		# The report itself, so that a CI log alone shows the trace.
		echo "vm.sh: $label from line $((first > 10 ? first - 10 : 1)):"
		tail -n "+$((first > 10 ? first - 10 : 1))" "$file" | head -n 90 |
			sed 's/^/    | /'
	fi
	rm -f "$file"
	return "$bad"
}

# Collect the verdict for both hosts; serial_off[HOST] selects the part of
# the serial log that belongs to this job.  Returns 1 on any failure.
declare -A serial_off=([a]=0 [b]=0 [c]=0 [d]=0)
verdict() {
	local h rc ok=0
	for h in "${hosts[@]}"; do
		tail -c "+$((serial_off[$h] + 1))" "$state/$h.serial.log" >"$results/$h/serial.log" 2>/dev/null || true
		rc=$(cat "$results/$h/rc" 2>/dev/null || true)
		if [ -z "$rc" ]; then
			echo "vm.sh: FAIL: host $h: no exit code (guest died or timed out)"
			ok=1
		elif [ "$rc" != 0 ]; then
			echo "vm.sh: FAIL: host $h: script exited with $rc"
			ok=1
		fi
		scan_log "host $h dmesg.txt" "$results/$h/dmesg.txt" || ok=1
		scan_log "host $h serial console" "$results/$h/serial.log" || ok=1
	done
	return "$ok"
}

# Wait until both guests finished the job (or are gone); honours $timeout.
# With WANT_DONE=1 it waits for the done markers (persistent mode), else for
# the QEMU processes to exit.
wait_guests() { # START_MS WANT_DONE
	local t0=$1 want_done=$2 h finished dead_ms='' dead_grace=30
	while :; do
		finished=0
		for h in "${hosts[@]}"; do
			note_ready "$h" "$t0"
			if [ "$want_done" = 1 ]; then
				[ -f "$ctl/$h/done" ] && finished=$((finished + 1)) && continue
				vm_pid "$h" >/dev/null || {
					echo "vm.sh: FAIL: host $h: QEMU exited during the job"
					finished=$((finished + 1))
				}
			else
				if vm_pid "$h" >/dev/null; then
					:
				else
					finished=$((finished + 1))
					# Died without a result (panic): the
					# other host's cross-host tests can only
					# time out one by one.
					if [ ! -s "$results/$h/rc" ] && [ -z "$dead_ms" ]; then
						dead_ms=$(now_ms)
						echo "vm.sh: FAIL: host $h stopped without a result; stopping the other host in ${dead_grace}s"
					fi
				fi
			fi
		done
		[ "$finished" = "${#hosts[@]}" ] && return 0
		if [ -n "$dead_ms" ] && [ $(( $(now_ms) - dead_ms )) -gt $((dead_grace * 1000)) ]; then
			vm_kill_all
			return 1
		fi
		if [ $(( $(now_ms) - t0 )) -gt $((timeout * 1000)) ]; then
			echo "vm.sh: FAIL: timeout after ${timeout}s, killing the guests"
			[ "$want_done" = 0 ] || echo "vm.sh: (vm.sh start to boot them again)"
			vm_kill_all
			return 1
		fi
		sleep 0.2
	done
}

# Print the boot time of HOST once its ready marker shows up.
declare -A ready_seen=()
note_ready() { # HOST START_MS
	[ -z "${ready_seen[$1]:-}" ] && [ -f "$ctl/$1/ready" ] || return 0
	ready_seen[$1]=1
	info "host $1 ready: $(secs $(( $(now_ms) - $2 )))s wall, guest uptime $(cat "$ctl/$1/ready")s"
}

# module_path KO: KO as the guests see it (they see the host's / read-only,
# but have their own /tmp, /run and /dev).
module_path() {
	local p
	[ -f "$1" ] || die "no such module file: $1"
	p=$(realpath "$1")
	case "$p" in
	/tmp/* | /run/* | /dev/* | *[[:space:]\"\'\\]*)
		die "the guests cannot use the module file $p: copy it into the repository (e.g. build/)" ;;
	esac
	echo "$p"
}

declare -A module_for=([a]='' [b]='' [c]='' [d]='')

parse_bed_args() { # sets series, timeout, job (array), module_for, nhosts, capture
	series='' series_b='' timeout=600 job=() host_opt='' nhosts=2
	capture=${VISOCK_VM_CAPTURE:-0}
	module_for=([a]='' [b]='' [c]='' [d]='')
	while [ $# -gt 0 ]; do
		case "$1" in
		--kernel) series=${2:?}; shift 2 ;;
		--kernel-b) series_b=${2:?}; shift 2 ;;
		--module-a) module_for[a]=$(module_path "${2:?}"); shift 2 ;;
		--module-b) module_for[b]=$(module_path "${2:?}"); shift 2 ;;
		--timeout) timeout=${2:?}; shift 2 ;;
		--capture) capture=1; shift ;;
		--host) host_opt=${2:?}; shift 2 ;;
		--hosts)
			nhosts=${2:?}; shift 2
			[ "$nhosts" = 2 ] || [ "$nhosts" = 4 ] || die "--hosts is 2 or 4" ;;
		--) shift; job=("$@"); break ;;
		*) usage ;;
		esac
	done
	[ -n "$series" ] || die "--kernel is required"
	[[ $timeout =~ ^[0-9]+$ ]] || die "bad --timeout"
	[ "$capture" = 0 ] || [ "$capture" = 1 ] || die "VISOCK_VM_CAPTURE is 0 or 1"
	setup_bed "$series" "$series_b"
}

# The paths travel on the guests' kernel command line (at most 2047
# characters, split at white space, quotes taken as quotes) and in QEMU
# options (commas doubled, see qemu_opt_path).  A checkout anywhere else
# works: the guests mount the repository and results shares at their host
# paths.  Checked before "prepare" does anything, and before every boot.
check_repo_path() {
	local p
	for p in "$repo" "$here"; do
		[[ $p != *[[:space:]\"]* ]] ||
			die "the repository path '$p' contains white space or a quote: the guests get it on their kernel command line; use a checkout path without them"
	done
}

check_paths() {
	local m line h
	check_repo_path
	m=$(module_root "$kver_a")$(module_root "$kver_b")
	[[ "$results$m" != *[[:space:]\"]* ]] ||
		die "the results path '$results' (VISOCK_RESULTS_DIR) or the module path '$m' contains white space or a quote: the guests get it on their kernel command line"
	case "$m" in
	/tmp/* | /run/* | /dev/*)
		die "the guests cannot see $m (VISOCK_CACHE): they have their own /tmp, /run and /dev; use a cache outside them" ;;
	esac
	for h in "${hosts[@]}"; do
		line=$(kernel_cmdline "$h" persist)
		[ "${#line}" -lt 2048 ] ||
			die "the kernel command line of the guests would be ${#line} characters (at most 2047): use shorter repository, results or cache paths"
	done
}

# qemu_opt_path PATH: PATH for a QEMU option value (a comma is doubled).
qemu_opt_path() { echo "${1//,/,,}"; }

# kernel_cmdline HOST MODE: the guest kernel's command line.
kernel_cmdline() {
	local modroot modarg='' hk hostsarg=''
	hk=$(host_kver "$1")
	[ "$nhosts" = 2 ] || hostsarg=" visock.hosts=$(IFS=; echo "${hosts[*]}")"
	# A kernel whose modules are not in /lib/modules: guest.sh links
	# its module tree there (the guest sees the host's / read-only).
	modroot=$(module_root "$hk")
	[ -z "$modroot" ] || modarg=" visock.modules=$modroot/lib/modules/$hk"
	echo "console=ttyS0 quiet panic=-1 panic_on_warn=0 \
visock.init=$here/guest.sh visock.host=$1 visock.mode=$2 \
visock.src=$repo visock.results=$results$modarg$hostsarg$(vm_append "$hk")"
}

# ---------------------------------------------------------------------------
# run / start / exec / stop
# ---------------------------------------------------------------------------

cleanup_run() {
	stop_streams
	vm_kill_all
	hub_stop
}

any_running() {
	local h
	for h in "${hosts[@]}"; do
		vm_pid "$h" >/dev/null && return 0
	done
	return 1
}

cmd_run() {
	local t0 rc=0 h
	parse_bed_args "$@"
	[ ${#job[@]} -gt 0 ] || die "run needs -- SCRIPT [ARGS...]"
	if any_running; then
		die "test bed $kver/inst$inst is running (vm.sh stop, or use VISOCK_VM_INSTANCE)"
	fi
	ensure_initrds
	results=$(results_dir_for)
	check_paths
	wipe_dir "$results"
	wipe_dir "$ctl"
	for h in "${hosts[@]}"; do mkdir -p "$results/$h"; done
	write_jobs "run" "${job[@]}"

	if [ "$kver_a" = "$kver_b" ]; then
		info "kernel $kver, results in $results"
	else
		info "kernels: a $kver_a, b $kver_b, results in $results"
	fi
	trap cleanup_run EXIT
	trap 'exit 130' INT TERM
	t0=$(now_ms)
	start_streams
	hub_start
	for h in "${hosts[@]}"; do launch "$h" run; done
	wait_guests "$t0" 0 || rc=1
	stop_streams
	hub_stop
	verdict || rc=1
	info "wall time $(secs $(( $(now_ms) - t0 )))s"
	trap - EXIT
	if [ "$rc" = 0 ]; then info "PASS"; else info "FAILED (see $results)"; fi
	return "$rc"
}

all_ready() {
	local h
	for h in "${hosts[@]}"; do
		[ -f "$ctl/$h/ready" ] || return 1
	done
}

cmd_start() {
	local t0 h
	parse_bed_args "$@"
	# exec empties the results directory under QEMU's open capture.
	[ "$capture" = 0 ] || die "--capture (VISOCK_VM_CAPTURE) works with run only"
	if any_running; then
		info "test bed $kver/inst$inst already running"
		return 0
	fi
	ensure_initrds
	results=$(results_dir_for)
	check_paths
	wipe_dir "$results"
	wipe_dir "$ctl"
	for h in "${hosts[@]}"; do mkdir -p "$results/$h" "$ctl/$h"; done
	echo "$results" >"$state/results_dir"
	t0=$(now_ms)
	hub_start
	for h in "${hosts[@]}"; do launch "$h" persist; done
	while ! all_ready; do
		for h in "${hosts[@]}"; do
			note_ready "$h" "$t0"
			vm_pid "$h" >/dev/null || {
				tail -n 20 "$state/$h.serial.log"
				vm_kill_all; hub_stop
				die "host $h died while booting"
			}
		done
		if [ $(( $(now_ms) - t0 )) -gt $((timeout * 1000)) ]; then
			vm_kill_all; hub_stop
			die "guests not ready after ${timeout}s"
		fi
		sleep 0.2
	done
	for h in "${hosts[@]}"; do note_ready "$h" "$t0"; done
	info "test bed $kver/inst$inst running (vm.sh exec / vm.sh stop)"
}

cmd_exec() {
	local t0 rc=0 h id
	parse_bed_args "$@"
	[ ${#job[@]} -gt 0 ] || die "exec needs -- SCRIPT [ARGS...]"
	for h in "${hosts[@]}"; do
		vm_pid "$h" >/dev/null || die "host $h is not running (vm.sh start --kernel $series${series_b:+ --kernel-b $series_b})"
		[ -f "$ctl/$h/ready" ] || die "host $h is not ready yet"
	done
	results=$(cat "$state/results_dir")
	if [ -n "${VISOCK_RESULTS_DIR:-}" ] && [ "$VISOCK_RESULTS_DIR" != "$results" ]; then
		info "note: the running test bed writes to $results"
	fi
	wipe_dir "$results"
	ready_seen=()
	for h in "${hosts[@]}"; do
		mkdir -p "$results/$h"
		serial_off[$h]=$(stat -c %s "$state/$h.serial.log")
		ready_seen[$h]=1
	done
	id=$(date +%s%N)
	t0=$(now_ms)
	trap stop_streams EXIT
	start_streams
	write_jobs "$id" "${job[@]}"
	wait_guests "$t0" 1 || rc=1
	stop_streams
	trap - EXIT
	verdict || rc=1
	info "wall time $(secs $(( $(now_ms) - t0 )))s"
	if [ "$rc" = 0 ]; then info "PASS"; else info "FAILED (see $results)"; fi
	return "$rc"
}

cmd_stop() {
	local h i
	parse_bed_args "$@"
	for h in "${hosts[@]}"; do
		if vm_pid "$h" >/dev/null; then touch "$ctl/$h/stop"; fi
	done
	for i in $(seq 100); do
		any_running || break
		sleep 0.1
	done
	vm_kill_all
	hub_stop
	for h in "${hosts[@]}"; do rm -f "$ctl/$h/stop"; done
	info "test bed $kver/inst$inst stopped"
}

cmd_shell() {
	parse_bed_args "$@"
	[[ " ${hosts[*]} " == *" $host_opt "* ]] ||
		die "shell needs --host ${hosts[*]// /|}"
	vm_pid "$host_opt" >/dev/null ||
		die "host $host_opt is not running (vm.sh start --kernel $series${series_b:+ --kernel-b $series_b})"
	command -v socat >/dev/null || die "socat is missing (vm.sh prepare)"
	info "attached to host $host_opt; press Enter for a prompt, Ctrl-] to detach"
	socat -,raw,echo=0,escape=0x1d "UNIX-CONNECT:$state/$host_opt.shell.sock"
	echo
}

cmd_status() {
	local h pid
	parse_bed_args "$@"
	for h in "${hosts[@]}"; do
		if pid=$(vm_pid "$h"); then
			info "host $h: running (pid $pid, port $(host_port "$h"))"
		else
			info "host $h: stopped"
		fi
	done
}

[ $# -gt 0 ] || usage
cmd=$1
shift
case "$cmd" in
prepare) cmd_prepare "$@" ;;
kver) [ $# = 1 ] || usage; resolve_kver "$1" ;;
check-path) [ $# = 0 ] || usage; check_repo_path ;;
run) cmd_run "$@" ;;
start) cmd_start "$@" ;;
exec) cmd_exec "$@" ;;
stop) cmd_stop "$@" ;;
status) cmd_status "$@" ;;
shell) cmd_shell "$@" ;;
-h | --help | help) usage 0 ;;
*) usage ;;
esac
