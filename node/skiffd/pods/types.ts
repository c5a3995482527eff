// The pod sandbox facts other parts of skiffd (containers, stats, status) read. The pods subsystem is
// the only writer; everyone else gets records through `ctx.pods` and must treat them as read-only.
import type { CgroupDriver } from '../cgroups/driver.ts';
import type { ContainerEventType, PodSandboxConfig } from '../../../proto/gen/runtime/v1/api.ts';
import type { Logger } from '../logger.ts';
import type { Cni } from '../network/cni.ts';
import type { DefaultNetworkOptions } from '../network/default-network.ts';
import type { UserNamespaceMappings } from './userns.ts';

export type PodState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';

/** CRI NamespaceMode by name. TARGET never applies to a pod itself. */
export type NamespaceModeName = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';

/**
 * Where a pod's containers join their namespaces (OCI `linux.namespaces[].path`).
 * An absent entry means the host's namespace (NODE mode), except `pid`: see PodSandboxRecord.pidMode.
 * net/ipc/uts are bind-mounted namespace files under skiffd's state dir; pid is `/proc/PID/ns/pid`
 * of the pod's catatonit (present only when pidMode is POD and the pod is ready).
 * user is present only for a pod with its own user namespace, which then owns all the others.
 */
export interface PodNamespacePaths {
  user?: string;
  net?: string;
  ipc?: string;
  uts?: string;
  pid?: string;
}

export interface PodSandboxMetadataRecord {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

export interface PodSandboxRecord {
  /** 64 lowercase hex characters. */
  id: string;
  metadata: PodSandboxMetadataRecord;
  state: PodState;
  /** Creation time, nanoseconds since the epoch. */
  createdAt: bigint;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** Host directory for container logs ('' when the client gave none). */
  logDirectory: string;
  /** The pod's hostname (the node's hostname for host-network pods). */
  hostname: string;
  namespaces: PodNamespacePaths;
  /** Modes the client asked for; `network`/`ipc` NODE <=> the matching path is absent. */
  networkMode: NamespaceModeName;
  ipcMode: NamespaceModeName;
  /**
   * POD: containers join `namespaces.pid` (the pod's catatonit).
   * CONTAINER: each container gets its own new PID namespace.
   * NODE: containers use the host PID namespace.
   */
  pidMode: NamespaceModeName;
  /** The ID mappings of the pod's own user namespace (`namespaces.user`); absent: the host's. */
  userNamespace?: UserNamespaceMappings;
  /**
   * The pod cgroup's path in the hierarchy, always set: the client's `linux.cgroup_parent` (a systemd
   * slice expanded to where systemd nests it), or one of skiffd's own (`/skiffd/pod-<id[0:12]>`, or
   * `/skiffd.slice/skiffd-pod<id[0:12]>.slice` under the systemd driver).
   * Pod-level cpu/memory stats read this cgroup.
   */
  cgroupParent: string;
  /** '' means the default handler. */
  runtimeHandler: string;
  /** Files for containers to bind-mount at /etc/resolv.conf, /etc/hostname and /etc/hosts. */
  resolvConfPath: string;
  hostnamePath: string;
  hostsPath: string;
  /** The pod's shared /dev/shm (a tmpfs) when it has its own IPC namespace; absent for host IPC. */
  shmPath?: string;
  /** Primary pod IP ('' for host-network pods or when the network gave none). */
  ip: string;
  additionalIps: string[];
  /** The exact config the client sent (linux security context, sysctls, overhead, resources, ...). */
  config: PodSandboxConfig;
}

/** What `ctx.pods` offers to the rest of the daemon. */
export interface PodSandboxStore {
  /** The pod with exactly this id, or undefined. */
  get(podId: string): PodSandboxRecord | undefined;
  /** All pods, in creation order. */
  list(): PodSandboxRecord[];
  /**
   * Runs `fn` while holding the pod's lock, the same lock Run/Stop/RemovePodSandbox hold: use it
   * when a container operation must not interleave with the pod being stopped or removed (e.g.
   * CreateContainer checking the pod is ready). Do not call ctx.pods.withLock for the same pod from
   * inside containers.stopAllInPod/removeAllInPod: those already run under it.
   */
  withLock<T>(podId: string, fn: () => Promise<T>): Promise<T>;
}

/** What the pods subsystem needs from the containers subsystem. */
export interface PodContainerHooks {
  stopAllInPod(podId: string, timeoutSeconds: number): Promise<unknown>;
  removeAllInPod(podId: string): Promise<unknown>;
}

/** What node plugins (NRI) hear of a pod from inside its stop. */
export interface PodPluginHooks {
  /** The pod's containers are stopped; its network is not yet released. */
  stopPodSandbox(pod: PodSandboxRecord): Promise<void>;
}

export interface PodSandboxesOptions {
  /** Persistent records: `<root>/pods/<id>/`. */
  root: string;
  /** Runtime state (pinned namespaces): `<state>/pods/<id>/`. */
  state: string;
  cni: Cni;
  log: Logger;
  /** Runtime handler names RunPodSandbox accepts besides "" (the default). */
  runtimeHandlers?: () => readonly string[];
  containers?: () => PodContainerHooks | undefined;
  /** Node plugins (NRI), told when a pod's containers have stopped. */
  plugins?: () => PodPluginHooks | undefined;
  /** When the CNI conf dir holds no network, write this default one (false: never). */
  defaultNetwork?: DefaultNetworkOptions | false;
  catatonit?: string;
  /** Whether pods of a runtime handler ("" the default) can have user namespaces of their own here, and why not. */
  userNamespaces?: (runtimeHandler: string) => Promise<{ supported: boolean; reason: string }>;
  /** The cgroup driver (cgroupfs when absent). */
  cgroups?: CgroupDriver;
}

export interface PodSandboxFilterSpec {
  id?: string;
  state?: PodState;
  labelSelector?: Record<string, string>;
}

/** A pod sandbox's lifecycle, as GetContainerEvents reports it (with the sandbox's id in place of a container's). */
export interface PodSandboxEvent {
  podSandboxId: string;
  type: ContainerEventType;
  /** ns since epoch */
  createdAt: bigint;
  /** The pod as it was at the event (a removed pod is no longer in the store). */
  pod: PodSandboxRecord;
}
