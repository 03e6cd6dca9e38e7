#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# deps.sh - everything "make demo", "make check", "make bench" and "make
# check-debug" need on a Debian 12 host, installed from nothing: the
# Debian packages of the host side, then (vm.sh prepare) QEMU, the guests'
# packages, the test-bed kernels and the guests' initramfs.  Each of those
# entry points calls it first; a second run installs nothing.
#
#   deps.sh demo|bench [--kernel 6.1|6.12]   one test-bed kernel (6.12)
#   deps.sh check                            both kernels, kernel source
#   deps.sh debug                            check-debug's build tools
#   deps.sh --list demo|bench|check|debug    print the host packages
#
# Needs root (or sudo) when something is missing.  The repository path is
# checked first (vm.sh): a checkout the guests cannot use is refused
# before anything is installed.
set -euo pipefail

T=$(cd "$(dirname "$0")" && pwd -P)

die() { echo "deps.sh: error: $*" >&2; exit 1; }
usage() { sed -n '10,13s/^# \{0,1\}//p' "$0" >&2; exit 2; }

# Host packages per entry point.  Every build: the module with W=1 and
# sparse (the headers come with the kernels, below), the userspace tools
# (visock_redirect: clang, bpftool, libbpf-dev; libc6-dev is only a
# recommendation of gcc) and the link helper of the test bed (python3).
build_pkgs=(gcc make libc6-dev sparse python3 clang bpftool libbpf-dev libmnl-dev)
# make check: dkms for the DKMS stage, flex/bison/bc for the UML KUnit
# kernel, iptables for the middlebox tests, iperf3, sockperf, nginx,
# curl, wrk and redis for the apps selftests (the guests run the host's
# binaries; vm.sh prepare installs those too).
check_pkgs=(dkms flex bison bc iptables iperf3 sockperf nginx-light curl wrk
	redis-server redis-tools)
# make bench: gnuplot draws the chart (optional: without it, no PNG).
bench_optional=(gnuplot-nox)
# make check-debug: the debug kernel build (debug-kernel.sh).
debug_pkgs=(flex bison bc libelf-dev libssl-dev pahole)

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"
	elif command -v sudo >/dev/null; then sudo "$@"
	else die "need root for: $*"
	fi
}

missing() { # PKG... -> prints the ones not installed
	local p
	for p in "$@"; do
		[ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ] ||
			echo "$p"
	done
}

updated=0
apt_install() { # OPTIONAL(0|1) PKG...
	local optional=$1
	shift
	[ $# -gt 0 ] || return 0
	if [ "$updated" = 0 ]; then
		# A fresh system may have no package lists at all.
		echo "deps.sh: apt-get update"
		as_root apt-get update -qq
		updated=1
	fi
	echo "deps.sh: installing: $*"
	if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "$@" >/dev/null; then
		[ "$optional" = 1 ] || die "apt-get install $* failed"
		echo "deps.sh: not installed (optional): $*" >&2
	fi
}

list=0
if [ "${1:-}" = --list ]; then list=1; shift; fi
target=${1:-}
[ $# -gt 0 ] && shift
kernel=6.12
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=${2:?}; shift 2 ;;
	*) usage ;;
	esac
done

pkgs=("${build_pkgs[@]}") optional=() kernels=()
case $target in
demo)	kernels=("$kernel") ;;
bench)	kernels=("$kernel") optional=("${bench_optional[@]}") ;;
check)	kernels=(all) pkgs+=("${check_pkgs[@]}") ;;
debug)	pkgs+=("${debug_pkgs[@]}") ;;
*)	usage ;;
esac

if [ "$list" = 1 ]; then
	echo "${pkgs[@]}" "${optional[@]}"
	exit 0
fi

if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
	die "this needs a Debian system (dpkg, apt-get); see README"
fi
# vm.sh refuses a repository path the guests cannot use, before any work.
"$T/vm/vm.sh" check-path

# shellcheck disable=SC2046
apt_install 0 $(missing "${pkgs[@]}")
# shellcheck disable=SC2046
apt_install 1 $(missing "${optional[@]}")
for k in "${kernels[@]}"; do
	"$T/vm/vm.sh" prepare --kernel "$k"
done
# The nginx and redis services the packages start are for the guests
# (the apps selftests start their own): vm.sh prepare stops them on the
# host.  checkpatch.pl and kunit.py come from the kernel source.
if [ "$target" = check ]; then
	"$T/linux-source.sh" >/dev/null
fi
