#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the visock KUnit suites in a UML kernel.
#
# The suites and the pure protocol code they test (net/visock/tests/,
# net/visock/visock_{tcpopt,hs_codec,ring,cdc_codec,policy_match}.c,
# visock_wire.h, visock_policy.h and the uapi
# header) are copied, with net/visock/Kconfig (VISOCK_KUNIT_TEST), into
# net/visock_kunit/ of a Linux 6.12 source tree kept
# in the cache directory, which is hooked into net/Kconfig and net/Makefile,
# and then run with the kernel's kunit.py.  The build directory is kept in
# the cache as well, so only the first run builds a whole kernel.
#
# Environment:
#   VISOCK_CACHE    cache directory (default: $HOME/.cache/visock)
#   KUNIT_JOBS      parallel build jobs (default: nproc)
#   VISOCK_KUNIT_FUZZ_ITERS  messages per decoder family of the visock_fuzz
#                   suite (default: FUZZ_ITERS_DEFAULT below; the module's own
#                   default, the full count, is what make check-debug runs)
#   VISOCK_KUNIT_FUZZ_SEED   seed of the visock_fuzz suite (default: its
#                   fixed seed; a failure prints the seed to replay it with)
# Extra arguments are passed to "kunit.py run", e.g. a filter glob such as
# 'visock_ring.*'.
#
# The last line of output is "kunit: N passed, N failed".  The exit status
# is 0 only if the kernel built, booted, and every test passed.

set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$script_dir/../../.." && pwd)
cache=${VISOCK_CACHE:-$HOME/.cache/visock}
tree_name=linux-source-6.12
tree=$cache/$tree_name
tarball=/usr/src/$tree_name.tar.xz
build_dir=$cache/kunit-build
kunitconfig=$script_dir/visock.kunitconfig
overlay=$tree/net/visock_kunit
json=$build_dir/visock-kunit.json
jobs=${KUNIT_JOBS:-$(nproc)}
# Keeps the fuzzing under a minute of the KUnit stage on a 2-core host.
FUZZ_ITERS_DEFAULT=100000
fuzz_args=("--kernel_args=visock_kunit.fuzz_iters=${VISOCK_KUNIT_FUZZ_ITERS:-$FUZZ_ITERS_DEFAULT}")
if [ -n "${VISOCK_KUNIT_FUZZ_SEED:-}" ]; then
	fuzz_args+=("--kernel_args=visock_kunit.fuzz_seed=$VISOCK_KUNIT_FUZZ_SEED")
fi

# pure_srcs, pure_hdrs: what the suites test, without kernel subsystems.
. "$script_dir/files.sh"

log() { echo "run_kunit: $*"; }

die() {
	echo "run_kunit: error: $*" >&2
	echo "kunit: 0 passed, 1 failed"
	exit 1
}

as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	else
		sudo "$@"
	fi
}

# One run at a time per cache directory: runs share the tree and the build.
mkdir -p "$cache"
exec 9>"$cache/kunit.lock"
if ! flock -n 9; then
	log "waiting for another run using $cache"
	flock 9
fi

# --- 1. kernel source tree ------------------------------------------------
if [ ! -f "$tree/Makefile" ] || [ ! -f "$tree/tools/testing/kunit/kunit.py" ]
then
	if [ ! -f "$tarball" ]; then
		log "installing $tree_name (Debian package)"
		as_root apt-get install -y "$tree_name" ||
			die "cannot install $tree_name"
	fi
	[ -f "$tarball" ] || die "$tarball missing"
	log "extracting $tarball into $cache"
	tmp=$(mktemp -d "$cache/extract.XXXXXX")
	tar -C "$tmp" -xJf "$tarball" || die "cannot extract $tarball"
	[ -f "$tmp/$tree_name/Makefile" ] || die "unexpected tarball layout"
	rm -rf "$tree"
	mv "$tmp/$tree_name" "$tree"
	rmdir "$tmp"
fi

# --- 2. overlay -----------------------------------------------------------
# Files are copied, and only when their content changed, so that make sees
# a new timestamp exactly for changed files (links would hide the change
# when the same cache is used from another checkout with older files).
# Files that are no longer part of the overlay are removed.
mkdir -p "$overlay/tests" "$overlay/include/linux"
wanted=()

