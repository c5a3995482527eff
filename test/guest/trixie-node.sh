#!/bin/bash
# Runs one command on a Debian 13 "trixie" node: trixie's own kernel booting a root file system made
# from trixie's packages with mmdebstrap (systemd as PID 1, cgroup v2, AppArmor enforcing, trixie's runc,
# crun and conmon), in a QEMU virtual machine whose CPU QEMU emulates (TCG), so any x86-64 host runs it.
#
#   trixie-node.sh [--mem SIZE] [--cpus N] [--share DIR]... [--] COMMAND [ARG...]
#   trixie-node.sh --build     makes sure the node is built and cached; prints its directory
#
# The node boots from its own ext4 disk (an image in the cache, opened copy-on-write: what a run writes is
# thrown away with the run). Each --share DIR is this host's DIR, read-write, at the same path (9p).
# COMMAND runs as root, as a systemd service, in the current directory with this environment; its output
# and exit status are this script's. There is no network card: loopback only.
#
# The node is built once per set of package versions and kept in $SKIFF_TRIXIE_CACHE (default
# /var/cache/skiff-trixie, or ~/.cache/skiff-trixie when not root): the versions are read from trixie's
# package lists (fetched with a sources list of this script's own; the system's apt configuration is not
# touched), and a new version of a package the node is made of, or a change to this script, builds it anew.
# Needs (Debian 12): mmdebstrap, qemu-system-x86, e2fsprogs; root to build.
set -euo pipefail
mem=6G; cpus=2; shares=(); build_only=0
while [ $# -gt 0 ]; do
  case $1 in
    --build) build_only=1; shift ;;
    --mem) mem=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --share) shares+=("$(realpath "$2")"); shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || [ $build_only = 1 ] || { echo "usage: $0 [--build] [--mem SIZE] [--cpus N] [--share DIR]... [--] COMMAND [ARG...]" >&2; exit 2; }
for t in qemu-system-x86_64 mmdebstrap mkfs.ext4 apt-get; do
  command -v $t >/dev/null || { echo "$0: $t not found (apt-get install qemu-system-x86 mmdebstrap e2fsprogs)" >&2; exit 2; }
done

# What the node is made of. The kernel and initramfs-tools give it a bootable /boot; the rest is what a
# container node runs (the runtimes, conmon, CNI plugins, iptables, AppArmor) and what the tests use there
# (the kit's registry server, sudo for critest's AppArmor specs, busybox-static for test root file systems).
PACKAGES=(systemd systemd-sysv dbus udev kmod linux-image-amd64 initramfs-tools apparmor
  runc crun conmon catatonit containernetworking-plugins iptables nftables iproute2 procps hostname
  sudo docker-registry openssl ca-certificates zstd e2fsprogs busybox-static)
SUITE=trixie

if [ "$(id -u)" = 0 ]; then cache=${SKIFF_TRIXIE_CACHE:-/var/cache/skiff-trixie}; else cache=${SKIFF_TRIXIE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/skiff-trixie}; fi
mkdir -p "$cache"
exec 9>"$cache/.lock"   # nodes started side by side build it once
flock -w 3600 9 || { echo "$0: another build of the node held $cache/.lock for an hour" >&2; exit 2; }

