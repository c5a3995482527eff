#!/bin/bash
# What runc itself costs to delete a stopped container under each cgroup driver: the call skiffd's
# StopContainer ends with (containerd's shim makes it too). Run as root on a node booted with systemd.
#   bench/cri/runc-delete.sh [N]     N containers per driver (default 15)
set -euo pipefail
case "${1:-}" in -h | --help)
  sed -n '2,4p' "$0" | cut -c3-
  exit 0
  ;;
esac
n=${1:-15}
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "N must be a whole number of containers, at least 1 (got '$n')" >&2; exit 2; }
[ -d /run/systemd/system ] || { echo "systemd is not PID 1 here: boot a node with systemd (vm-v2.sh --systemd)" >&2; exit 2; }
for cmd in runc busybox jq; do command -v $cmd >/dev/null || { echo "needs $cmd" >&2; exit 2; }; done
bundle=$(mktemp -d /var/tmp/runc-delete.XXXXXX)
trap 'rm -rf "$bundle"' EXIT
mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs/proc" "$bundle/rootfs/dev" "$bundle/rootfs/sys"
cp "$(command -v busybox)" "$bundle/rootfs/bin/busybox"
ln -s busybox "$bundle/rootfs/bin/sleep"
cd "$bundle"
runc spec
jq '.process.terminal = false | .process.args = ["sleep", "1000"]' config.json >c && mv c config.json
ms() { echo $(($(date +%s%N) / 1000000)); }
for driver in cgroupfs systemd; do
  total=0
  for i in $(seq 1 "$n"); do
    id=runc-delete-$driver-$i flags=()
    if [ $driver = systemd ]; then
      flags=(--systemd-cgroup) path=system.slice:runc-delete:$id
    else
      path=/runc-delete/$id
    fi
    jq --arg p "$path" '.linux.cgroupsPath = $p' config.json >c && mv c config.json
    runc "${flags[@]}" run -d "$id" </dev/null >/dev/null 2>&1
    pid=$(runc "${flags[@]}" state "$id" | jq .pid)
    # pid 0 would signal our own process group: a container that is already gone is an error here.
    [[ $pid =~ ^[1-9][0-9]*$ ]] || { echo "container $id has no running process (pid '$pid')" >&2; exit 1; }
    kill -9 "$pid"
    for _ in $(seq 1 500); do kill -0 "$pid" 2>/dev/null || break; sleep 0.01; done
    start=$(ms)
    runc "${flags[@]}" delete --force "$id"
    total=$((total + $(ms) - start))
  done
  echo "$driver: runc delete of a stopped container, mean $((total / n)) ms over $n"
done
rmdir /sys/fs/cgroup/runc-delete 2>/dev/null || true
start=$(ms)
for _ in $(seq 1 "$n"); do /bin/true; done
echo "an exec of /bin/true: mean $((($(ms) - start) / n)) ms"
