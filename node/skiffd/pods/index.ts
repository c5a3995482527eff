// Opens the pods subsystem for the daemon: CNI from the [cni] config, records under --root, pinned
// namespaces under --state. Opened before the socket listens, so recovery is finished before any RPC.
import { existsSync } from 'node:fs';
import type { DaemonContext } from '../context.ts';
import { Cni } from '../network/cni.ts';
import { PodSandboxes } from './manager.ts';

export { PodSandboxes } from './manager.ts';

export async function openPods(ctx: DaemonContext): Promise<PodSandboxes> {
  const binDirs = [...ctx.config.cni.binDirs];
  // Upstream's install location, searched after the configured default when present.
  if (binDirs.length === 1 && binDirs[0] === '/usr/lib/cni' && existsSync('/opt/cni/bin')) binDirs.push('/opt/cni/bin');
  const cni = new Cni({ confDir: ctx.config.cni.confDir, binDirs });
  const pods = new PodSandboxes({
    root: ctx.config.root,
    state: ctx.config.state,
    cni,
    log: ctx.log.child({ subsystem: 'pods' }),
    runtimeHandlers: () => [],
    containers: () => ctx.containers,
  });
  await pods.open();
  return pods;
}
