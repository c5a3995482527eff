// The streaming backend over skiffd's container and pod subsystems: exec through runc, attach
// through conmon, port forwarding through a relay in the pod's network namespace.
import type { StreamingBackend } from '../server.ts';
import { attachToContainer } from './attach.ts';
import { execInContainer } from './exec.ts';
import { forwardIntoPod, type RelayCommands } from './port-forward.ts';
import { execTarget, runningContainer, type ContainerSource, type PodSource } from './targets.ts';

export interface BackendSources {
  containers: ContainerSource;
  pods: PodSource;
  relay?: RelayCommands;
}

export function makeStreamingBackend(sources: BackendSources): StreamingBackend {
  return {
    async exec(request, io) {
      return execInContainer(await execTarget(sources.containers, request.containerId), request, io);
    },
    async attach(request, io) {
      return attachToContainer(await runningContainer(sources.containers, request.containerId), request, io);
    },
    async portForward(podSandboxId, port, data, signal) {
      return forwardIntoPod(sources.pods, podSandboxId, port, data, signal, sources.relay);
    },
  };
}
