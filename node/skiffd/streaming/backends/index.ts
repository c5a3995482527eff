// The streaming backend over skiffd's container and pod subsystems: exec through runc, attach
// through conmon, port forwarding through a relay in the pod's network namespace.
import type { StreamingBackend } from '../server.ts';
import { attachToContainer } from './attach.ts';
import { execInContainer } from './exec.ts';
import { forwardIntoPod, type RelayCommands } from './port-forward.ts';
import { runningContainer, type ContainerSource, type PodSource } from './targets.ts';

export interface BackendSources {
  /** Undefined until the container subsystem is open. */
  containers(): ContainerSource | undefined;
  pods(): PodSource | undefined;
  relay?: RelayCommands;
}

export function makeStreamingBackend(sources: BackendSources): StreamingBackend {
  const containers = () => {
    const c = sources.containers();
    if (!c) throw new Error('the container subsystem is not running');
    return c;
  };
  return {
    async exec(request, io) {
      return execInContainer(await runningContainer(containers(), request.containerId), request, io);
    },
    async attach(request, io) {
      return attachToContainer(await runningContainer(containers(), request.containerId), request, io);
    },
    async portForward(podSandboxId, port, data, signal) {
      const pods = sources.pods();
      if (!pods) throw new Error('the pod subsystem is not running');
      return forwardIntoPod(pods, podSandboxId, port, data, signal, sources.relay);
    },
  };
}
