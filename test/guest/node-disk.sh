#!/bin/sh
# Gives the emulated node a disk, as a Debian 12 node has: /var/lib and /var/tmp on ext4. The guest's own
# directories are tmpfs, which Debian 12's kernel (6.1) cannot ID-map, so on them no runtime can offer pods
# user namespaces; its /tmp stays as it is (it holds the host's shares). The disk is a sparse image in the
# guest's memory, through a loop device. Tests then keep their files under TMPDIR=/var/tmp.
set -eu
size=${1:-16G}
modprobe loop
modprobe ext4
image=/var/cache/node-disk.img
truncate -s "$size" "$image"
# A new sparse file reads as zeros: nothing to zero, now or later in the background (memory and emulated CPU).
mkfs.ext4 -q -F -E assume_storage_prezeroed=1 "$image"
mkdir -p /mnt/disk
# discard: what the node deletes is given back to the guest's memory.
mount -o loop,discard "$image" /mnt/disk
mkdir -p /mnt/disk/var-lib /mnt/disk/var-tmp
# What the booted system already keeps in /var/lib (systemd, D-Bus) moves with it.
cp -a /var/lib/. /mnt/disk/var-lib/
chmod 1777 /mnt/disk/var-tmp
mount --bind /mnt/disk/var-lib /var/lib
mount --bind /mnt/disk/var-tmp /var/tmp
echo "the node's disk: $size of ext4 at /var/lib and /var/tmp"
