// Whether pods can have user namespaces of their own on this node, found out once by trying what
// they need: the kernel creates a user namespace and takes a written ID map, a directory on the
// filesystem of the container rootfs can be ID-mapped with it and overlayfs mounted over that (as a
// container's rootfs is; containers/idmap-rootfs.ts), and the OCI runtime says it handles user
// namespaces (its `features`, read once for the daemon in features.ts). Status advertises the result
// per runtime handler.
import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { execCommand } from '../util/command.ts';
import { IDMAP_SCRIPT } from '../containers/idmap-mounts.ts';
import { ociFeatures } from './features.ts';

export interface UserNamespaceSupport {
  supported: boolean;
  /** Why not (or what was checked). */
  reason: string;
}

const TIMEOUT_MS = 10_000;

// A holder unshares a user namespace; the host writes a map for it, as RunPodSandbox does. Then a
// directory beside the container rootfs is ID-mapped with it, as layers and volumes are
// (idmap-mounts.ts), and overlayfs is mounted over it: a root-owned file must show the namespace's root.
const PROBE_USERNS = `set -eu
dir=$1 script=$2
unshare --user -- sleep 10 &
h=$!
trap 'kill $h 2>/dev/null || true; umount -l "$dir/merged" "$dir/mapped" 2>/dev/null || true' EXIT
own=$(readlink /proc/self/ns/user); n=0
while [ "$(readlink /proc/$h/ns/user)" = "$own" ]; do n=$((n + 1)); [ $n -lt 200000 ] || exit 1; done
printf '0 100000 65536\\n' > /proc/$h/uid_map
printf '0 100000 65536\\n' > /proc/$h/gid_map
cat /proc/$h/uid_map
mkdir -p "$dir/layer" "$dir/mapped" "$dir/upper" "$dir/work" "$dir/merged"
: > "$dir/layer/file"
perl -MPOSIX -e "$script" /proc/$h/ns/user "$dir/layer" "$dir/mapped"
stat -c 'owner %u' "$dir/mapped/file"
mount -t overlay overlay -o "lowerdir=$dir/mapped,upperdir=$dir/upper,workdir=$dir/work" "$dir/merged"
stat -c 'overlay owner %u' "$dir/merged/file"
`;

async function kernelUserNamespaces(scratchParent: string): Promise<string | undefined> {
  const max = Number((await readFile('/proc/sys/user/max_user_namespaces', 'utf8').catch(() => '0')).trim());
  if (!(max > 0)) return 'the kernel allows no user namespaces (/proc/sys/user/max_user_namespaces is 0 or missing)';
  await mkdir(scratchParent, { recursive: true });
  const dir = await mkdtemp(join(scratchParent, 'idmap-probe-'));
  try {
    const r = await execCommand('/bin/sh', ['-c', PROBE_USERNS, 'skiff-userns-probe', dir, IDMAP_SCRIPT], { timeoutMs: TIMEOUT_MS });
    if (!/^\s*0\s+100000\s+65536\s*$/m.test(r.stdout)) return `cannot create a user namespace with an ID map: ${r.stderr.trim() || `exit ${r.code}`}`;
    if (!/^owner 100000$/m.test(r.stdout)) return `cannot make an ID-mapped mount: ${r.stderr.trim() || `exit ${r.code}`}`;
    if (r.code !== 0 || !/^overlay owner 100000$/m.test(r.stdout)) return `overlayfs cannot use an ID-mapped layer: ${r.stderr.trim() || `exit ${r.code}`}`;
    return undefined;
  } finally {
    await rm(dir, { recursive: true, force: true }).catch(() => {});
  }
}

async function runtimeUserNamespaces(runtimePath: string): Promise<string | undefined> {
  const features = await ociFeatures(runtimePath);
  if (features.unknown) return `${features.unknown}, so its user namespace support is unknown`;
  if (features.namespaces.includes('user')) return undefined;
  return `${runtimePath} features does not list the user namespace`;
}

/**
 * The runtime sets a container up as root of its user namespace, an unprivileged host ID: it must be
 * able to pass through every directory above the container's rootfs and the pod's files.
 */
async function searchable(dirs: string[]): Promise<string | undefined> {
  for (const start of dirs) {
    for (let dir = start; ; dir = dirname(dir)) {
      const st = await stat(dir).catch(() => undefined);
      if (st && !(st.mode & 0o001)) {
        return `${dir} is not searchable by other users (mode ${(st.mode & 0o777).toString(8)}); containers in a user namespace could not reach their files (chmod o+x ${dir})`;
      }
      if (dirname(dir) === dir) break;
    }
  }
  return undefined;
}

async function detect(runtimePath: string, scratchParent: string, dirs: string[]): Promise<UserNamespaceSupport> {
  const checks = [kernelUserNamespaces(scratchParent), runtimeUserNamespaces(runtimePath), searchable(dirs)];
  const reasons = (await Promise.all(checks)).filter((r): r is string => !!r);
  if (reasons.length > 0) return { supported: false, reason: reasons.join('; ') };
  return { supported: true, reason: `user namespaces, ID-mapped mounts, overlayfs over them and ${runtimePath} work` };
}

const cache = new Map<string, Promise<UserNamespaceSupport>>();

/**
 * Probed once per runtime binary, scratch dir (a directory on the filesystem holding container rootfs)
 * and the directories a container's files live under.
 */
export function userNamespaceSupport(runtimePath: string, scratchParent: string, dirs: string[] = []): Promise<UserNamespaceSupport> {
  const key = `${runtimePath}\0${scratchParent}\0${dirs.join('\0')}`;
  let found = cache.get(key);
  if (!found) {
    found = detect(runtimePath, scratchParent, dirs).catch((err: Error) => ({ supported: false, reason: `the check failed: ${err.message}` }));
    cache.set(key, found);
  }
  return found;
}

/**
 * For a runtime handler of the daemon's configuration ("" the default), probing under
 * `<root>/userns-probe` (beside the container rootfs).
 */
export function handlerUserNamespaceSupport(
  config: { root: string; state: string; runtime: { defaultRuntime: string; handlers: Record<string, { runtimePath: string }> } },
  handler: string,
): Promise<UserNamespaceSupport> {
  const runtimePath = config.runtime.handlers[handler || config.runtime.defaultRuntime]?.runtimePath;
  if (!runtimePath) return Promise.resolve({ supported: false, reason: `runtime handler "${handler}" is not configured` });
  return userNamespaceSupport(runtimePath, join(config.root, 'userns-probe'), [config.root, config.state]);
}