# Makes the node into the directory $1: the root file system from trixie's packages, its ext4 disk image,
# and the kernel and initramfs that trixie's linux-image and initramfs-tools put in its /boot.
make_node() {
  local out=$1 root=$work/root
  rm -rf "$out" && mkdir -p "$out"
  # The service that runs the command given to this script: the box (a 9p share) holds the command and the
  # list of the host's directories to mount; the status goes back there; then the node powers off.
  cat > "$work/skiff-run" <<'RUN'
#!/bin/bash
# Mounts the box and the host's shared directories, runs the command, records its status, powers off.
box=/run/skiff-box
mkdir -p $box && mount -t 9p -o trans=virtio,version=9p2000.L,cache=none box $box
i=0; while read -r d; do
  [ -n "$d" ] || continue
  mkdir -p "$d" && mount -t 9p -o trans=virtio,version=9p2000.L,msize=1048576 "share$i" "$d"; i=$((i+1))
done < $box/shares
bash $box/command.sh </dev/null
echo $? > $box/status
sync
systemctl poweroff -f
RUN
  cat > "$work/skiff-run.service" <<'UNIT'
[Unit]
Description=the command given to trixie-node.sh
Wants=dbus.socket
After=basic.target dbus.socket apparmor.service
[Service]
Type=oneshot
StandardInput=null
StandardOutput=tty
StandardError=tty
TTYPath=/dev/console
ExecStart=/usr/local/sbin/skiff-run
UNIT
  printf '[Unit]\nDescription=trixie-node.sh\nRequires=basic.target skiff-run.service\nAfter=basic.target\n' > "$work/skiff-run.target"
  chmod +x "$work/skiff-run"
  # systemd-firstboot would ask on the console (every boot is a first one: the disk's changes are thrown away).
  mmdebstrap --variant=minbase --mode=root --skip=check/empty --components=main \
    --include="$(IFS=,; echo "${PACKAGES[*]}")" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --essential-hook='mkdir -p "$1/etc/initramfs-tools/conf.d" && printf "MODULES=most\nCOMPRESS=zstd\n" > "$1/etc/initramfs-tools/conf.d/skiff-node"' \
    --customize-hook='echo trixie-node > "$1/etc/hostname"; printf "127.0.0.1 localhost\n127.0.1.1 trixie-node\n" > "$1/etc/hosts"' \
    --customize-hook='printf "LABEL=skiff-node / ext4 rw,discard 0 0\n" > "$1/etc/fstab"' \
    --customize-hook='chroot "$1" systemd-machine-id-setup >/dev/null; chroot "$1" systemctl mask systemd-firstboot.service >/dev/null 2>&1' \
    --customize-hook="cp '$work/skiff-run' \"\$1/usr/local/sbin/skiff-run\" && cp '$work/skiff-run.service' '$work/skiff-run.target' \"\$1/etc/systemd/system/\"" \
    --customize-hook='rm -rf "$1/var/cache/apt/archives/"*.deb "$1/var/lib/apt/lists/"*' \
    "$SUITE" "$root" "$sources" \
    < /dev/null 2> >(tee "$out/build.log" >&2) >/dev/null
  [ -f "$root/etc/hostname" ] || { echo "$0: mmdebstrap failed (its log: $out/build.log)" >&2; exit 1; }
  cp "$root"/boot/vmlinuz-* "$out/vmlinuz" && cp "$root"/boot/initrd.img-* "$out/initrd.img"
  # The disk: sparse, so its size is a ceiling; what the runs write goes to a throwaway overlay.
  mkfs.ext4 -q -L skiff-node -d "$root" -E assume_storage_prezeroed=1 "$out/root.img" 24G
}

