// Opens the pods subsystem for the daemon: CNI from the [cni] config, records under --root, pinned
// namespaces under --state. Opened before the socket listens, so recovery is finished before any RPC.
import { existsSync } from 'node:fs';
import type { SkiffdConfig } from '../config.ts';
import { cgroupfsDriver, type CgroupDriver } from '../cgroups/driver.ts';
import type { Logger } from '../logger.ts';
import { Cni } from '../network/cni.ts';
import { PodSandboxes, type PodContainerHooks } from './manager.ts';
import type { PodPluginHooks } from './types.ts';
import { handlerUserNamespaceSupport } from '../oci/userns-support.ts';

export { PodSandboxes } from './manager.ts';

/** `containers` is undefined until the container subsystem opens (after pods). */
export async function openPods(
  config: SkiffdConfig,
  log: Logger,
  containers: () => PodContainerHooks | undefined,
  cgroups: CgroupDriver = cgroupfsDriver,
  plugins?: () => PodPluginHooks | undefined,
): Promise<PodSandboxes> {
  const binDirs = [...config.cni.binDirs];
  // Upstream's install location, searched after the configured default when present.
  if (binDirs.length === 1 && binDirs[0] === '/usr/lib/cni' && existsSync('/opt/cni/bin')) binDirs.push('/opt/cni/bin');
  const cni = new Cni({ confDir: config.cni.confDir, binDirs });
  const pods = new PodSandboxes({
    root: config.root,
    state: config.state,
    cni,
    log: log.child({ subsystem: 'pods' }),
    runtimeHandlers: () => Object.keys(config.runtime.handlers).sort(),
    containers,
    plugins,
    userNamespaces: (handler) => handlerUserNamespaceSupport(config, handler),
    cgroups,
  });
  await pods.open();
  // Found out before the socket listens: the first Status need not wait for it, and no probe mount is
  // still in place under --root when a client sees the daemon ready (or stops it at once).
  for (const handler of Object.keys(config.runtime.handlers).sort()) {
    const userns = await handlerUserNamespaceSupport(config, handler);
    log.info(userns.supported ? 'pods may have user namespaces of their own' : 'pods cannot have user namespaces of their own here', {
      handler,
      reason: userns.reason,
    });
  }
  return pods;
}
