// The daemon context: one object, built by daemon.ts at startup and handed to every RPC handler,
// holding the configuration, the logger and a slot per subsystem. Handlers reach everything through
// it, so a subsystem plugs in by filling its slot rather than by importing globals.
import type { SkiffdConfig } from './config.ts';
import type { ImageSubsystem } from './images/index.ts';
import type { Logger } from './logger.ts';
import type { PodSandboxes } from './pods/manager.ts';
import type { ContainerManager } from './containers/manager.ts';

export interface DaemonContext {
  readonly config: SkiffdConfig;
  readonly log: Logger;
  readonly startedAt: Date;
  /** Settings the kubelet pushes with UpdateRuntimeConfig; kept in memory and in `<state>/runtime-config.json`. */
  readonly network: { podCidr: string };
  /** Image store and puller, opened by `openImages` (node/skiffd/images/index.ts) before the server listens. */
  images: ImageSubsystem | undefined;
  /** Pod sandboxes (node/skiffd/pods/), opened by `openPods` after images; read-only for other subsystems. */
  pods?: PodSandboxes;
  /** Containers (node/skiffd/containers/), opened by `openContainers` after pods. */
  containers?: ContainerManager;
}
