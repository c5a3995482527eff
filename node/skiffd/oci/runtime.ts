// The one narrow seam between skiffd and an OCI runtime (runc, crun): everything the container
// subsystem asks of the runtime goes through this interface.
import type { OciFeatures } from './features.ts';
import type { OciProcess, OciResources, OciState } from './spec.ts';

export interface CreateOptions {
  id: string;
  /** Bundle directory holding config.json; conmon's pidfiles and ctl FIFO land here too. */
  bundle: string;
  /** CRI log file conmon writes (k8s-file format). */
  logPath: string;
  /** Directory where conmon writes `<id>` holding the exit code. */
  exitDir: string;
  /** Per-container directory where conmon writes `exit` and `oom`. */
  persistDir: string;
  /** Directory for attach sockets. */
  socketDir: string;
  tty?: boolean;
  stdin?: boolean;
  stdinOnce?: boolean;
  /** Upper bound for the whole create (conmon + runtime create). */
  timeoutMs?: number;
}

export interface CreateResult {
  /** PID of the container's init process (on the host). */
  pid: number;
  /** PID of the conmon monitor (after its double fork), when known. */
  conmonPid?: number;
  /** What the runtime warned about while it created the container (for the daemon's log). */
  runtimeWarnings?: string[];
}

export interface ExecSyncOptions {
  /** What runs: the container's process with the command in its args (exec-process.ts). */
  process: OciProcess;
  /** 0 or absent: no timeout. */
  timeoutMs?: number;
  /** Bytes kept of each of stdout and stderr; the rest is read and discarded. */
  maxOutputBytes?: number;
  /**
   * The container's cgroup (its record's cgroupsPath): a timeout signals the exec's process only when
   * it is in there. Absent: only the runtime is killed, after its grace period.
   */
  cgroupPath?: string;
}

export interface ExecSyncResult {
  exitCode: number;
  stdout: Buffer;
  stderr: Buffer;
  timedOut: boolean;
}

export interface OciRuntime {
  readonly name: string;
  readonly path: string;
  /** `--root` directory holding the runtime's own state. */
  readonly root: string;
  /** Global flags every call of the runtime carries besides --root (the cgroup driver's). */
  readonly globalFlags: readonly string[];
  /** Creates the container under a conmon monitor; the process waits for `start`. */
  create(options: CreateOptions): Promise<CreateResult>;
  start(id: string): Promise<void>;
  /** Sends a signal; `all` signals every process of the container. Missing or stopped containers are not an error. */
  kill(id: string, signal: number, all?: boolean): Promise<void>;
  /** Deletes runtime state (force kills a live container). Missing containers are not an error. */
  delete(id: string, force?: boolean): Promise<void>;
  /** The runtime's view, or undefined when it does not know the id. */
  state(id: string): Promise<OciState | undefined>;
  update(id: string, resources: OciResources): Promise<void>;
  /** Dumps a running container's processes with CRIU into `imagePath`, leaving them running. */
  checkpoint(id: string, imagePath: string, workPath: string): Promise<void>;
  execSync(id: string, options: ExecSyncOptions): Promise<ExecSyncResult>;
  /**
   * A fresh path for a file of an exec the streaming server runs (process, pid, log), in the runtime's
   * root-only directory beside its root. Throws when that directory is not root's alone.
   */
  execFile(suffix: string): string;
  /** What the runtime's own `features` command lists (asked once; again only if it could not run). */
  features(): Promise<OciFeatures>;
  /** Stops helper processes it keeps (running containers are not touched). */
  close?(): void;
}

export class OciRuntimeError extends Error {
  constructor(
    message: string,
    readonly stderr = '',
  ) {
    super(message);
    this.name = 'OciRuntimeError';
  }
}
