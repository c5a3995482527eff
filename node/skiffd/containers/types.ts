// What the container subsystem needs from its neighbours (images, pods, a logger) and what it
// reports (views, events).
import type { AppArmorPolicy } from '../confinement/apparmor/index.ts';
import type { CdiPolicy } from '../cdi/index.ts';
import type { CgroupDriver } from '../cgroups/driver.ts';
import type { ContainerEventType, ContainerState } from '../../../proto/gen/runtime/v1/api.ts';
import type { PodSandboxRecord } from '../pods/types.ts';
import type { ExitInfo } from './exits.ts';
import type { ContainerRecord } from './record.ts';
import type { HostFacts, ImageConfigView } from './spec-builder.ts';
import type { Logger } from '../logger.ts';
import type { RuntimeHandlers } from '../oci/handlers.ts';
import type { OciRuntime } from '../oci/runtime.ts';
import type { OciSpec } from '../oci/spec.ts';

/** What containers need to know about an image. */
export interface ResolvedImage {
  /** Image id (`sha256:...`), reported as image_id. */
  id: string;
  /** Digested reference (image_ref). */
  ref: string;
  /** The image's first tag (`registry.k8s.io/pause:3.9`), if it has one. */
  tag?: string;
  /** Unpacked layer directories, base layer first. */
  layers: string[];
  config: ImageConfigView;
  /** What the image's config says it runs on. */
  platform?: { os?: string; architecture?: string };
  /** Set for an OCI artifact: mountable as an image volume (unless `unmountable` says why not), never run. */
  artifact?: { artifactType: string; unmountable?: string };
}

export interface ImageResolver {
  resolve(image: string): Promise<ResolvedImage | undefined> | ResolvedImage | undefined;
  /** Keeps these layer directories from garbage collection while a container has them mounted; returns the release. */
  retain?(layerDirs: string[]): () => void;
}

export interface PodLookup {
  get(podId: string): PodSandboxRecord | undefined;
  withLock?<T>(podId: string, fn: () => Promise<T>): Promise<T>;
}

export type ContainerLogger = Pick<Logger, 'info' | 'warn'> & Partial<Pick<Logger, 'debug'>>;

export interface ContainerManagerOptions {
  /** Persistent root (records, upper dirs): `<root>/containers/<id>`. */
  root: string;
  /** Runtime state (exit files, attach sockets). */
  state: string;
  /** The OCI runtime of every runtime handler; a single runtime is the one, default handler. */
  runtime: OciRuntime | RuntimeHandlers;
  pods: PodLookup;
  images: ImageResolver;
  log?: ContainerLogger;
  /** cgroup parent for pods that name none. */
  defaultCgroupParent?: string;
  /** The cgroup driver (cgroupfs when absent). */
  cgroups?: CgroupDriver;
  /** Overrides of facts read from the host (tests). */
  host?: Partial<HostFacts>;
  /** AppArmor on this node and the default profile (none: AppArmor read from the host, its default assumed loaded). */
  apparmor?: AppArmorPolicy;
  /** CDI devices (none: on, with the standard spec directories). */
  cdi?: CdiPolicy;
  /** Node plugins (NRI) that see containers made and started, and may adjust them; read at each call. */
  plugins?: () => ContainerPluginHooks | undefined;
}

/** What node plugins (NRI) take part in: the creation of a container and its start. */
export interface ContainerPluginHooks {
  /** May change `spec` (the container's config.json to be); throws a ServerError to fail the create. */
  createContainer(pod: PodSandboxRecord, record: ContainerRecord, spec: OciSpec, injectCdiDevices: (spec: OciSpec, names: string[]) => void): Promise<void>;
  /** The create failed after the plugins were asked. */
  createFailed(pod: PodSandboxRecord, record: ContainerRecord, spec: OciSpec): Promise<void>;
  /** The container is created in the runtime (it has a pid) and about to start; throws to fail the start. */
  startContainer(record: ContainerRecord): Promise<void>;
}

export interface ContainerEvent {
  containerId: string;
  podSandboxId: string;
  type: ContainerEventType;
  /** ns since epoch */
  createdAt: bigint;
  /** The container as it was at the event (a removed one is no longer in the store). */
  record?: ContainerRecord;
}

/** A container as the RPCs report it: the record plus what the exit file says. */
export interface ContainerView {
  record: ContainerRecord;
  state: ContainerState;
  exit?: ExitInfo;
}
