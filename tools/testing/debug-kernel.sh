#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# debug-kernel.sh - the visock debug guest kernel (test-bed series
# "6.12-debug"): Debian's linux-source-6.12, x86_64 defconfig plus
# tools/testing/vm/debug.config (KASAN, lockdep, kmemleak, debug objects,
# fault injection, KUnit, and what the guests need), built once and cached.
#
#   debug-kernel.sh build    build if missing or out of date; prints DIR
#   debug-kernel.sh kver     kernel release of the cached build
#   debug-kernel.sh kdir     build directory (KDIR for out-of-tree modules)
#   debug-kernel.sh dir      DIR
#   debug-kernel.sh status   "up to date", "out of date" or "missing"
#
# DIR is $VISOCK_CACHE/kernels/6.12-debug (default ~/.cache/visock/...):
#
#   src/         extracted linux-source-6.12 (kept clean: O= builds)
#   build/       the kbuild output directory, with .config and vmlinux
#   bzImage      the kernel the guests boot
#   mod/         modules_install root: mod/lib/modules/<kver>/ (stripped)
#   stamp        what it was built from (fragment hash, source version)
#   build.log, build-time
#
# A changed debug.config or a new linux-source-6.12 package rebuilds
# (incrementally).  $VISOCK_CACHE/kernels/by-kver/<kver> links to DIR, so
# that vm.sh and build-module.sh find a debug kernel by its release.
#
# Environment: VISOCK_CACHE, DEBUG_KERNEL_JOBS (default nproc),
# VISOCK_DEBUG_SOURCE_VERSION: build another Debian version of
# linux-source-6.12 (e.g. 6.12.95-1~bpo12+1, the version of a kernel
# under suspicion), fetched with "apt-get download" into
# DIR=$VISOCK_CACHE/kernels/6.12-debug-<version>, not installed; vm.sh
# boots it when the variable is set the same way.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fragment=$here/vm/debug.config
cache=${VISOCK_CACHE:-$HOME/.cache/visock}
want_version=${VISOCK_DEBUG_SOURCE_VERSION:-}
if [ -n "$want_version" ]; then
	dir=$cache/kernels/6.12-debug-${want_version//[^A-Za-z0-9.-]/_}
	tarball=$dir/linux-source-6.12.tar.xz
else
	dir=$cache/kernels/6.12-debug
	tarball=/usr/src/linux-source-6.12.tar.xz
fi
src=$dir/src
build=$dir/build
jobs=${DEBUG_KERNEL_JOBS:-$(nproc)}
# Bump when the layout of DIR or the build steps change.
format=1

log() { echo "debug-kernel: $*" >&2; }
die() { log "error: $*"; exit 1; }

src_version() {
	if [ -n "$want_version" ]; then
		echo "$want_version"
	else
		dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || echo unknown
	fi
}

# The tarball of another version: from its .deb, without installing it.
fetch_tarball() {
	local tmp deb
	tmp=$(mktemp -d "$dir/fetch.XXXXXX")
	log "downloading linux-source-6.12=$want_version"
	(cd "$tmp" && apt-get download -q "linux-source-6.12=$want_version" >&2) ||
		die "cannot download linux-source-6.12=$want_version"
	deb=$(echo "$tmp"/linux-source-6.12_*.deb)
	dpkg-deb --fsys-tarfile "$deb" |
		tar -xO ./usr/src/linux-source-6.12.tar.xz >"$tarball.tmp"
	mv "$tarball.tmp" "$tarball"
	rm -rf "$tmp"
}

want_stamp() {
	echo "format=$format source=$(src_version) fragment=$(sha256sum <"$fragment" | cut -d' ' -f1)"
}

kver() {
	[ -f "$build/include/config/kernel.release" ] || return 1
	cat "$build/include/config/kernel.release"
}

up_to_date() {
	local k
	k=$(kver) || return 1
	[ -f "$dir/bzImage" ] && [ -f "$dir/mod/lib/modules/$k/modules.dep" ] &&
		[ "$(cat "$dir/stamp" 2>/dev/null)" = "$(want_stamp)" ]
}

ensure_source() {
	local ver tmp
	ver=$(src_version)
	if [ -f "$src/Makefile" ] && [ "$(cat "$dir/src.version" 2>/dev/null)" = "$ver" ]; then
		return 0
	fi
	if [ -n "$want_version" ] && [ ! -f "$tarball" ]; then
		fetch_tarball
	elif [ ! -f "$tarball" ]; then
		log "installing Debian package linux-source-6.12"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends linux-source-6.12 >&2
		ver=$(src_version)
	fi
	log "extracting $tarball"
	tmp=$(mktemp -d "$dir/extract.XXXXXX")
	tar -C "$tmp" -xf "$tarball"
	[ -f "$tmp/linux-source-6.12/Makefile" ] || die "unexpected layout of $tarball"
	rm -rf "$src"
	mv "$tmp/linux-source-6.12" "$src"
	rmdir "$tmp"
	echo "$ver" >"$dir/src.version"
}

# Every option of the fragment must have its requested value in the final
# .config (a dependency missing would silently drop it).
check_config() {
	local line opt val got bad=0
	while IFS= read -r line; do
		if [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]]; then
			opt=${BASH_REMATCH[1]} val=${BASH_REMATCH[2]}
		elif [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
			opt=${BASH_REMATCH[1]} val=n
		else
			continue
		fi
		got=$(sed -n "s/^$opt=//p" "$build/.config")
		[ -n "$got" ] || got=n
		if [ "$got" != "$val" ]; then
			log "config: $opt=$val requested, got $got"
			bad=1
		fi
	done <"$fragment"
	return "$bad"
}

do_build() {
	local t0 t1 k
	ensure_source
	mkdir -p "$build"
	log "configuring (x86_64_defconfig + $(basename "$fragment"))"
	make -s -C "$src" O="$build" x86_64_defconfig >&2
	"$src/scripts/kconfig/merge_config.sh" -m -O "$build" \
		"$build/.config" "$fragment" >"$dir/config.log" 2>&1 ||
		{ cat "$dir/config.log" >&2; die "merge_config.sh failed"; }
	make -s -C "$src" O="$build" olddefconfig >&2
	check_config || die "the config fragment does not apply (see above)"
	log "building with $jobs jobs (log: $dir/build.log)"
	t0=$(date +%s)
	if ! make -C "$src" O="$build" -j"$jobs" all >"$dir/build.log" 2>&1; then
		tail -n 40 "$dir/build.log" >&2
		die "kernel build failed (see $dir/build.log)"
	fi
	rm -rf "$dir/mod"
	make -C "$src" O="$build" INSTALL_MOD_PATH="$dir/mod" INSTALL_MOD_STRIP=1 \
		modules_install >>"$dir/build.log" 2>&1 ||
		die "modules_install failed (see $dir/build.log)"
	t1=$(date +%s)
	k=$(kver)
	# For out-of-tree module builds inside the guest or by path.
	ln -sfn "$build" "$dir/mod/lib/modules/$k/build"
	cp "$build/arch/x86/boot/bzImage" "$dir/bzImage.tmp"
	mv "$dir/bzImage.tmp" "$dir/bzImage"
	echo "$((t1 - t0)) s with $jobs jobs on $(nproc) CPUs, $(date -u +%F)" >"$dir/build-time"
	want_stamp >"$dir/stamp"
	log "built $k in $((t1 - t0)) s -> $dir"
}

cmd=${1:-build}
case "$cmd" in
build)
	mkdir -p "$dir"
	exec 9>"$dir/.lock"
	if ! flock -n 9; then
		log "waiting for another build in $dir"
		flock 9
	fi
	up_to_date || do_build
	mkdir -p "$cache/kernels/by-kver"
	ln -sfn "$dir" "$cache/kernels/by-kver/$(kver)"
	echo "$dir"
	;;
kver)	kver || die "not built yet (run: $0 build)" ;;
kdir)	kver >/dev/null || die "not built yet (run: $0 build)"; echo "$build" ;;
dir)	echo "$dir" ;;
status)
	if up_to_date; then echo "up to date"
	elif kver >/dev/null; then echo "out of date"
	else echo "missing"
	fi
	;;
*)	sed -n '9,13s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
esac
