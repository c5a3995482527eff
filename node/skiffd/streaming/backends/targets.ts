// What the streaming backends need to know about containers and pods, read from the container
// and pod subsystems' records. A structural interface, so tests and the daemon hand in the same
// ContainerManager / pod store they already have.
import { join } from 'node:path';
import { ContainerState } from '../../../../proto/gen/runtime/v1/api.ts';
import type { OciProcess } from '../../oci/spec.ts';
import type { PodSandboxRecord } from '../../pods/types.ts';

/** The container subsystem as the streaming code reads it (node/skiffd/containers/manager.ts). */
export interface ContainerSource {
  readonly socketDir: string;
  /** The OCI runtime the container runs under (its pod's runtime handler). */
  runtimeOf(record: { id: string; runtime: string }): {
    readonly path: string;
    readonly root: string;
    readonly globalFlags: readonly string[];
    /** A fresh path in the runtime's root-only directory for an exec's file. */
    execFile(suffix: string): string;
  };
  status(id: string): Promise<{
    record: { id: string; tty: boolean; stdin: boolean; stdinOnce: boolean; runtime: string; cgroupsPath: string };
    state: ContainerState;
  }>;
  paths(id: string): { bundle: string };
  /** The container's OCI spec (config.json), whose process an exec starts from. */
  runtimeSpec(id: string): Promise<{ process?: OciProcess } | undefined>;
}

export interface PodSource {
  get(podId: string): PodSandboxRecord | undefined;
}

export interface ContainerTarget {
  id: string;
  running: boolean;
  tty: boolean;
  stdin: boolean;
  stdinOnce: boolean;
  /** conmon's resize FIFO. */
  ctlPath: string;
  /** conmon's SOCK_SEQPACKET attach socket. */
  attachPath: string;
  runtimePath: string;
  runtimeRoot: string;
  /** The runtime's global flags besides --root. */
  runtimeFlags: readonly string[];
}

/** A running container with its own process (user, environment, capabilities...), which an exec runs as. */
export interface ExecTarget extends ContainerTarget {
  /** Absent when the container's config.json cannot be read. */
  process: OciProcess | undefined;
  /**
   * A fresh path for one of the exec's files (process, pid, log), in the runtime's root-only directory:
   * in a shared one anybody could plant a pid file for the teardown to signal.
   */
  execFile(suffix: string): string;
  /** The container's cgroup as /proc/PID/cgroup shows it: a pid outside it is never signalled. */
  cgroupPath: string;
}

/** Raised for a container or pod that does not exist or cannot take a stream now. */
export class TargetError extends Error {
  constructor(
    message: string,
    readonly code: 'not-found' | 'not-running',
  ) {
    super(message);
    this.name = 'TargetError';
  }
}

export async function containerTarget(containers: ContainerSource, id: string): Promise<ContainerTarget> {
  return (await resolveTarget(containers, id)).target;
}

async function resolveTarget(containers: ContainerSource, id: string) {
  let view;
  try {
    view = await containers.status(id);
  } catch (err) {
    throw new TargetError((err as Error).message || `container "${id}" not found`, 'not-found');
  }
  const fullId = view.record.id;
  const runtime = containers.runtimeOf(view.record);
  const target: ContainerTarget = {
    id: fullId,
    running: view.state === ContainerState.CONTAINER_RUNNING,
    tty: view.record.tty,
    stdin: view.record.stdin,
    stdinOnce: view.record.stdinOnce,
    ctlPath: join(containers.paths(fullId).bundle, 'ctl'),
    attachPath: join(containers.socketDir, fullId, 'attach'),
    runtimePath: runtime.path,
    runtimeRoot: runtime.root,
    runtimeFlags: runtime.globalFlags,
  };
  return { target, runtime, cgroupPath: view.record.cgroupsPath };
}

function mustRun(target: ContainerTarget): ContainerTarget {
  if (!target.running) throw new TargetError(`container ${target.id.slice(0, 12)} is not running`, 'not-running');
  return target;
}

export async function runningContainer(containers: ContainerSource, id: string): Promise<ContainerTarget> {
  return mustRun(await containerTarget(containers, id));
}

/** Only an exec reads the container's spec; attach and the rest do not need it. */
export async function execTarget(containers: ContainerSource, id: string): Promise<ExecTarget> {
  const { target, runtime, cgroupPath } = await resolveTarget(containers, id);
  mustRun(target);
  return {
    ...target,
    process: (await containers.runtimeSpec(target.id))?.process,
    execFile: (suffix) => runtime.execFile(suffix),
    cgroupPath,
  };
}
