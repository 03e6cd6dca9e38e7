#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build visock.ko for the test-bed kernels, each in its own copy of the
# sources under build/<kver>/ (kbuild writes objects next to the sources,
# so two kernels cannot share one tree).  W=1 and sparse are on; any
# compiler or sparse warning fails the build.
#
# The sparse gate fails closed.  kbuild can leave sparse out without an
# error: since 6.19 it skips a checker that fails its probe (printing
# "C=2 specified, but sparse is not available or not up to date"), and
# a checker may run and see nothing.  So a build passes only if
#   - a canary file with a known sparse warning, built the same way,
#     gets that warning (the checker runs and works on these headers),
#   - kbuild printed a CHECK line for every C file of the module (C=2
#     checks every file on every build, not just the recompiled ones),
#   - and no warning or error is left.
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
# The checker kbuild runs (VISOCK_SPARSE overrides it, e.g. to check the
# gate with a missing or broken one).
SPARSE=${VISOCK_SPARSE:-sparse}

# kbuild with W=1 and sparse on every C file.  A parent "make -s" hands
# its "s" down in MAKEFLAGS, and kbuild then prints no CHECK lines, which
# the gate below needs: drop it from the single-letter flags.
kmake() { # KDIR DIR TARGET
	local mf=${MAKEFLAGS-} first

	first=${mf%% *}
	[[ $first == -* ]] || mf=${first//s/}${mf:${#first}}
	MAKEFLAGS=$mf "${run[@]}" make -C "$1" M="$2" W=1 C=2 \
		CHECK="$SPARSE" "$3"
}

# Positive control: sparse must flag the __user dereference below.
sparse_canary() { # KVER KDIR
	local dir="$ROOT/build/$1/sparse-canary"
	mkdir -p "$dir"
	echo 'obj-m := canary.o' >"$dir/Kbuild"
	cat >"$dir/canary.c" <<'EOF'
// SPDX-License-Identifier: GPL-2.0
#include <linux/module.h>

int visock_sparse_canary(int __user *p);
int visock_sparse_canary(int __user *p)
{
	return *p;
}
EOF
	rm -f "$dir/canary.o"
	kmake "$2" "$dir" canary.o >"$dir/build.log" 2>&1
	if ! grep -q 'canary\.c:7:[0-9]*: warning: dereference of noderef expression' \
		"$dir/build.log" || grep -q "error:" "$dir/build.log"; then
		cat "$dir/build.log"
		echo "build-module: $1: sparse does not work here: it did not flag the canary's __user dereference (build/$1/sparse-canary)" >&2
		return 1
	fi
}

# Every C file of the module got a CHECK line in LOG.
sparse_checked_all() { # OUT LOG
	local out=$1 log=$2 o missing=() n=0
	local -A checked=()
	while read -r o; do
		o=${o#"$out"/}
		checked[${o#./}]=1
	done < <(sed -n 's/^  CHECK   //p' "$log")
	while read -r o; do
		o=${o#"$out"/}
		o=${o#./}
		n=$((n + 1))
		[ -n "${checked[${o%.o}.c]:-}" ] || missing+=("${o%.o}.c")
	done <"$out/visock.mod"
	if [ $n = 0 ] || [ ${#missing[@]} -gt 0 ]; then
		echo "build-module: sparse did not check ${missing[*]:-any file} ($n objects)" >&2
		return 1
	fi
}

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
	sparse_canary "$kver" "$kdir" || return 1
	if ! kmake "$kdir" "$out" modules >"$log" 2>&1; then
		cat "$log"
		echo "build-module: $kver: build FAILED" >&2
		return 1
	fi
	if grep -E "warning:|error:|not available or not up to date" "$log"; then
		echo "build-module: $kver: warnings (see above)" >&2
		return 1
	fi
	if ! sparse_checked_all "$out" "$log"; then
		echo "build-module: $kver: sparse gate FAILED" >&2
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
	build_one "$k" "$series" || rc=1
done
exit $rc
