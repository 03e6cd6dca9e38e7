#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mkinitrd.sh KVER OUTPUT [MODROOT]
#
# Build the tiny initramfs used by the visock test VMs.  It contains only a
# static busybox, the handful of modules needed to reach the host's root
# file system over virtio-9p, and an /init that:
#
#   1. loads those modules,
#   2. mounts the host's "/" read-only (9p tag "hostroot"),
#   3. stacks a tmpfs overlay on top so the guest can write anywhere,
#   4. switch_root's into it and execs the guest agent named by the
#      kernel command line option "visock.init=" (guest.sh).
#
# Everything after step 4 runs with the host's own binaries, so this image
# only needs rebuilding when this script or the kernel's modules change.
# MODROOT is where lib/modules/KVER is, for kernels not installed in / (the
# debug kernel: its modules_install root in the cache).

set -euo pipefail

kver=${1:?usage: mkinitrd.sh KVER OUTPUT}
out=${2:?usage: mkinitrd.sh KVER OUTPUT}
modroot=${3:-}

# Modules that must be usable before the root file system is mounted.
# Their dependency chains come from modprobe, so built-in ones are skipped
# automatically and nothing is hard-coded per kernel.
wanted="virtio_pci virtio_net 9pnet_virtio 9p overlay"

busybox=$(command -v busybox) || { echo "mkinitrd: busybox not found" >&2; exit 1; }
# A dynamically linked busybox would not run inside the initramfs.
if ldd "$busybox" >/dev/null 2>&1; then
	echo "mkinitrd: $busybox is not static (install busybox-static)" >&2
	exit 1
fi
[ -d "$modroot/lib/modules/$kver" ] ||
	{ echo "mkinitrd: $modroot/lib/modules/$kver missing" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{bin,dev,proc,sys,lower,upper,newroot,modules}
cp "$busybox" "$work/bin/busybox"

# Collect the insmod lines of every dependency chain, keep the first
# occurrence of each module, and store the modules uncompressed (busybox
# insmod cannot read .ko.xz / .ko.zst / .ko.gz).
: >"$work/modules/load.list"
for m in $wanted; do
	modprobe ${modroot:+-d "$modroot"} -S "$kver" --show-depends "$m"
done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r path; do
	name=$(basename "$path")
	case "$name" in
	*.ko.xz)  name=${name%.xz};  xz -dc "$path" >"$work/modules/$name" ;;
	*.ko.zst) name=${name%.zst}; zstd -qdc "$path" >"$work/modules/$name" ;;
	*.ko.gz)  name=${name%.gz};  gzip -dc "$path" >"$work/modules/$name" ;;
	*.ko)     cp "$path" "$work/modules/$name" ;;
	*) echo "mkinitrd: unexpected module file $path" >&2; exit 1 ;;
	esac
	echo "$name" >>"$work/modules/load.list"
done

# The /init of the initramfs.  Kept deliberately dumb: any failure drops to
# a message and a power-off so QEMU exits instead of hanging.
cat >"$work/init" <<'EOF'
#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
# visock test VM: stage 1 (initramfs).
/bin/busybox --install -s /bin
export PATH=/bin

die() {
	echo "visock-initramfs: $*"
	echo o >/proc/sysrq-trigger
	while :; do sleep 60; done
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

for m in $(cat /modules/load.list); do
	insmod "/modules/$m" || die "insmod $m failed"
done

init=
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	visock.init=*) init=${arg#visock.init=} ;;
	esac
done
[ -n "$init" ] || die "no visock.init= on the kernel command line"

mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 \
	hostroot /lower || die "cannot mount the host root"
mount -t tmpfs -o mode=0755 tmpfs /upper || die "cannot mount tmpfs"
mkdir -p /upper/data /upper/work
mount -t overlay -o lowerdir=/lower,upperdir=/upper/data,workdir=/upper/work \
	overlay /newroot || die "cannot mount the overlay"

# The guest agent mounts its own /proc, /sys and /dev after the switch.
umount /proc /sys /dev
exec switch_root /newroot /bin/bash "$init"
EOF
chmod 755 "$work/init"

mkdir -p "$(dirname "$out")"
# Uncompressed: it is small and the guest saves the decompression time.
(cd "$work" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --quiet --reproducible) >"$out.tmp"
mv "$out.tmp" "$out"
