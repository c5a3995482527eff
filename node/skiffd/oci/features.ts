// What the OCI runtime says it can do, from its own `features` command (the runtime-spec's
// features document, runc 1.1+), read once per runtime binary, and the per-handler CRI features
// decided from it.
import { release } from 'node:os';
import { execCommand } from '../util/command.ts';
import { which } from '../util/which.ts';

export interface OciFeatures {
  /** Mount options the runtime understands, e.g. "rro" (recursive read-only, via mount_setattr). */
  mountOptions: string[];
  /** Namespaces the runtime can create or join (`linux.namespaces`), e.g. "user". */
  namespaces: string[];
  /** Why nothing is known: the runtime has no `features` command, or could not be run. */
  unknown?: string;
}

const FEATURES_TIMEOUT_MS = 10_000;

/**
 * Runs `<runtime> features` and reads its JSON. Rejects only when the program cannot be started (so
 * a caller may ask again once it is installed); a runtime without the command has no features.
 */
export async function readOciFeatures(runtimePath: string): Promise<OciFeatures> {
  const r = await execCommand(runtimePath, ['features'], { timeoutMs: FEATURES_TIMEOUT_MS });
  if (r.code !== 0) {
    const why = (r.stderr || r.stdout).trim().split('\n')[0] || (r.timedOut ? 'timed out' : `exit ${r.code}`);
    return { mountOptions: [], namespaces: [], unknown: `\`${runtimePath} features\` failed: ${why}` };
  }
  try {
    const doc = JSON.parse(r.stdout) as { mountOptions?: unknown; linux?: { namespaces?: unknown } };
    return { mountOptions: strings(doc.mountOptions), namespaces: strings(doc.linux?.namespaces) };
  } catch {
    return { mountOptions: [], namespaces: [], unknown: `\`${runtimePath} features\` did not print JSON` };
  }
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((o): o is string => typeof o === 'string') : [];
}

const read = new Map<string, Promise<OciFeatures>>();

/**
 * The features of a runtime binary (a name is looked up on PATH), asked of it once per daemon: every
 * caller shares one reading. A binary that cannot be started now may be installed later (RuntimeReady
 * follows it), so that answer is not kept.
 */
export function ociFeatures(runtimePath: string): Promise<OciFeatures> {
  const path = which(runtimePath) ?? runtimePath;
  let found = read.get(path);
  if (!found) {
    found = readOciFeatures(path).catch((err: Error) => {
      read.delete(path);
      return { mountOptions: [], namespaces: [], unknown: `cannot run ${path}: ${err.message}` };
    });
    read.set(path, found);
  }
  return found;
}

/** mount_setattr(2) with AT_RECURSIVE, which recursive read-only mounts need, came in Linux 5.12. */
const RRO_KERNEL: [number, number] = [5, 12];

/** Whether a kernel release string ("6.1.0-18-amd64") is at least major.minor. */
export function kernelAtLeast(kernelRelease: string, [major, minor]: [number, number]): boolean {
  const m = /^(\d+)\.(\d+)/.exec(kernelRelease);
  if (!m) return false;
  const [a, b] = [Number(m[1]), Number(m[2])];
  return a > major || (a === major && b >= minor);
}

/**
 * Recursive read-only mounts work when the runtime lists the "rro" mount option and the kernel has
 * mount_setattr; the reason says which is missing otherwise.
 */
export function recursiveReadOnlySupport(
  features: Pick<OciFeatures, 'mountOptions' | 'unknown'>,
  kernelRelease = release(),
): { supported: boolean; reason?: string } {
  if (!features.mountOptions.includes('rro')) {
    return { supported: false, reason: features.unknown ?? 'the OCI runtime does not list the "rro" mount option in its features' };
  }
  if (!kernelAtLeast(kernelRelease, RRO_KERNEL)) {
    return { supported: false, reason: `kernel ${kernelRelease} is older than ${RRO_KERNEL.join('.')} (no mount_setattr)` };
  }
  return { supported: true };
}
