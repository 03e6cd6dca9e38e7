#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build visock.ko for the test-bed kernels, each in its own copy of the
# sources under build/<kver>/ (kbuild writes objects next to the sources,
# so two kernels cannot share one tree).  W=1 and sparse (C=2) are on;
# any compiler or sparse warning fails the build.
#
#   build-module.sh all | 6.1 | 6.12 | 6.12-debug | 7.2 | 7.3 | <kernel release>
#
# "all" is 6.1 and 6.12.  6.12-debug (the KASAN/lockdep guest kernel,
# tools/testing/debug-kernel.sh) builds against the kernel's build
# directory in the cache; it must have been built already.  7.2 and 7.3
# are Debian's newer kernels: their headers, compiler and sparse are in a
# chroot (tools/testing/kernel-chroot.sh, created on first use) and the
# build runs there.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VM="$ROOT/tools/testing/vm/vm.sh"
KCHROOT="$ROOT/tools/testing/kernel-chroot.sh"

# KVER [SERIES]: with a SERIES, the headers are in that series' chroot.
build_one() {
	local kver=$1 series=${2:-} kdir out log run=()
	kdir=/lib/modules/$kver/build
	if [[ $kver == *-visock-debug ]]; then
		kdir=${VISOCK_CACHE:-$HOME/.cache/visock}/kernels/by-kver/$kver/build
	fi
	if [ -n "$series" ]; then
		run=("$KCHROOT" run "$series" --)
		kdir=/usr/lib/modules/$kver/build
		if [ ! -d "$("$KCHROOT" dir "$series")$kdir" ]; then
			echo "build-module: no headers for $kver in the $series chroot" >&2
			return 1
		fi
	elif [ ! -d "$kdir" ]; then
		echo "build-module: no headers for $kver at $kdir" >&2
		return 1
	fi
	out="$ROOT/build/$kver/src"
	mkdir -p "$out"
	# Copy only what kbuild needs; keep timestamps for incremental builds.
	cp -a --parents -u Kbuild net include "$out/" 2>/dev/null ||
		(cd "$ROOT" && cp -a --parents -u Kbuild net include "$out/")
	log="$ROOT/build/$kver/build.log"
	echo "build-module: $kver (W=1, sparse)"
	if ! "${run[@]}" make -C "$kdir" M="$out" W=1 C=1 \
		CHECK="sparse" modules >"$log" 2>&1; then
		cat "$log"
		echo "build-module: $kver: build FAILED" >&2
		return 1
	fi
	if grep -E "warning:|error:" "$log"; then
		echo "build-module: $kver: warnings (see above)" >&2
		return 1
	fi
	cp "$out/visock.ko" "$ROOT/build/$kver/visock.ko"
	echo "build-module: $kver: OK -> build/$kver/visock.ko"
}

cd "$ROOT"
mkdir -p build
# Several builders (people, CI stages) share build/: one at a time.
exec 9>build/.build-module.lock
flock 9
want=${1:-all}
series=
case "$want" in
all)	kvers="$("$VM" kver 6.1) $("$VM" kver 6.12)" ;;
6.1|6.12|6.12-debug) kvers=$("$VM" kver "$want") ;;
7.2|7.3)
	"$KCHROOT" prepare "$want"
	kvers=$("$KCHROOT" kver "$want")
	series=$want
	;;
*)
	kvers=$want
	# A release of a chroot's kernel.
	for s in 7.2 7.3; do
		if [ "$("$KCHROOT" kver "$s" 2>/dev/null)" = "$want" ]; then
			series=$s
		fi
	done
	;;
esac
rc=0
for k in $kvers; do
	build_one "$k" $series || rc=1
done
exit $rc
