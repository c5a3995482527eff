// PodSandboxConfig builders and small gRPC helpers for pod tests.
import { randomBytes } from 'node:crypto';
import type { Status } from 'nice-grpc';
import { NamespaceMode, type DeepPartial, type PodSandboxConfig } from '../../proto/gen/runtime/v1/api.ts';
import type { PodSandboxRecord } from '../../node/skiffd/pods/types.ts';

export interface PodOptions {
  hostname?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  network?: NamespaceMode;
  pid?: NamespaceMode;
  ipc?: NamespaceMode;
  portMappings?: { containerPort: number; hostPort: number; protocol?: number; hostIp?: string }[];
  dns?: { servers: string[]; searches: string[]; options: string[] };
  sysctls?: Record<string, string>;
  cgroupParent?: string;
  logDirectory?: string;
}

export function podConfig(name: string, options: PodOptions = {}): DeepPartial<PodSandboxConfig> {
  return {
    metadata: { name, uid: `uid-${name}-${randomBytes(4).toString('hex')}`, namespace: 'skiff-test', attempt: 0 },
    hostname: options.hostname ?? name,
    logDirectory: options.logDirectory ?? '',
    dnsConfig: options.dns,
    portMappings: options.portMappings ?? [],
    labels: options.labels ?? {},
    annotations: options.annotations ?? {},
    linux: {
      cgroupParent: options.cgroupParent ?? '',
      sysctls: options.sysctls ?? {},
      securityContext: {
        namespaceOptions: {
          network: options.network ?? NamespaceMode.POD,
          pid: options.pid ?? NamespaceMode.CONTAINER,
          ipc: options.ipc ?? NamespaceMode.POD,
        },
      },
    },
  };
}

/** The gRPC status code a promise rejects with (fails if it resolves). */
export async function grpcCode(promise: Promise<unknown>): Promise<{ code: Status; details: string }> {
  try {
    await promise;
  } catch (err) {
    const e = err as { code?: Status; details?: string; message?: string };
    if (e.code === undefined) throw err;
    return { code: e.code, details: e.details ?? e.message ?? '' };
  }
  throw new Error('expected the call to fail, it succeeded');
}

/** The verbose `info` JSON of PodSandboxStatus. */
export interface PodInfo {
  hostname: string;
  namespaces: { net?: string; ipc?: string; uts?: string; pid?: string };
  pid: number;
  cgroupParent: string;
  files: { resolvConf: string; hostname: string; hosts: string; shm: string | null };
  network: null | { name: string; attached: boolean; netns: string; result?: { interfaces?: { name: string; sandbox?: string }[] } };
}

/**
 * A ready pod record as the pods subsystem keeps it, for tests that drive the container manager
 * without RunPodSandbox: host namespaces unless `overrides` says otherwise, no CNI, no pod files.
 */
export function testPodRecord(overrides: Partial<PodSandboxRecord> & Pick<PodSandboxRecord, 'logDirectory' | 'cgroupParent'>): PodSandboxRecord {
  return {
    id: randomBytes(32).toString('hex'),
    metadata: { name: 'pod', uid: randomBytes(8).toString('hex'), namespace: 'default', attempt: 0 },
    state: 'SANDBOX_READY',
    createdAt: 0n,
    labels: {},
    annotations: {},
    hostname: 'testpod',
    namespaces: {},
    networkMode: 'NODE',
    ipcMode: 'NODE',
    pidMode: 'CONTAINER',
    runtimeHandler: '',
    resolvConfPath: '',
    hostnamePath: '',
    hostsPath: '',
    ip: '',
    additionalIps: [],
    config: undefined as never,
    ...overrides,
  };
}
