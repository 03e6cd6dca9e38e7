#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Debian chroots with the headers, compiler and sparse of kernels newer
# than the host (Debian 12) can build for, so that visock.ko is built
# and checked against them too.
#
#   kernel-chroot.sh prepare SERIES     create or complete the chroot
#   kernel-chroot.sh kver SERIES        kernel release of its headers
#   kernel-chroot.sh dir SERIES         its directory
#   kernel-chroot.sh run SERIES -- CMD  run CMD in it (see below)
#
# Series:
#   7.3   trixie + trixie-backports: linux-headers-7.3.*, gcc-14
#   7.2   sid: linux-headers-7.2.*, gcc-16
#
# A chroot lives in ${VISOCK_CACHE:-~/.cache/visock}/chroots/SERIES and is
# made by debootstrap (installed on the host if missing).  "prepare" is
# idempotent: it returns at once when the chroot is complete, and picks up
# where it stopped otherwise.  Every chroot gets a sparse that parses its
# headers: trixie's sparse 0.6.4 cannot (__typeof_unqual__), so the 7.3
# chroot builds sparse from Debian sid's source package; sid's own sparse
# does.  Debian's 7.x kbuild lacks scripts/checker-valid.sh, without which
# C=1/C=2 silently skip sparse; "prepare" adds a probe of the same name.
#
# "run" executes CMD as root in the chroot, in a private mount namespace
# with /proc, /dev and the repository (at the same path as on the host)
# mounted: nothing stays mounted afterwards.  The environment is reset
# (LC_ALL=C).
#
# Environment:
#   VISOCK_CACHE          cache root (default ~/.cache/visock)
#   VISOCK_DEBIAN_MIRROR  Debian mirror (default http://deb.debian.org/debian)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${VISOCK_CACHE:-$HOME/.cache/visock}/chroots
MIRROR=${VISOCK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# Bump when the recipe below changes: complete chroots are then redone
# from the step after debootstrap.
RECIPE=1

die() { echo "kernel-chroot: $*" >&2; exit 1; }

# Per series: debootstrap suite, apt suite of the headers, compiler.
series_conf() {
	case $1 in
	7.3)	suite=trixie; hdr_suite=trixie-backports; cc=gcc-14 ;;
	7.2)	suite=sid; hdr_suite=sid; cc=gcc-16 ;;
	*)	die "unknown series '$1' (7.2, 7.3)" ;;
	esac
	dir=$CACHE/$1
}

# Run CMD in the chroot DIR: private mount namespace, /proc, /dev and the
# repository mounted, clean environment.
in_chroot() { # DIR CMD...
	local d=$1
	shift
	mkdir -p "$d/proc" "$d/dev" "$d$ROOT"
	# shellcheck disable=SC2016
	unshare --mount --propagation private -- /bin/sh -euc '
		d=$1 root=$2
		shift 2
		mount -t proc proc "$d/proc"
		mount --rbind /dev "$d/dev"
		mount --bind "$root" "$d$root"
		exec chroot "$d" /usr/bin/env -i \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LC_ALL=C DEBIAN_FRONTEND=noninteractive "$@"
	' sh "$d" "$ROOT" "$@"
}

# The newest headers package of the series that the chroot's apt knows.
headers_pkg() {
	in_chroot "$dir" apt-cache pkgnames linux-headers-"$series". |
		grep -E "^linux-headers-${series//./\\.}\.[0-9]+\+deb[0-9]+-amd64$" |
		sort -V | tail -n 1 || true
}

kver_of() {
	local k
	k=$(cat "$dir/.visock-kver" 2>/dev/null) || return 1
	[ -d "$dir/usr/lib/modules/$k/build" ] || return 1
	echo "$k"
}

ready() {
	[ "$(cat "$dir/.visock-ready" 2>/dev/null)" = "$RECIPE" ] && kver_of >/dev/null
}

# kbuild of 6.19+ asks scripts/checker-valid.sh whether the checker can
# parse the kernel's headers before it runs it (C=1/C=2); Debian's kbuild
# package does not ship that script.  Ours prints 1 when "$@" parses
# __typeof_unqual__ without an error.
install_checker_probe() { # KVER
	local scripts
	grep -q checker-valid.sh "$dir/usr/lib/modules/$1/source/Makefile" ||
		return 0
	scripts=$dir$(in_chroot "$dir" readlink -f "/usr/lib/modules/$1/source/scripts")
	[ -e "$scripts/checker-valid.sh" ] && return 0
	cat >"$scripts/checker-valid.sh" <<'EOF'
#!/bin/sh
# Added by visock's kernel-chroot.sh: prints 1 if the checker "$@" parses
# __typeof_unqual__, which this kernel's headers use.
command -v "$1" >/dev/null 2>&1 || { echo 0; exit 0; }
t=$(mktemp --suffix=.c) || { echo 0; exit 0; }
printf 'int f(const int *p);\nint f(const int *p)\n{\n\t__typeof_unqual__(*p) v = *p;\n\n\treturn v;\n}\n' >"$t"
if "$@" "$t" 2>&1 | grep -q error; then echo 0; else echo 1; fi
rm -f "$t"
EOF
	chmod 755 "$scripts/checker-valid.sh"
}

