// Picks the OCI runtime implementation from configuration.
import { basename } from 'node:path';
import { CliOciRuntime } from './runc.ts';
import { which } from '../util/which.ts';
import type { OciRuntime } from './runtime.ts';

export type { OciRuntime, CreateOptions, CreateResult, ExecSyncOptions, ExecSyncResult } from './runtime.ts';
export { OciRuntimeError } from './runtime.ts';

export interface OciRuntimeConfig {
  /** `[runtime] runtime_path`: runc (default) or crun. crun 1.8 refuses cgroup v1 hybrid hosts unless hugetlb is a v1 hierarchy. */
  runtimePath?: string;
  conmonPath?: string;
  /** Directory for the runtime's `--root`. */
  root: string;
  /** Global flags for every runtime call (the cgroup driver's: `--systemd-cgroup`). */
  runtimeFlags?: readonly string[];
  /** Flags for conmon (the cgroup driver's). */
  conmonFlags?: readonly string[];
}

export function makeOciRuntime(config: OciRuntimeConfig): OciRuntime {
  // conmon execs the runtime by path, so resolve names on PATH here.
  // A missing binary is not fatal at startup: the daemon still serves images and pods, and the
  // first container operation reports the missing program by name.
  const given = config.runtimePath || 'runc';
  const path = which(given) ?? given;
  const conmon = which(config.conmonPath || 'conmon') ?? (config.conmonPath || 'conmon');
  const name = basename(path).includes('crun') ? 'crun' : 'runc';
  return new CliOciRuntime({ name, path, root: config.root, conmonPath: conmon, globalFlags: config.runtimeFlags, conmonFlags: config.conmonFlags });
}