# The Debian mirror this machine already uses, read from its own apt sources.
uri=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$uri" ] || uri=$(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' /etc/apt/sources.list 2>/dev/null || true)
uri=${uri:-http://deb.debian.org/debian}
sec_uri=${uri%/debian}/debian-security
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
sources="deb [signed-by=$keyring] $uri $SUITE main
deb [signed-by=$keyring] $uri $SUITE-updates main
deb [signed-by=$keyring] $sec_uri $SUITE-security main"

# The key: how the node is made (make_node, the packages) and the candidate version of every package named
# (the kernel's by its versioned package), from trixie's lists as they are now.
work=$(mktemp -d "${TMPDIR:-/tmp}/skiff-trixie.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial"
echo "$sources" > "$work/apt/sources.list"
aptopts=(-o "Dir::Etc::SourceList=$work/apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent -o "Dir::State::Lists=$work/apt/lists"
  -o "Dir::Cache=$work/apt/cache" -o Dir::State::status=/dev/null -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
key=
if apt-get "${aptopts[@]}" update -q >"$work/apt/update.log" 2>&1; then
  versions=$(apt-cache "${aptopts[@]}" policy "${PACKAGES[@]}" 2>/dev/null | awk '/^[^ ]/ {p=$1; sub(/:$/, "", p)} /Candidate:/ {print p, $2}')
  kpkg=$(apt-cache "${aptopts[@]}" depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  versions+=$'\n'"kernel: $kpkg"
  key=$( { declare -f make_node; echo "${PACKAGES[*]}"; echo "$versions"; } | sha256sum | cut -c1-16)
elif [ -f "$cache/node/key" ]; then
  echo "trixie-node: trixie's package lists could not be fetched ($(tail -1 "$work/apt/update.log")); using the node built before" >&2
  key=$(cat "$cache/node/key")
else
  echo "$0: trixie's package lists could not be fetched, and no node is cached:" >&2; cat "$work/apt/update.log" >&2; exit 2
fi
node=$cache/node

if [ "$(cat "$node/key" 2>/dev/null)" != "$key" ]; then
  [ "$(id -u)" = 0 ] || { echo "$0: building the node needs root (mmdebstrap, mkfs.ext4 -d)" >&2; exit 2; }
  echo "trixie-node: building the node into $node (packages changed or none built yet)" >&2
  started=$(date +%s)
  make_node "$node.new"
  echo "$versions" > "$node.new/versions"
  echo "$key" > "$node.new/key"
  rm -rf "$node" && mv "$node.new" "$node"
  echo "trixie-node: built in $(( $(date +%s) - started )) s: $(grep -E '^(kernel|systemd|apparmor|runc|crun|conmon) ' "$node/versions" | tr '\n' ' ')" >&2
fi
flock -u 9
[ $build_only = 0 ] || { echo "$node"; exit 0; }

box=$(mktemp -d "${TMPDIR:-/tmp}/trixie-node.XXXXXX")
trap 'rm -rf "$work" "$box"' EXIT
{ printf 'cd %q\n' "$PWD"; export -p | grep -vE '^declare -x (PWD|OLDPWD|SHLVL|_)='; printf '%q ' "$@"; echo; } > "$box/command.sh"
printf '%s\n' "${shares[@]}" > "$box/shares"
accel=${VM_ACCEL:-tcg}; [ "$accel" = tcg ] && accel="tcg,thread=multi -cpu max"
fs=(-virtfs "local,path=$box,mount_tag=box,security_model=none")
i=0; for d in "${shares[@]}"; do fs+=(-virtfs "local,path=$d,mount_tag=share$i,security_model=none,multidevs=remap"); i=$((i+1)); done
# snapshot=on: the run writes to a temporary overlay (under TMPDIR), never to the cached disk.
# shellcheck disable=SC2086
TMPDIR=$work qemu-system-x86_64 -accel $accel -m "$mem" -smp "$cpus" -nodefaults -no-user-config -display none -nic none \
  -no-reboot -serial "file:$box/console" -kernel "$node/vmlinuz" -initrd "$node/initrd.img" \
  -drive "file=$node/root.img,if=virtio,format=raw,snapshot=on,cache=unsafe,discard=unmap" \
  -append "console=ttyS0 root=LABEL=skiff-node rw quiet loglevel=1 panic=-1 systemd.unit=skiff-run.target systemd.show_status=false systemd.log_level=warning" \
  "${fs[@]}" </dev/null >"$box/qemu.log" 2>&1 &
vm=$!
trap 'kill "$vm" 2>/dev/null || true; wait "$vm" 2>/dev/null || true; rm -rf "$work" "$box"' EXIT
trap 'exit 143' TERM INT   # a caller's timeout or kill stops the guest too
touch "$box/console"
tail -n +1 -f --pid=$vm "$box/console" 2>/dev/null \
  | grep --line-buffered -v -E '(^Powering off|reboot: |Sending SIG|All filesystems|\[.*\] (systemd|reboot))' &
wait $vm || true
wait $! 2>/dev/null || true
[ -f "$box/status" ] || { echo "$0: the node stopped before the command ended" >&2; sed -n '1,20p' "$box/qemu.log" >&2; exit 125; }
exit "$(cat "$box/status")"