# sparse >= 0.6.5 (parses __typeof_unqual__) in /usr/local/bin.
install_sparse() {
	if [ "$suite" = sid ]; then
		in_chroot "$dir" apt-get install -y -q --no-install-recommends \
			sparse >/dev/null
		ln -sf /usr/bin/sparse "$dir/usr/local/bin/sparse"
		return
	fi
	[ -x "$dir/usr/local/bin/sparse" ] && return 0
	# Debian sid's source package, built without its optional tools.
	in_chroot "$dir" /bin/sh -ec '
		rm -rf /opt/sparse && mkdir -p /opt/sparse && cd /opt/sparse
		apt-get source -q --download-only sparse/unstable >/dev/null 2>&1
		tar xf sparse_*.orig.tar.*
		cd sparse-*/
		make -s -j2 CC='"$cc"' HAVE_LIBXML=no HAVE_SQLITE=no \
			HAVE_GTK=no HAVE_LLVM=no sparse >/dev/null 2>&1
		install -m 755 sparse /usr/local/bin/sparse
	'
}

prepare() {
	local t0 pkg kver
	t0=$(date +%s)
	mkdir -p "$CACHE"
	exec 8>"$CACHE/.lock-$series"
	flock 8
	if ready; then
		echo "kernel-chroot: $series ready: $(kver_of) in $dir"
		return 0
	fi
	if ! command -v debootstrap >/dev/null; then
		echo "kernel-chroot: installing debootstrap"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends debootstrap >/dev/null
	fi
	if [ ! -e "$dir/.visock-debootstrap" ]; then
		echo "kernel-chroot: debootstrap $suite into $dir"
		rm -rf "$dir"
		mkdir -p "$dir"
		debootstrap --variant=minbase "$suite" "$dir" "$MIRROR" \
			>"$CACHE/debootstrap-$series.log" 2>&1 ||
			{ tail -20 "$CACHE/debootstrap-$series.log"; die "debootstrap failed"; }
		touch "$dir/.visock-debootstrap"
	fi
	# A Debian archive snapshot's Release files of sid may be past
	# their Valid-Until date.
	echo 'Acquire::Check-Valid-Until "false";' \
		>"$dir/etc/apt/apt.conf.d/90visock"
	{
		echo "deb $MIRROR $suite main"
		[ "$hdr_suite" = "$suite" ] || echo "deb $MIRROR $hdr_suite main"
		echo "deb-src $MIRROR sid main"
	} >"$dir/etc/apt/sources.list"
	rm -f "$dir/etc/apt/sources.list.d/debian.sources"
	echo "kernel-chroot: $series: apt-get update"
	in_chroot "$dir" apt-get update -q >/dev/null
	pkg=$(headers_pkg)
	[ -n "$pkg" ] || die "no linux-headers-$series.* package in $hdr_suite"
	kver=${pkg#linux-headers-}
	echo "kernel-chroot: $series: installing $pkg, $cc, make, sparse"
	in_chroot "$dir" apt-get install -y -q --no-install-recommends \
		-t "$hdr_suite" "$pkg" "$cc" make libc6-dev ca-certificates \
		>"$CACHE/apt-$series.log" 2>&1 ||
		{ tail -20 "$CACHE/apt-$series.log"; die "apt-get install failed"; }
	install_sparse
	install_checker_probe "$kver"
	in_chroot "$dir" apt-get clean
	echo "$kver" >"$dir/.visock-kver"
	echo "$RECIPE" >"$dir/.visock-ready"
	echo "kernel-chroot: $series ready: $kver in $dir ($(($(date +%s) - t0)) s)"
}

cmd=${1:-}
series=${2:-}
{ [ -n "$cmd" ] && [ -n "$series" ]; } || die "usage: $0 prepare|kver|dir|run SERIES [-- CMD...]"
series_conf "$series"
case $cmd in
prepare) prepare ;;
kver)	kver_of || die "$series: no chroot yet (kernel-chroot.sh prepare $series)" ;;
dir)	echo "$dir" ;;
run)
	shift 2
	[ "${1:-}" = "--" ] && shift
	[ $# -gt 0 ] || die "run: no command"
	ready || die "$series: no chroot yet (kernel-chroot.sh prepare $series)"
	in_chroot "$dir" "$@"
	;;
*)	die "unknown command '$cmd'" ;;
esac
