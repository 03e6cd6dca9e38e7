#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the kernel's checkpatch.pl (from Debian's linux-source-6.12) over
# every C source and header of the project.  Fails on any ERROR; warnings
# are printed and counted.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SRC=$("$ROOT/tools/testing/linux-source.sh")
CP="$SRC/scripts/checkpatch.pl"

cd "$ROOT"
files=$(git ls-files -co --exclude-standard -- '*.c' '*.h' | grep -v '^build/' | sort)
errors=0 warnings=0 checked=0
for f in $files; do
	out=$("$CP" --no-tree --terse --show-types --strict -f "$f" \
		--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG,LINUX_VERSION_CODE,NEW_TYPEDEFS,PREFER_KERNEL_TYPES \
		2>&1 || true)
	checked=$((checked + 1))
	e=$(grep -c ': ERROR:' <<<"$out" || true)
	w=$(grep -c -E ': (WARNING|CHECK):' <<<"$out" || true)
	errors=$((errors + e)); warnings=$((warnings + w))
	[ "$e$w" = "00" ] || grep -E ': (ERROR|WARNING|CHECK):' <<<"$out"
done
echo "checkpatch: $checked files, $errors errors, $warnings warnings/checks"
[ "$errors" -eq 0 ]