install_file() {
	local src=$1 dst=$overlay/$2

	[ -f "$src" ] || die "missing $src"
	if [ -L "$dst" ] || ! cmp -s "$src" "$dst"; then
		rm -f "$dst"
		cp "$src" "$dst"
	fi
	wanted+=("$dst")
}

install_file "$repo/net/visock/Kconfig" Kconfig
install_file "$script_dir/visock_kunit/Makefile" Makefile
for f in $pure_hdrs; do
	install_file "$repo/net/visock/$f" "$f"
done
for f in "$repo"/include/uapi/linux/visock*.h; do
	install_file "$f" "include/linux/$(basename "$f")"
done
for f in $pure_srcs; do
	install_file "$repo/net/visock/$f" "$f"
done
ntests=0
for f in "$repo"/net/visock/tests/*_test.c; do
	[ -f "$f" ] || continue
	install_file "$f" "tests/$(basename "$f")"
	ntests=$((ntests + 1))
done
[ "$ntests" -gt 0 ] || die "no net/visock/tests/*_test.c"
# Fixtures the suites share.
for f in "$repo"/net/visock/tests/*.h; do
	[ -f "$f" ] || continue
	install_file "$f" "tests/$(basename "$f")"
done
while IFS= read -r -d '' f; do
	keep=0
	for w in "${wanted[@]}"; do
		[ "$f" = "$w" ] && keep=1 && break
	done
	[ "$keep" -eq 1 ] || rm -f "$f"
done < <(find "$overlay" \( -type f -o -type l \) -print0)

# --- 3. hook the overlay into net/ (idempotent) ---------------------------
if ! grep -q 'net/visock_kunit/Kconfig' "$tree/net/Kconfig"; then
	# Inside "if NET", right before its endif.
	sed -i '/^endif[[:space:]]*# if NET/i source "net/visock_kunit/Kconfig"\n' \
		"$tree/net/Kconfig"
	grep -q 'net/visock_kunit/Kconfig' "$tree/net/Kconfig" ||
		die "cannot hook net/Kconfig"
fi
if ! grep -q 'visock_kunit/' "$tree/net/Makefile"; then
	# shellcheck disable=SC2016 # a make variable, not a shell one
	printf 'obj-$(CONFIG_VISOCK_KUNIT_TEST)\t+= visock_kunit/\n' \
		>>"$tree/net/Makefile"
fi

# --- 4. build and run -----------------------------------------------------
mkdir -p "$build_dir"
rm -f "$json"
log "kunit.py run (build dir $build_dir, $jobs jobs)"
start=$(date +%s)
set +e
python3 "$tree/tools/testing/kunit/kunit.py" run \
	--kunitconfig="$kunitconfig" \
	--build_dir="$build_dir" \
	--jobs="$jobs" \
	--json="$json" \
	"${fuzz_args[@]}" \
	"$@"
rc=$?
set -e
end=$(date +%s)
log "kunit.py finished in $((end - start)) s with status $rc"

# --- 5. summary -----------------------------------------------------------
counts=$(python3 - "$json" <<'EOF'
import json, sys

passed = failed = skipped = 0

def walk(group):
	global passed, failed, skipped
	for case in group.get("test_cases", []):
		status = case.get("status")
		if status == "PASS":
			passed += 1
		elif status == "SKIP":
			skipped += 1
		else:
			failed += 1
	for sub in group.get("sub_groups", []):
		walk(sub)

try:
	with open(sys.argv[1]) as f:
		walk(json.load(f))
except (OSError, ValueError):
	pass
print(passed, failed, skipped)
EOF
)
read -r passed failed skipped <<<"$counts"

if [ "$skipped" -gt 0 ]; then
	log "$skipped tests skipped"
fi
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
	# Build or boot failure, or a crash the parser did not attribute.
	log "kunit.py failed without a failing test result"
	failed=1
fi
if [ "$rc" -eq 0 ] && [ "$passed" -eq 0 ]; then
	log "no test passed: were the suites built?"
	failed=1
fi
echo "kunit: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
