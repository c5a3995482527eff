// NRI plugins in tests: the kit's sample plugins (containerd/nri v0.8.0's, built on its Go stub) run as
// a user runs them, connecting to /var/run/nri/nri.sock; each in a mount namespace of its own where
// /run/nri is the runtime's private socket directory, so runtimes side by side (and parallel test
// files) each get their own plugins and nothing touches the node's /run/nri.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { kitDir } from './cri-conformance.ts';
import { until } from './wait.ts';

export const NRI_SAMPLES = ['logger', 'ulimit-adjuster', 'device-injector'] as const;
export type NriSample = (typeof NRI_SAMPLES)[number];

export function nriSamplePath(name: NriSample): string {
  return join(kitDir, 'bin', 'nri', name);
}

/** Why the kit's sample plugins cannot run here, or undefined. */
export function nriSamplesMissing(): string | undefined {
  const missing = NRI_SAMPLES.filter((n) => !existsSync(nriSamplePath(n)));
  return missing.length > 0 ? `the conformance kit has no NRI sample plugins (${missing.join(', ')}) under ${join(kitDir, 'bin', 'nri')}` : undefined;
}

export interface RunningPlugin {
  child: ChildProcess;
  /** What the plugin wrote to stderr (its log, unless it logs to a file). */
  output(): string;
  /** SIGTERM, then SIGKILL; bounded. */
  stop(): Promise<void>;
}

/**
 * Runs `argv` so that it finds the NRI socket of `socketDir` at the default /var/run/nri/nri.sock.
 * `socketDir` must be the directory of the runtime's [nri] socket_path, named nri.sock.
 */
export function runExternalPlugin(socketDir: string, argv: string[]): RunningPlugin {
  // The mount point (empty) on the node; the plugin's own namespace mounts over it.
  if (!existsSync('/run/nri')) mkdirSync('/run/nri', { mode: 0o700 });
  const child = spawn('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', 'mount --bind "$0" /run/nri && exec "$@"', socketDir, ...argv], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.once('exit', () => child.kill('SIGKILL'));
  return {
    child,
    output: () => out,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Waits (bounded) until the runtime says it synchronized the plugin (`fullName`, e.g. 10-logger) and
 * put it among the plugins it calls: containerd and skiffd both log "connected and synchronized".
 * (The plugin's own "Started plugin" comes earlier, before the runtime synchronizes it.)
 */
export async function pluginSynchronized(plugin: RunningPlugin, fullName: string, runtimeLogs: () => string, logFile?: string): Promise<void> {
  const synced = new RegExp(`${fullName}[^\n]*connected and synchronized|connected and synchronized[^\n]*plugin=${fullName}`);
  await until(
    `NRI plugin ${fullName} to be synchronized`,
    () => {
      if (plugin.child.exitCode !== null) {
        const text = plugin.output() + (logFile && existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
        const runtime = runtimeLogs()
          .split('\n')
          .filter((l) => /nri|plugin/i.test(l))
          .slice(-15)
          .join('\n');
        throw new Error(`plugin ${fullName} exited (${plugin.child.exitCode}):\n${text}\nthe runtime's last NRI log lines:\n${runtime}`);
      }
      return synced.test(runtimeLogs());
    },
    30_000,
  );
}

/**
 * The events a logger plugin logged, in order: each dump begins with `<Event>: pod:` (or
 * `Synchronize: pods:`), followed by the object's YAML. Returned with the names it saw.
 */
export function loggerEvents(logText: string): { event: string; pod?: string; container?: string }[] {
  const lines = logText.split('\n').map((l) => /msg="(.*)"$/.exec(l)?.[1] ?? '');
  const events: { event: string; pod?: string; container?: string }[] = [];
  let current: { event: string; pod?: string; container?: string; section?: string } | undefined;
  for (const line of lines) {
    const head = /^(\w+): (pod|pods|container|containers|resources):$/.exec(line);
    if (head) {
      // A dump opens with its pod (or pods); the container and resources of the same event follow.
      if (head[2] === 'pod' || head[2] === 'pods') {
        current = { event: head[1], section: head[2] };
        events.push(current);
      } else if (current) current.section = head[2];
      continue;
    }
    // Top-level fields of the dumped object are indented by exactly four spaces.
    const field = /^(\w+): {4}name: (.*)$/.exec(line);
    if (field && current && field[1] === current.event) {
      if (current.section === 'pod' && current.pod === undefined) current.pod = field[2];
      if (current.section === 'container' && current.container === undefined) current.container = field[2];
    }
  }
  return events.map(({ event, pod, container }) => ({ event, ...(pod !== undefined ? { pod } : {}), ...(container !== undefined ? { container } : {}) }));
}
