// The timed CRI call sequences. Both runtimes go through exactly this code on the same kind of
// nice-grpc client; only the socket differs. Every call carries a deadline.
import { randomBytes } from 'node:crypto';
import { NamespaceMode, type ContainerConfig, type DeepPartial, type PodSandboxConfig } from '../../proto/gen/runtime/v1/api.ts';
import type { ImageClient, RuntimeClient } from './peer.ts';

export const LIFECYCLE_OPS = [
  'RunPodSandbox',
  'CreateContainer',
  'StartContainer',
  'StopContainer',
  'RemoveContainer',
  'StopPodSandbox',
  'RemovePodSandbox',
] as const;
export const IMAGE_OPS = ['PullImage', 'ListImages', 'RemoveImage'] as const;
export type Op = (typeof LIFECYCLE_OPS)[number] | (typeof IMAGE_OPS)[number];

export type Samples = Partial<Record<Op, number[]>>;

/** Grace period given to StopContainer; the workload exits on SIGTERM at once, so it is never used up. */
export const STOP_TIMEOUT_S = 10;

/** The container: a shell that exits 0 on SIGTERM, waiting on a sleep (a bare sleep as PID 1 ignores SIGTERM). */
export const WORKLOAD_COMMAND = ['/bin/sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"];

export interface RunOptions {
  rpcTimeoutMs: number;
  logDir: string;
  /** The pod's cgroup_parent for a pod UID, as a kubelet sends it (none: the runtime's own). */
  cgroupParent?: (uid: string) => string;
}

/**
 * Under the systemd driver each pod gets a slice of its own, as a kubelet's pods do (runc has systemd make
 * it with the first scope), under a slice of the benchmark's that the run stops at the end.
 */
export const BENCH_SLICE = 'skiffbench.slice';
export const benchPodSlice = (uid: string) => `skiffbench-pod${uid.replaceAll('-', '_')}.slice`;
/** The cgroup_parent a runtime's pods get: a slice under the systemd driver, the runtime's own choice under cgroupfs. */
export const cgroupParentFor = (driver: 'systemd' | 'cgroupfs') => (driver === 'systemd' ? benchPodSlice : undefined);

export class OpError extends Error {
  constructor(
    readonly op: Op | string,
    readonly sample: number,
    cause: unknown,
  ) {
    const e = cause as { details?: string; message?: string; code?: number };
    super(`${op} (sample ${sample}): ${e.details ?? e.message ?? String(cause)}`);
  }
}

const deadline = (ms: number) => ({ signal: AbortSignal.timeout(ms) });

async function timed<T>(into: number[] | undefined, op: Op, sample: number, call: () => Promise<T>): Promise<T> {
  const start = performance.now();
  let value: T;
  try {
    value = await call();
  } catch (err) {
    throw new OpError(op, sample, err);
  }
  into?.push(performance.now() - start);
  return value;
}

export function podConfig(name: string, logDir: string, cgroupParent?: (uid: string) => string): DeepPartial<PodSandboxConfig> {
  const uid = `bench-${randomBytes(6).toString('hex')}`;
  return {
    metadata: { name, uid, namespace: 'skiff-bench', attempt: 0 },
    hostname: name,
    logDirectory: logDir,
    linux: {
      ...(cgroupParent ? { cgroupParent: cgroupParent(uid) } : {}),
      securityContext: { namespaceOptions: { network: NamespaceMode.POD, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.POD } },
    },
  };
}

export function containerConfig(name: string, image: string, command = WORKLOAD_COMMAND): DeepPartial<ContainerConfig> {
  return {
    metadata: { name, attempt: 0 },
    image: { image },
    command,
    logPath: `${name}/0.log`,
    linux: { securityContext: { namespaceOptions: { network: NamespaceMode.POD, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.POD } } },
  };
}

/** Where one sample's timings go; undefined for warm-up samples. */
export type Recorder = (op: Op) => number[] | undefined;

export function recorder(samples: Samples, keep: boolean): Recorder {
  return (op) => (keep ? (samples[op] ??= []) : undefined);
}

export interface LifecycleState {
  /** First failure of a container call; later samples measure the pod calls alone. */
  containerError?: string;
}

/**
 * One lifecycle sample: RunPodSandbox, CreateContainer, StartContainer, StopContainer,
 * RemoveContainer, StopPodSandbox, RemovePodSandbox. A pod-level failure is thrown; a container-level
 * one is kept in `state` and the remaining samples measure the pod calls without a container.
 */
export async function lifecycleSample(runtime: RuntimeClient, image: string, i: number, into: Recorder, state: LifecycleState, o: RunOptions): Promise<void> {
  const t = o.rpcTimeoutMs;
  const sandboxConfig = podConfig(`bench-${i}`, o.logDir, o.cgroupParent);
  const { podSandboxId } = await timed(into('RunPodSandbox'), 'RunPodSandbox', i, () => runtime.runPodSandbox({ config: sandboxConfig }, deadline(t)));
  try {
    if (state.containerError === undefined) {
      try {
        const { containerId } = await timed(into('CreateContainer'), 'CreateContainer', i, () =>
          runtime.createContainer({ podSandboxId, config: containerConfig('work', image), sandboxConfig }, deadline(t)),
        );
        await timed(into('StartContainer'), 'StartContainer', i, () => runtime.startContainer({ containerId }, deadline(t)));
        await timed(into('StopContainer'), 'StopContainer', i, () =>
          runtime.stopContainer({ containerId, timeout: BigInt(STOP_TIMEOUT_S) }, deadline(t + STOP_TIMEOUT_S * 1000)),
        );
        await timed(into('RemoveContainer'), 'RemoveContainer', i, () => runtime.removeContainer({ containerId }, deadline(t)));
      } catch (err) {
        state.containerError = err instanceof Error ? err.message : String(err);
      }
    }
  } finally {
    await timed(into('StopPodSandbox'), 'StopPodSandbox', i, () => runtime.stopPodSandbox({ podSandboxId }, deadline(t)));
    await timed(into('RemovePodSandbox'), 'RemovePodSandbox', i, () => runtime.removePodSandbox({ podSandboxId }, deadline(t)));
  }
}

/**
 * One image sample: PullImage of an image nothing else shares layers with, ListImages, RemoveImage
 * (so the next pull transfers and unpacks everything again).
 */
export async function imageSample(images: ImageClient, ref: string, i: number, into: Recorder, o: RunOptions): Promise<void> {
  const t = o.rpcTimeoutMs;
  await timed(into('PullImage'), 'PullImage', i, () => images.pullImage({ image: { image: ref } }, deadline(t)));
  const list = await timed(into('ListImages'), 'ListImages', i, () => images.listImages({}, deadline(t)));
  if (!list.images.some((img) => img.repoTags.includes(ref)))
    throw new OpError('ListImages', i, new Error(`${ref} is missing from ListImages right after pulling it`));
  await timed(into('RemoveImage'), 'RemoveImage', i, () => images.removeImage({ image: { image: ref } }, deadline(t)));
}

/** Stops and removes every pod the runtime has (bounded per call). */
export async function removeAllPods(runtime: RuntimeClient, timeoutMs = 30_000): Promise<void> {
  const { items } = await runtime.listPodSandbox({}, deadline(timeoutMs));
  for (const pod of items) {
    await runtime.stopPodSandbox({ podSandboxId: pod.id }, deadline(timeoutMs)).catch(() => {});
    await runtime.removePodSandbox({ podSandboxId: pod.id }, deadline(timeoutMs)).catch(() => {});
  }
}
