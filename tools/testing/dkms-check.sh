#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Prove that the DKMS package builds for the test-bed kernels: `dkms add`
# and `dkms build` in a private DKMS tree (the host's /var/lib/dkms and
# /lib/modules are left alone), once per kernel.  Prints one KTAP line per
# kernel and exits non-zero if any build failed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VM="$ROOT/tools/testing/vm/vm.sh"
VERSION=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$ROOT/dkms.conf")
WORK="$ROOT/build/dkms"

if ! command -v dkms >/dev/null; then
	echo "dkms-check: installing Debian package dkms"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends dkms >/dev/null
fi

rm -rf "$WORK"
mkdir -p "$WORK/tree" "$WORK/src/visock-$VERSION"
# The source package: what `make install-dkms` puts in /usr/src.
(cd "$ROOT" && cp -a Kbuild Makefile dkms.conf net include "$WORK/src/visock-$VERSION/")

dk() { dkms --dkmstree "$WORK/tree" --sourcetree "$WORK/src" "$@"; }

dk add -m visock -v "$VERSION" >"$WORK/add.log" 2>&1 || { cat "$WORK/add.log"; exit 1; }

n=0; fail=0
kvers="$("$VM" kver 6.1) $("$VM" kver 6.12)"
echo "TAP version 13"
echo "1..$(echo $kvers | wc -w)"
for k in $kvers; do
	n=$((n + 1))
	if dk build -m visock -v "$VERSION" -k "$k" >"$WORK/build-$k.log" 2>&1 &&
	   ls "$WORK/tree/visock/$VERSION/$k/x86_64/module/"visock.ko* >/dev/null 2>&1; then
		echo "ok $n dkms_build_$k"
	else
		tail -30 "$WORK/build-$k.log" | sed 's/^/# /'
		find "$WORK/tree" -name make.log -exec tail -30 {} \; | sed 's/^/# /'
		echo "not ok $n dkms_build_$k"
		fail=1
	fi
done
exit $fail
