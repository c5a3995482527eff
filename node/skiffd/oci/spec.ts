// The parts of the OCI runtime spec (config.json) skiffd writes. Field names are the spec's.

export interface OciSpec {
  ociVersion: string;
  process: OciProcess;
  root: { path: string; readonly?: boolean };
  hostname?: string;
  mounts: OciMount[];
  annotations?: Record<string, string>;
  hooks?: OciHooks;
  linux: OciLinux;
}

export interface OciHook {
  path: string;
  args?: string[];
  env?: string[];
  timeout?: number;
}

export interface OciHooks {
  prestart?: OciHook[];
  createRuntime?: OciHook[];
  createContainer?: OciHook[];
  startContainer?: OciHook[];
  poststart?: OciHook[];
  poststop?: OciHook[];
}

export interface OciProcess {
  terminal?: boolean;
  user: { uid: number; gid: number; additionalGids?: number[]; umask?: number };
  args: string[];
  /** The AppArmor profile the runtime applies to the process (and to every exec that starts from it). */
  apparmorProfile?: string;
  env: string[];
  cwd: string;
  capabilities?: {
    bounding: string[];
    effective: string[];
    permitted: string[];
    inheritable: string[];
    ambient: string[];
  };
  noNewPrivileges?: boolean;
  oomScoreAdj?: number;
  /** uint64 values: "unlimited" (2^64-1) only fits a bigint (util/json-bigint.ts writes it exactly). */
  rlimits?: { type: string; hard: number | bigint; soft: number | bigint }[];
}

export interface OciMount {
  destination: string;
  type?: string;
  source?: string;
  options?: string[];
}

export interface OciNamespace {
  type: 'pid' | 'network' | 'mount' | 'ipc' | 'uts' | 'user' | 'cgroup';
  path?: string;
}

export interface OciDevice {
  type: 'c' | 'b' | 'u' | 'p';
  path: string;
  major: number;
  minor: number;
  fileMode?: number;
  uid?: number;
  gid?: number;
}

export interface OciDeviceRule {
  allow: boolean;
  type?: string;
  major?: number;
  minor?: number;
  access?: string;
}

export interface OciResources {
  devices?: OciDeviceRule[];
  memory?: { limit?: number; swap?: number; reservation?: number; swappiness?: number; disableOOMKiller?: boolean };
  cpu?: { shares?: number; quota?: number; period?: number; realtimeRuntime?: number; realtimePeriod?: number; cpus?: string; mems?: string };
  hugepageLimits?: { pageSize: string; limit: number | bigint }[];
  unified?: Record<string, string>;
  pids?: { limit: number };
  blockIO?: unknown;
}

export interface OciIdMapping {
  containerID: number;
  hostID: number;
  size: number;
}

export interface OciLinux {
  namespaces: OciNamespace[];
  uidMappings?: OciIdMapping[];
  gidMappings?: OciIdMapping[];
  devices?: OciDevice[];
  resources?: OciResources;
  cgroupsPath?: string;
  sysctl?: Record<string, string>;
  maskedPaths?: string[];
  readonlyPaths?: string[];
  rootfsPropagation?: string;
  seccomp?: unknown;
  intelRdt?: { closID?: string };
}

/** What `runc state` prints. */
export interface OciState {
  id: string;
  pid: number;
  status: 'creating' | 'created' | 'running' | 'stopped' | 'paused' | string;
  bundle: string;
  created?: string;
}
