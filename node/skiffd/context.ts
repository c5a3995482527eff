// The daemon context: one object, built by daemon.ts at startup and handed to every RPC handler,
// holding the configuration, the logger and the subsystems. Handlers reach everything through it
// (`ctx.containers`, `ctx.pods`, ...), so a subsystem plugs in by being added to Subsystems rather
// than by importing globals.
import type { AppArmorStatus } from './confinement/apparmor/index.ts';
import type { CgroupDriver } from './cgroups/driver.ts';
import type { SkiffdConfig } from './config.ts';
import type { ContainerManager } from './containers/manager.ts';
import type { ImageManager } from './images/image-manager.ts';
import type { Logger } from './logger.ts';
import type { NodePlugins } from './nri/index.ts';
import type { DaemonMetrics } from './metrics.ts';
import type { PodSandboxes } from './pods/manager.ts';
import type { Streaming } from './streaming/index.ts';

/** Every subsystem, opened in this order before the socket listens, closed in reverse after it drains. */
export interface Subsystems {
  /** Image store and puller (node/skiffd/images/). */
  readonly images: ImageManager;
  /** Pod sandboxes (node/skiffd/pods/); read-only for other subsystems. */
  readonly pods: PodSandboxes;
  /** Containers (node/skiffd/containers/). */
  readonly containers: ContainerManager;
  /** The streaming server for Exec, Attach and PortForward URLs (node/skiffd/streaming/). */
  readonly streaming: Streaming;
  /** AppArmor on this node: enabled or not, and the default profile (node/skiffd/confinement/apparmor/). */
  readonly apparmor: AppArmorStatus;
  /** The cgroup driver in use (`auto` resolved at start-up). */
  readonly cgroups: CgroupDriver;
  /** NRI: node plugins told of pod and container events, adjusting containers (node/skiffd/nri/). */
  readonly nri: NodePlugins;
}

export interface DaemonContext extends Subsystems {
  readonly config: SkiffdConfig;
  readonly log: Logger;
  readonly startedAt: Date;
  /** Settings the kubelet pushes with UpdateRuntimeConfig; kept in memory and in `<state>/runtime-config.json`. */
  readonly network: { podCidr: string };
  /** Prometheus metrics, when `metrics.address` is set. */
  readonly metrics?: DaemonMetrics;
}
