#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build visock.ko for the test-bed kernels, each in its own copy of the
# sources under build/<kver>/ (kbuild writes objects next to the sources,
# so two kernels cannot share one tree).  W=1 and sparse (C=2) are on;
# any compiler or sparse warning fails the build.
#
#   build-module.sh all | 6.1 | 6.12 | 6.12-debug | <kernel release>
#
# "all" is 6.1 and 6.12.  6.12-debug (the KASAN/lockdep guest kernel,
# tools/testing/debug-kernel.sh) builds against the kernel's build
# directory in the cache; it must have been built already.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VM="$ROOT/tools/testing/vm/vm.sh"

build_one() {
	local kver=$1 kdir out log
	kdir=/lib/modules/$kver/build
	if [[ $kver == *-visock-debug ]]; then
		kdir=${VISOCK_CACHE:-$HOME/.cache/visock}/kernels/by-kver/$kver/build
	fi
	if [ ! -d "$kdir" ]; then
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
	if ! make -C "$kdir" M="$out" W=1 C=1 \
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
case "$want" in
all)	kvers="$("$VM" kver 6.1) $("$VM" kver 6.12)" ;;
6.1|6.12|6.12-debug) kvers=$("$VM" kver "$want") ;;
*)	kvers=$want ;;
esac
rc=0
for k in $kvers; do
	build_one "$k" || rc=1
done
exit $rc
