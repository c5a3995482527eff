// OciRuntime over the runc command line (crun speaks the same CLI for everything used here).
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { createWithConmon, cleanRuntimeMessage, readPid } from './conmon.ts';
import { ExecHelper, removeQuietly } from './exec-helper.ts';
import { mkdirSync, readFileSync } from 'node:fs';
import { execPidSignallable } from './exec-pid.ts';
import { writeProcessFile } from './exec-process.ts';
import { runCommand } from '../util/command.ts';
import { killGroup } from '../util/kill-group.ts';
import { ociFeatures, type OciFeatures } from './features.ts';
import type { CreateOptions, CreateResult, ExecSyncOptions, ExecSyncResult, OciRuntime } from './runtime.ts';
import { OciRuntimeError } from './runtime.ts';
import type { OciResources, OciState } from './spec.ts';

export interface CliRuntimeOptions {
  /** Short name: 'runc' or 'crun'. */
  name?: string;
  /** Runtime binary (config `[runtime] runtime_path`). */
  path: string;
  /** `--root` for the runtime's state, under skiffd's state dir. */
  root: string;
  conmonPath?: string;
  /** Bound on each runtime command. */
  commandTimeoutMs?: number;
  /** Global flags for every runtime call, e.g. `--systemd-cgroup`. */
  globalFlags?: readonly string[];
  /** Flags for conmon. */
  conmonFlags?: readonly string[];
}

const DEFAULT_MAX_OUTPUT = 16 * 1024 * 1024;
/** After a timed-out exec's process is killed, how long the runtime has to reap it and exit. */
const EXEC_REAP_GRACE_MS = 2_000;
const MISSING = /does not exist|not found|no such file/i;
/**
 * A kill's failure that means the container is already gone, which is what a stop races with. ENODEV
 * on its cgroup files counts too: under the systemd cgroup driver systemd removes a scope's cgroup as
 * soon as its last process exits.
 */
export function killFoundNothing(message: string): boolean {
  return (
    MISSING.test(message) || /cgroup\.[a-z_.]+: no such device/i.test(message) || /not running|process already finished|container not running/i.test(message)
  );
}

export class CliOciRuntime implements OciRuntime {
  readonly name: string;
  readonly path: string;
  readonly root: string;
  readonly globalFlags: readonly string[];
  private readonly conmonFlags: readonly string[];
  private readonly conmonPath: string;
  private readonly timeoutMs: number;
  /** Runs `exec` for ExecSync without forking the daemon (see exec-helper.ts). */
  private readonly execHelper: ExecHelper;

  constructor(options: CliRuntimeOptions) {
    this.name = options.name ?? 'runc';
    this.path = options.path;
    this.root = options.root;
    this.globalFlags = options.globalFlags ?? [];
    this.conmonFlags = options.conmonFlags ?? [];
    this.conmonPath = options.conmonPath ?? 'conmon';
    this.timeoutMs = options.commandTimeoutMs ?? 30_000;
    mkdirSync(this.root, { recursive: true, mode: 0o700 });
    // Beside the runtime's root, not in it: the runtime takes every directory there for a container.
    this.execHelper = new ExecHelper(`${this.root}-exec`);
    try {
      // At start-up, so the files of execs a crash cut short go now.
      this.execHelper.prepare();
    } catch {
      /* a directory that is not ours: every exec fails with the reason, the daemon runs on */
    }
  }

  execFile(suffix: string): string {
    return this.execHelper.file(suffix);
  }

  close(): void {
    this.execHelper.close();
  }

  private async run(args: string[], input?: string): Promise<{ ok: boolean; stdout: string; message: string }> {
    const result = await runCommand(this.path, [`--root=${this.root}`, ...this.globalFlags, ...args], { timeoutMs: this.timeoutMs, input });
    return { ok: result.code === 0, stdout: result.stdout, message: cleanRuntimeMessage(result.stderr || result.stdout) };
  }

