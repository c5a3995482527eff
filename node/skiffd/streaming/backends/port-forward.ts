// Port forwarding into a pod's network namespace. Node cannot enter a namespace itself, so each
// forwarded connection runs a small relay there: `nsenter --net=<pod netns> busybox nc 127.0.0.1
// PORT`, joined to the client's data stream (stdin EOF half-closes the TCP connection). A pod on
// the host network is reached directly.
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import { keepDiagnostics } from './exec.ts';
import { TargetError, type PodSource } from './targets.ts';

export interface RelayCommands {
  nsenter: string;
  busybox: string;
}

export const DEFAULT_RELAY: RelayCommands = { nsenter: 'nsenter', busybox: 'busybox' };

export async function forwardIntoPod(
  pods: PodSource,
  podSandboxId: string,
  port: number,
  data: Duplex,
  signal: AbortSignal,
  relay: RelayCommands = DEFAULT_RELAY,
): Promise<void> {
  const pod = pods.get(podSandboxId);
  if (!pod) throw new TargetError(`pod sandbox "${podSandboxId}" not found`, 'not-found');
  if (pod.state !== 'SANDBOX_READY') throw new TargetError(`pod sandbox ${podSandboxId.slice(0, 12)} is not ready`, 'not-running');
  if (!pod.namespaces.net) return forwardOnHost(port, data, signal);

  const child = spawn(relay.nsenter, [`--net=${pod.namespaces.net}`, '--', relay.busybox, 'nc', '127.0.0.1', String(port)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const onAbort = () => child.kill('SIGKILL');
  signal.addEventListener('abort', onAbort, { once: true });
  let diagnostics = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (diagnostics = keepDiagnostics(diagnostics, d)));
  child.stdin.on('error', () => {});
  data.pipe(child.stdin);
  child.stdout.pipe(data, { end: false });
  // The client abandoning its side (reset) ends the relay.
  data.on('close', () => child.kill('SIGKILL'));
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('error', (err) => reject(new Error(`cannot start the port relay (${relay.nsenter}): ${err.message}`)));
      child.once('close', (code) => {
        if (code === 0 || signal.aborted) resolve();
        else reject(new Error(diagnostics.trim().replace(/^nc: /, '') || `relay exited with code ${code}`));
      });
    });
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

function forwardOnHost(port: number, data: Duplex, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const onAbort = () => socket.destroy();
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => {
      data.pipe(socket);
      socket.pipe(data, { end: false });
    });
    socket.once('error', (err) => reject(new Error(`can't connect to 127.0.0.1:${port}: ${err.message}`)));
    socket.once('close', () => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
    data.on('close', () => socket.destroy());
  });
}
