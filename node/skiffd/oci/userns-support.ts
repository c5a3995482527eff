// Whether pods can have user namespaces of their own on this node, found out once by trying what
// they need: the kernel creates a user namespace and takes a written ID map, the OCI runtime says it
// handles user namespaces (`features`), and overlayfs mounts with metacopy (a container rootfs is
// re-owned through it; see containers/id-shift.ts). Status advertises the result per runtime handler.
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { execCommand } from '../util/command.ts';
import { IDMAP_SCRIPT } from '../containers/idmap-mounts.ts';

export interface UserNamespaceSupport {
  supported: boolean;
  /** Why not (or what was checked). */
  reason: string;
}

const TIMEOUT_MS = 10_000;

// A holder unshares a user namespace; the host writes a map for it, as RunPodSandbox does. Then a
// directory beside the container rootfs is ID-mapped with it, as volumes are (idmap-mounts.ts), and
// a root-owned file in it must show the namespace's root.
const PROBE_USERNS = `set -eu
dir=$1 script=$2
unshare --user -- sleep 10 &
h=$!
trap 'kill $h 2>/dev/null || true; umount -l "$dir/mapped" 2>/dev/null || true' EXIT
own=$(readlink /proc/self/ns/user); n=0
while [ "$(readlink /proc/$h/ns/user)" = "$own" ]; do n=$((n + 1)); [ $n -lt 200000 ] || exit 1; done
printf '0 100000 65536\\n' > /proc/$h/uid_map
printf '0 100000 65536\\n' > /proc/$h/gid_map
cat /proc/$h/uid_map
mkdir -p "$dir/volume" "$dir/mapped"
: > "$dir/volume/file"
perl -e "$script" "$dir/volume" "$dir/mapped" /proc/$h/ns/user
stat -c 'owner %u' "$dir/mapped/file"
`;

async function kernelUserNamespaces(scratchParent: string): Promise<string | undefined> {
  const max = Number((await readFile('/proc/sys/user/max_user_namespaces', 'utf8').catch(() => '0')).trim());
  if (!(max > 0)) return 'the kernel allows no user namespaces (/proc/sys/user/max_user_namespaces is 0 or missing)';
  await mkdir(scratchParent, { recursive: true });
  const dir = await mkdtemp(join(scratchParent, 'idmap-probe-'));
  try {
    const r = await execCommand('/bin/sh', ['-c', PROBE_USERNS, 'skiff-userns-probe', dir, IDMAP_SCRIPT], { timeoutMs: TIMEOUT_MS });
    if (!/^\s*0\s+100000\s+65536\s*$/m.test(r.stdout)) return `cannot create a user namespace with an ID map: ${r.stderr.trim() || `exit ${r.code}`}`;
    if (r.code !== 0 || !/^owner 100000$/m.test(r.stdout)) return `cannot make an ID-mapped mount for volumes: ${r.stderr.trim() || `exit ${r.code}`}`;
    return undefined;
  } finally {
    await rm(dir, { recursive: true, force: true }).catch(() => {});
  }
}

async function runtimeUserNamespaces(runtimePath: string): Promise<string | undefined> {
  const r = await execCommand(runtimePath, ['features'], { timeoutMs: TIMEOUT_MS }).catch((err: Error) => ({ code: -1, stdout: '', stderr: err.message }));
  if (r.code !== 0) return `${runtimePath} features failed, so its user namespace support is unknown: ${r.stderr.trim() || `exit ${r.code}`}`;
  try {
    const features = JSON.parse(r.stdout) as { linux?: { namespaces?: string[] } };
    if (features.linux?.namespaces?.includes('user')) return undefined;
    return `${runtimePath} features does not list the user namespace`;
  } catch {
    return `${runtimePath} features printed no JSON`;
  }
}

async function overlayMetacopy(scratchParent: string): Promise<string | undefined> {
  await mkdir(scratchParent, { recursive: true });
  const dir = await mkdtemp(join(scratchParent, 'userns-probe-'));
  const [lower, upper, work, merged] = ['lower', 'upper', 'work', 'merged'].map((d) => join(dir, d));
  try {
    for (const d of [lower, upper, work, merged]) await mkdir(d);
    await writeFile(join(lower, 'file'), Buffer.alloc(256 * 1024, 1));
    const opts = `lowerdir=${lower},upperdir=${upper},workdir=${work},metacopy=on`;
    const mounted = await execCommand('mount', ['-t', 'overlay', 'overlay', '-o', opts, merged], { timeoutMs: TIMEOUT_MS });
    if (mounted.code !== 0) return `overlayfs refuses metacopy=on: ${mounted.stderr.trim() || `exit ${mounted.code}`}`;
    try {
      const chowned = await execCommand('chown', ['100000:100000', join(merged, 'file')], { timeoutMs: TIMEOUT_MS });
      if (chowned.code !== 0) return `chown through overlayfs failed: ${chowned.stderr.trim()}`;
      // Metadata only: the copy in the writable layer holds no data (its blocks are at most xattrs).
      const copied = await stat(join(upper, 'file'));
      if (copied.uid !== 100000 || copied.blocks * 512 >= copied.size) return 'overlayfs copied file data on chown (metacopy is not in effect)';
    } finally {
      await execCommand('umount', [merged], { timeoutMs: TIMEOUT_MS });
    }
    return undefined;
  } finally {
    await rm(dir, { recursive: true, force: true }).catch(() => {});
  }
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
  const checks = [kernelUserNamespaces(scratchParent), runtimeUserNamespaces(runtimePath), overlayMetacopy(scratchParent), searchable(dirs)];
  const reasons = (await Promise.all(checks)).filter((r): r is string => !!r);
  if (reasons.length > 0) return { supported: false, reason: reasons.join('; ') };
  return { supported: true, reason: `user namespaces, ${runtimePath} and overlayfs metacopy work` };
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

/** For the daemon's configured runtime, probing under `<root>/userns-probe` (beside the container rootfs). */
export function configuredUserNamespaceSupport(config: { root: string; state: string; runtime: { runtimePath: string } }): Promise<UserNamespaceSupport> {
  return userNamespaceSupport(config.runtime.runtimePath || 'runc', join(config.root, 'userns-probe'), [config.root, config.state]);
}
