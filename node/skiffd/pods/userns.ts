// Pod user namespaces (`namespace_options.userns_options`): what a request may ask for, and pinning
// one. A pod in mode POD gets one user namespace with the client's ID mappings; its net, ipc and uts
// namespaces are created inside it (so they belong to it), and every container of the pod joins all
// of them. NODE, or no options, is the host's user namespace.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { NamespaceMode, type UserNamespace } from '../../../proto/gen/runtime/v1/api.ts';
import { execChecked } from '../util/command.ts';
import type { PinRequest } from './namespaces.ts';

/** One contiguous range: container IDs [containerId, containerId+length) are host IDs from hostId. */
export interface IdRange {
  containerId: number;
  hostId: number;
  length: number;
}

/** The mappings of a pod's user namespace (one range each, starting at container ID 0). */
export interface UserNamespaceMappings {
  uids: IdRange;
  gids: IdRange;
}

const MAX_ID = 2 ** 32 - 1;

/** Why a request is refused: the field and what is wrong with it. */
export class UserNamespaceRequestError extends Error {}

function checkRanges(field: string, ranges: readonly IdRange[]): IdRange {
  if (ranges.length === 0) throw new UserNamespaceRequestError(`${field}: mode POD needs one mapping (none given)`);
  if (ranges.length > 1) {
    throw new UserNamespaceRequestError(`${field}: only one mapping is supported (${ranges.length} given); map one contiguous range from container ID 0`);
  }
  const { containerId, hostId, length } = ranges[0];
  if (containerId !== 0) throw new UserNamespaceRequestError(`${field}[0]: container ID 0 must be mapped (the range starts at container ID ${containerId})`);
  if (length < 1) throw new UserNamespaceRequestError(`${field}[0]: length must be at least 1`);
  if (hostId === 0) throw new UserNamespaceRequestError(`${field}[0]: host ID 0 must not be mapped into a pod (host_id is 0)`);
  if (hostId + length - 1 > MAX_ID) throw new UserNamespaceRequestError(`${field}[0]: host IDs ${hostId}..${hostId + length - 1} go past ${MAX_ID}`);
  return { containerId, hostId, length };
}

/**
 * The mappings a pod's user namespace options ask for, or undefined for the host's user namespace.
 * `field` names the options in error messages. Throws UserNamespaceRequestError for what cannot be done.
 */
export function planUserNamespace(options: UserNamespace | undefined, field: string): UserNamespaceMappings | undefined {
  if (!options) return undefined;
  switch (options.mode) {
    case NamespaceMode.NODE:
      if (options.uids.length > 0 || options.gids.length > 0) throw new UserNamespaceRequestError(`${field}: mode NODE takes no ID mappings`);
      return undefined;
    case NamespaceMode.POD:
      return { uids: checkRanges(`${field}.uids`, options.uids), gids: checkRanges(`${field}.gids`, options.gids) };
    case NamespaceMode.CONTAINER:
    case NamespaceMode.TARGET:
      throw new UserNamespaceRequestError(`${field}.mode: ${NamespaceMode[options.mode]} is not supported for user namespaces (POD or NODE)`);
    default:
      throw new UserNamespaceRequestError(`${field}.mode: unknown namespace mode ${options.mode}`);
  }
}

export function sameMappings(a: UserNamespaceMappings | undefined, b: UserNamespaceMappings | undefined): boolean {
  const same = (x: IdRange, y: IdRange) => x.containerId === y.containerId && x.hostId === y.hostId && x.length === y.length;
  if (!a || !b) return a === b;
  return same(a.uids, b.uids) && same(a.gids, b.gids);
}

/** The OCI spec's form (`linux.uidMappings`). */
export function ociMappings(range: IdRange): { containerID: number; hostID: number; size: number }[] {
  return [{ containerID: range.containerId, hostID: range.hostId, size: range.length }];
}

/** `/proc/PID/uid_map` form. */
export function procMapLine(range: IdRange): string {
  return `${range.containerId} ${range.hostId} ${range.length}\n`;
}

const TIMEOUT_MS = 10_000;

// Run on the host by /bin/sh. A holder process unshares the user namespace together with the others
// (one unshare(2), so they belong to it); once it has, the host writes the ID maps (only a process
// outside may write other IDs than its own) and bind-mounts each namespace onto its file. The host's
// root, privileged over namespaces its children own, sets the hostname and brings loopback up.
const PIN_SCRIPT = `set -eu
dir=$1 uidmap=$2 gidmap=$3 kinds=$4 host=$5 lo=$6 shm=$7
unshare --user $kinds -- sleep 60 &
holder=$!
trap 'kill $holder 2>/dev/null || true' EXIT
own=$(readlink /proc/self/ns/user)
n=0
while [ "$(readlink /proc/$holder/ns/user)" = "$own" ]; do
  n=$((n + 1)); [ $n -lt 200000 ] || { echo "the user namespace was not created" >&2; exit 1; }
done
printf '%s' "$uidmap" > /proc/$holder/uid_map
printf '%s' "$gidmap" > /proc/$holder/gid_map
mount --bind /proc/$holder/ns/user "$dir/user"
for k in net ipc uts; do
  case " $kinds " in *" --$k "*) mount --bind /proc/$holder/ns/$k "$dir/$k" ;; esac
done
steps=":"
case " $kinds " in *" --uts "*) steps="$steps; printf '%s' \\"\\$1\\" > /proc/sys/kernel/hostname" ;; esac
case " $kinds " in *" --net "*) [ "$lo" = yes ] && steps="$steps; ip link set lo up" ;; esac
nsenter --target $holder --net --uts -- /bin/sh -c "set -e; $steps" skiff-pin "$host"
[ -z "$shm" ] || mount -t tmpfs -o nosuid,nodev,noexec,mode=1777,size=65536k shm "$shm"
`;

/**
 * Creates the pod's user namespace with `mappings`, and its net/ipc/uts namespaces inside it, pinned at
 * `dir/{user,net,ipc,uts}`; returns their paths. On failure, whatever got pinned is left for the
 * caller's rollback (unpinNamespaces) to remove.
 */
export async function pinUserNamespaces(
  dir: string,
  mappings: UserNamespaceMappings,
  request: PinRequest,
): Promise<{ user: string; net?: string; ipc?: string; uts?: string }> {
  const kinds = (['net', 'ipc', 'uts'] as const).filter((k) => request[k]);
  await mkdir(dir, { recursive: true });
  const paths: { user: string; net?: string; ipc?: string; uts?: string } = { user: join(dir, 'user') };
  for (const kind of kinds) paths[kind] = join(dir, kind);
  for (const path of Object.values(paths)) await writeFile(path, '');
  if (request.shm) await mkdir(request.shm, { recursive: true });
  await execChecked(
    '/bin/sh',
    [
      '-c',
      PIN_SCRIPT,
      'skiff-pin-userns',
      dir,
      procMapLine(mappings.uids),
      procMapLine(mappings.gids),
      kinds.map((k) => `--${k}`).join(' '),
      request.hostname,
      (request.loopbackUp ?? true) ? 'yes' : 'no',
      request.shm ?? '',
    ],
    { timeoutMs: TIMEOUT_MS },
  );
  return paths;
}
