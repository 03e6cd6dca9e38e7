#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Print the path of an extracted Debian linux-source-6.12 tree in the
# cache (checkpatch.pl, kunit.py), installing and extracting it if needed.
set -euo pipefail

CACHE=${VISOCK_CACHE:-$HOME/.cache/visock}
DIR="$CACHE/linux-source-6.12"
TARBALL=/usr/src/linux-source-6.12.tar.xz

if [ ! -f "$DIR/scripts/checkpatch.pl" ]; then
	if [ ! -f "$TARBALL" ]; then
		echo "linux-source: installing Debian package linux-source-6.12" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y \
			--no-install-recommends linux-source-6.12 >&2
	fi
	echo "linux-source: extracting $TARBALL into $CACHE" >&2
	mkdir -p "$CACHE"
	tar -C "$CACHE" -xf "$TARBALL"
fi
echo "$DIR"
