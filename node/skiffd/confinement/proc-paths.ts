// Which /proc and /sys paths a container sees masked (runc binds /dev/null over a file, an empty
// read-only tmpfs over a directory) and read-only. The client decides, as it does on containerd 2: the
// kubelet sends the node's defaults for `procMount: Default` and empty lists for `procMount: Unmasked` (a
// pod in a user namespace of its own, which may then mount its own /proc), so the lists it sends are the
// lists, empty ones included. A privileged container gets none.
import type { LinuxContainerSecurityContext } from '../../../proto/gen/runtime/v1/api.ts';

export interface ProcPaths {
  maskedPaths?: string[];
  readonlyPaths?: string[];
}

export function procPaths(sc: LinuxContainerSecurityContext | undefined): ProcPaths {
  if (sc?.privileged) return {};
  return { maskedPaths: [...(sc?.maskedPaths ?? [])], readonlyPaths: [...(sc?.readonlyPaths ?? [])] };
}
