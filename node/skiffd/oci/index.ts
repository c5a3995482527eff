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
}

export function makeOciRuntime(config: OciRuntimeConfig): OciRuntime {
  // conmon execs the runtime by path, so resolve names on PATH here.
  const given = config.runtimePath || 'runc';
  const path = which(given);
  if (!path) throw new Error(`OCI runtime "${given}" not found (set [runtime] runtime_path)`);
  const conmon = which(config.conmonPath || 'conmon');
  if (!conmon) throw new Error(`conmon "${config.conmonPath || 'conmon'}" not found (set [runtime] conmon_path)`);
  const name = basename(path).includes('crun') ? 'crun' : 'runc';
  return new CliOciRuntime({ name, path, root: config.root, conmonPath: conmon });
}
