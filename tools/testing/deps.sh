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
#   deps.sh check                            6.1, 6.12, 7.3, kernel source
#   deps.sh fleet                            6.1, 6.12 and 7.3 (check-fleet)
#   deps.sh debug                            check-debug's build tools
#   deps.sh --list demo|bench|check|fleet|debug   print the host packages
#
# Needs root (or sudo) when something is missing.  The repository path is
# checked first (vm.sh): a checkout the guests cannot use is refused
# before anything is installed.  vm.sh sources this file for its package
# helpers (as_root, pkg_missing, apt_update, apt_install); only running it
# installs anything.
set -euo pipefail

die() { echo "deps.sh: error: $*" >&2; exit 1; }
usage() { sed -n '10,14s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2; exit 2; }

# Host packages per entry point.  Every build: the module with W=1 and
# sparse (the headers come with the kernels, below), the userspace tools
# (visock_redirect: clang, bpftool, libbpf-dev; libc6-dev is only a
# recommendation of gcc), the selftests (visock_uring: liburing-dev, whose
# liburing2 the guests use from the host) and the link helper of the test
# bed (python3).
build_pkgs=(gcc make libc6-dev sparse python3 clang bpftool libbpf-dev libmnl-dev
	liburing-dev)
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

pkg_missing() { # PKG... -> prints the ones not installed
	local p
	for p in "$@"; do
		[ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ] ||
			echo "$p"
	done
}

# apt-get update, at most once per run of the calling script.
apt_updated=0
apt_update() {
	echo "${0##*/}: apt-get update"
	as_root apt-get update -qq
	apt_updated=1
}

# Install PKG... (nothing without packages), from RELEASE with -t; with
# --optional a failure is only reported.  A fresh system may have no
# package lists at all: the first install updates them.
apt_install() { # [-t RELEASE] [--optional] PKG...
	local target=() optional=0
	while :; do
		case ${1:-} in
		-t) target=(-t "${2:?}"); shift 2 ;;
		--optional) optional=1; shift ;;
		*) break ;;
		esac
	done
	[ $# -gt 0 ] || return 0
	[ "$apt_updated" = 1 ] || apt_update
	echo "${0##*/}: installing${target:+ (${target[*]})}: $*"
	if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "${target[@]}" "$@" >/dev/null; then
		[ "$optional" = 1 ] || die "apt-get install $* failed"
		echo "${0##*/}: not installed (optional): $*" >&2
	fi
}

deps_main() {
	local T list=0 target kernel=6.12 pkgs optional=() kernels=() k
	T=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
	if [ "${1:-}" = --list ]; then list=1; shift; fi
	target=${1:-}
	[ $# -gt 0 ] && shift
	while [ $# -gt 0 ]; do
		case $1 in
		--kernel) kernel=${2:?}; shift 2 ;;
		*) usage ;;
		esac
	done

	pkgs=("${build_pkgs[@]}")
	case $target in
	demo)	kernels=("$kernel") ;;
	bench)	kernels=("$kernel") optional=("${bench_optional[@]}") ;;
	check)	kernels=(all 7.3) pkgs+=("${check_pkgs[@]}") ;;
	fleet)	kernels=(all 7.3) pkgs+=("${check_pkgs[@]}") ;;
	debug)	pkgs+=("${debug_pkgs[@]}") ;;
	*)	usage ;;
	esac

	if [ "$list" = 1 ]; then
		echo "${pkgs[@]}" "${optional[@]}"
		return 0
	fi

	if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
		die "this needs a Debian system (dpkg, apt-get); see README"
	fi
	# vm.sh refuses a repository path the guests cannot use, before
	# any work.
	"$T/vm/vm.sh" check-path

	# shellcheck disable=SC2046
	apt_install $(pkg_missing "${pkgs[@]}")
	# shellcheck disable=SC2046
	apt_install --optional $(pkg_missing "${optional[@]}")
	for k in "${kernels[@]}"; do
		"$T/vm/vm.sh" prepare --kernel "$k"
	done
	# The nginx and redis services the packages start are for the
	# guests (the apps selftests start their own): vm.sh prepare stops
	# them on the host.  checkpatch.pl and kunit.py come from the
	# kernel source.
	if [ "$target" = check ]; then
		"$T/linux-source.sh" >/dev/null
	fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	deps_main "$@"
fi