  create(options: CreateOptions): Promise<CreateResult> {
    return createWithConmon(
      { conmonPath: this.conmonPath, runtimePath: this.path, runtimeRoot: this.root, runtimeFlags: this.globalFlags, conmonFlags: this.conmonFlags },
      options,
    );
  }

  async start(id: string): Promise<void> {
    const r = await this.run(['start', id]);
    if (!r.ok) throw new OciRuntimeError(`${this.name} start ${id}: ${r.message}`);
  }

  features(): Promise<OciFeatures> {
    return ociFeatures(this.path);
  }

  async kill(id: string, signal: number, all = false): Promise<void> {
    const r = await this.run(['kill', ...(all ? ['--all'] : []), id, String(signal)]);
    if (r.ok) return;
    if (killFoundNothing(r.message)) return;
    throw new OciRuntimeError(`${this.name} kill ${id} ${signal}: ${r.message}`);
  }

  async delete(id: string, force = false): Promise<void> {
    const r = await this.run(['delete', ...(force ? ['--force'] : []), id]);
    if (r.ok || MISSING.test(r.message)) return;
    throw new OciRuntimeError(`${this.name} delete ${id}: ${r.message}`);
  }

  async state(id: string): Promise<OciState | undefined> {
    const r = await this.run(['state', id]);
    if (!r.ok) {
      if (MISSING.test(r.message)) return undefined;
      throw new OciRuntimeError(`${this.name} state ${id}: ${r.message}`);
    }
    return JSON.parse(r.stdout) as OciState;
  }

  async checkpoint(id: string, imagePath: string, workPath: string): Promise<void> {
    const r = await this.run(['checkpoint', '--image-path', imagePath, '--work-path', workPath, '--leave-running', id]);
    if (!r.ok) throw new OciRuntimeError(`${this.name} checkpoint ${id}: ${r.message}`);
  }

  async update(id: string, resources: OciResources): Promise<void> {
    const r = await this.run(['update', '--resources', '-', id], JSON.stringify(resources));
    if (!r.ok) throw new OciRuntimeError(`${this.name} update ${id}: ${r.message}`);
  }

  /**
   * `runc exec` with pipes. The runtime setsid()s the exec'd process; on timeout we kill that process
   * group (its pid comes from --pid-file) and let the runtime reap it and exit. Killing the runtime
   * first would orphan the process to the container's init, which need not reap it: it would linger
   * as a zombie that `pgrep` and `ps` inside the container still show.
   */
  async execSync(id: string, options: ExecSyncOptions): Promise<ExecSyncResult> {
    const max = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
    // The command travels in the process file: only paths are on the runtime's command line. Both
    // files live in the helper's directory on the state dir and go with one unlink each.
    const processFile = this.execHelper.file('process.json');
    const pidFile = this.execHelper.file('pid');
    await writeProcessFile(processFile, options.process);
    const args = [`--root=${this.root}`, ...this.globalFlags, 'exec', '--pid-file', pidFile, '--process', processFile, id];
    try {
      const cgroupPath = options.cgroupPath ?? '';
      if (ExecHelper.canRun(this.path, args)) return await this.execThroughHelper(args, pidFile, max, options.timeoutMs, cgroupPath);
      return await this.execSpawned(args, pidFile, max, options.timeoutMs, cgroupPath);
    } finally {
      removeQuietly(processFile);
    }
  }

