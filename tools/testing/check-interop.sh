#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check-interop: this tree's visock.ko against the previous
# release's on the two-host bed, then a live upgrade of the old one.
#
#   1. build the previous release's module (VISOCK_INTEROP_BASE, default
#      the v0.1.0 commit d19a06f) with its own build-module.sh into
#      build/interop-<commit>/, and this tree's module and programs
#   2. boot the bed with host a on this tree's module and host b on the
#      old one (vm.sh --module-b) and run
#      tools/testing/selftests/net/visock/visock_interop.sh on both:
#      old client -> new server and new client -> old server at once,
#      then rmmod refused while sockets are open, the upgrade of host b
#      to this tree's module, and the streams again.
#
# Environment: VISOCK_INTEROP_BASE (commit of the old release),
# VISOCK_INTEROP_KERNEL (bed kernel, default 6.12), VISOCK_INTEROP_SWAP=1
# (host a old, host b new instead), VISOCK_INTEROP_TIMEOUT (default 900),
# VISOCK_VM_INSTANCE (test bed number).  Cost: one old and one new
# module build (~75 s each, skipped when up to date) and one boot of the
# bed (~3 min on TCG).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$ROOT/tools/testing
BASE=${VISOCK_INTEROP_BASE:-d19a06f}
SERIES=${VISOCK_INTEROP_KERNEL:-6.12}
TIMEOUT=${VISOCK_INTEROP_TIMEOUT:-900}

die() { echo "check-interop: $*" >&2; exit 1; }

commit=$(git -C "$ROOT" rev-parse --verify -q "$BASE^{commit}") ||
	die "no commit $BASE in this repository's history"
kver=$("$T/vm/vm.sh" kver "$SERIES") || die "kernel $SERIES not prepared"
old=$ROOT/build/interop-${commit:0:12}
old_ko=$old/build/$kver/visock.ko

# The old release, built by its own scripts.
if [ ! -e "$old_ko" ]; then
	rm -rf "$old"
	mkdir -p "$old"
	git -C "$ROOT" archive "$commit" | tar -x -C "$old" || die "git archive $commit"
	echo "check-interop: building $BASE ($commit) for $kver"
	"$old/tools/testing/build-module.sh" "$SERIES" >"$old/build.log" 2>&1 ||
		{ tail -20 "$old/build.log"; die "building the old module failed"; }
fi
"$T/build-module.sh" "$SERIES" || die "building this tree's module failed"
{ make -s -C "$T/selftests/net/visock" visock_interop &&
  make -s -C "$ROOT/tools/visock"; } || die "building visock_interop / visockctl failed"

if [ "${VISOCK_INTEROP_SWAP:-0}" = 1 ]; then
	mod=(--module-a "$old_ko")
	echo "check-interop: host a $BASE, host b this tree"
else
	mod=(--module-b "$old_ko")
	echo "check-interop: host a this tree, host b $BASE"
fi
exec "$T/vm/vm.sh" run --kernel "$SERIES" --timeout "$TIMEOUT" "${mod[@]}" -- \
	"$T/selftests/net/visock/visock_interop.sh"
