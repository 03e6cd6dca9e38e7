#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Documentation checks; any warning fails:
#   1. the kernel's scripts/kernel-doc -Wall (from Debian's
#      linux-source-6.12) over the module's C sources and headers, the
#      KUnit tests and the uapi header;
#   2. docutils over every .rst file of the project (rst2html with
#      warnings reported and turned into a non-zero exit status);
#   3. MAINTAINERS: every file of the project is covered by an F: line of
#      the entry, and every F: line matches a file (the matching rules of
#      the kernel's scripts/get_maintainer.pl).
# A checker that cannot be found is a failure, not a skip.  docutils
# comes from the Debian package python3-docutils, installed if missing.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1

fail=0

# --- kernel-doc --------------------------------------------------------
kd_warn=0
SRC=$("$ROOT/tools/testing/linux-source.sh") || SRC=
KD="$SRC/scripts/kernel-doc"
kd_files=$(git ls-files -co --exclude-standard -- \
	'net/visock/*.c' 'net/visock/*.h' 'include/uapi/linux/*.h' | sort)
if [ -z "$SRC" ] || [ ! -x "$KD" ]; then
	echo "docs-check: kernel-doc not found (tools/testing/linux-source.sh)"
	fail=1
elif [ -z "$kd_files" ]; then
	echo "docs-check: no C sources found for kernel-doc"
	fail=1
else
	# shellcheck disable=SC2086
	out=$("$KD" -Wall -none $kd_files 2>&1)
	rc=$?
	kd_warn=$(grep -c -E 'warning|error' <<<"$out")
	[ -n "$out" ] && echo "$out"
	if [ "$rc" != 0 ] || [ "$kd_warn" != 0 ]; then
		[ "$kd_warn" = 0 ] && kd_warn=1
		fail=1
	fi
	echo "docs-check: kernel-doc -Wall: $(wc -w <<<"$kd_files") files, $kd_warn warnings"
fi

# --- docutils ----------------------------------------------------------
find_rst2html() {
	local c
	for c in /usr/bin/rst2html rst2html rst2html.py; do
		command -v "$c" 2>/dev/null && return 0
	done
	return 1
}

rst_bad=0
RST2HTML=$(find_rst2html)
if [ -z "$RST2HTML" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	echo "docs-check: installing Debian package python3-docutils" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y \
		--no-install-recommends python3-docutils >/dev/null 2>&1
	RST2HTML=$(find_rst2html)
fi
rst_files=$(git ls-files -co --exclude-standard -- '*.rst' | grep -v '^build/' | sort)
if [ -z "$RST2HTML" ]; then
	echo "docs-check: rst2html not found (Debian package python3-docutils)"
	fail=1
elif [ -z "$rst_files" ]; then
	echo "docs-check: no .rst files found"
	fail=1
else
	for f in $rst_files; do
		if ! out=$("$RST2HTML" --report=warning --halt=severe \
				--exit-status=warning "$f" 2>&1 >/dev/null) ||
		   [ -n "$out" ]; then
			echo "$out"
			echo "docs-check: $f: docutils reported problems"
			rst_bad=$((rst_bad + 1))
			fail=1
		fi
	done
	echo "docs-check: docutils: $(wc -w <<<"$rst_files") files, $rst_bad with warnings or errors"
fi

# --- MAINTAINERS -------------------------------------------------------
if ! command -v python3 >/dev/null; then
	echo "docs-check: python3 not found (MAINTAINERS check)"
	fail=1
elif ! git ls-files -co --exclude-standard | grep -v '^build/' |
	python3 -c '
import re, sys
files = sys.stdin.read().split()
pats = [l.rstrip("\n").split("\t", 1)[1]
	for l in open("MAINTAINERS") if l.startswith("F:\t")]

def match(pat, f):
	if not re.match("^" + re.escape(pat).replace(r"\*", ".*"), f):
		return False
	return pat.endswith("/") or f.count("/") == pat.count("/")

bad = [f"docs-check: MAINTAINERS: F: {p} matches no file"
       for p in pats if not any(match(p, f) for f in files)]
bad += [f"docs-check: MAINTAINERS: {f} is in no F: line"
	for f in files if not any(match(p, f) for p in pats)]
print("\n".join(bad) if bad else "")
print(f"docs-check: MAINTAINERS: {len(pats)} patterns, {len(files)} files, "
      f"{len(bad)} problems")
sys.exit(1 if bad or not pats else 0)
' | grep -v '^$'; then
	fail=1
fi

[ "$fail" = 0 ] && echo "docs-check: ok"
exit "$fail"