  /** Output goes to pipes and at most `max` of each is kept in memory: nothing reaches the disk. */
  private execSpawned(args: string[], pidFile: string, max: number, timeoutMs: number | undefined, cgroupPath: string): Promise<ExecSyncResult> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.path, args, {
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      const out = new BoundedBuffer(max);
      const err = new BoundedBuffer(max);
      child.stdout!.on('data', (d: Buffer) => out.push(d));
      child.stderr!.on('data', (d: Buffer) => err.push(d));
      const deadline = execDeadline(
        pidFile,
        timeoutMs,
        cgroupPath,
        () => child.pid,
        () => child.exitCode === null && child.signalCode === null,
      );
      const done = () => {
        deadline.end();
        removeQuietly(pidFile);
      };
      child.on('error', (e) => {
        done();
        reject(new OciRuntimeError(`cannot run ${this.path}: ${e.message}`));
      });
      child.on('close', (code, signal) => {
        done();
        const exitCode = code ?? 128 + (signal ? signalNumber(signal) : 0);
        resolve({ exitCode, stdout: out.value(), stderr: err.value(), timedOut: deadline.timedOut });
      });
    });
  }

  /** The same exec through the exec helper: same timeout handling, no fork of the daemon. */
  private async execThroughHelper(args: string[], pidFile: string, max: number, timeoutMs: number | undefined, cgroupPath: string): Promise<ExecSyncResult> {
    let runtimePid = 0;
    const deadline = execDeadline(
      pidFile,
      timeoutMs,
      cgroupPath,
      () => runtimePid,
      () => runtimePid > 0 && living(runtimePid),
    );
    try {
      const r = await this.execHelper.run(this.path, args, max, (pid) => (runtimePid = pid));
      return { exitCode: r.status, stdout: r.stdout, stderr: r.stderr, timedOut: deadline.timedOut };
    } catch (err) {
      throw new OciRuntimeError(`cannot run ${this.path}: ${(err as Error).message}`);
    } finally {
      deadline.end();
      removeQuietly(pidFile);
    }
  }
}

/**
 * An ExecSync timeout: when it fires, the exec'd process group (its pid from the runtime's --pid-file,
 * which a very short timeout can beat) is killed so the runtime reaps it and exits; a runtime that
 * still has not exited after the grace period is killed too. `end()` once the runtime has exited.
 * The exec's pid is signalled only while the runtime lives (it reaps that process, so until it exits
 * the pid cannot have gone to another process; `runtimeAlive` is asked synchronously just before the
 * kill) and only when the process is in the container's cgroup (the pid file is the runtime's word).
 */
function execDeadline(pidFile: string, timeoutMs: number | undefined, cgroupPath: string, runtimePid: () => number | undefined, runtimeAlive: () => boolean) {
  let timedOut = false;
  let closed = false;
  const timers: NodeJS.Timeout[] = [];
  if (timeoutMs && timeoutMs > 0) {
    timers.push(
      setTimeout(() => {
        timedOut = true;
        void (async () => {
          const giveUp = Date.now() + EXEC_REAP_GRACE_MS;
          let pid = await readPid(pidFile);
          while (!pid && !closed && Date.now() < giveUp) {
            await sleep(5);
            pid = await readPid(pidFile);
          }
          if (closed || !(await execPidSignallable(pid, cgroupPath))) return;
          if (!closed && runtimeAlive()) killGroup(pid!);
        })();
        timers.push(
          setTimeout(() => {
            const pid = runtimePid();
            if (pid && !closed) killGroup(pid);
          }, EXEC_REAP_GRACE_MS),
        );
      }, timeoutMs),
    );
  }
  return {
    get timedOut() {
      return timedOut;
    },
    end() {
      closed = true;
      for (const t of timers) clearTimeout(t);
    },
  };
}

/**
 * Whether a process is there and has not exited (a zombie has: the runtime's exec'd process is reaped
 * by then). Through the helper the runtime is not our child, so its exit is read from /proc.
 */
function living(pid: number): boolean {
  try {
    // "pid (comm) S ...": the state follows the last ")" (comm may hold one).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X' && state !== '';
  } catch {
    return false;
  }
}

function signalNumber(name: NodeJS.Signals): number {
  return (constants.signals as Record<string, number>)[name] ?? 0;
}

/** Keeps the first `max` bytes, counts (and drops) the rest. */
class BoundedBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  constructor(private readonly max: number) {}
  push(chunk: Buffer): void {
    const room = this.max - this.size;
    if (room <= 0) return;
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(kept);
    this.size += kept.length;
  }
  value(): Buffer {
    return Buffer.concat(this.chunks);
  }
}
