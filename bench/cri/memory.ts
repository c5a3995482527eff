// Memory a runtime costs: the daemon alone when idle, and what each running container adds to the
// daemon plus its helper processes (skiffd: conmon; containerd: shim and pause). Workload processes
// are not counted. PSS splits shared pages between the processes mapping them, so it is the fairest
// sum over many monitors; private is what would be freed if a process went away.
import { memoryOf, sumMemory, type Memory } from './host.ts';
import type { Peer } from './peer.ts';
import { containerConfig, podConfig, removeAllPods } from './workload.ts';

export interface PerContainer {
  containers: number;
  before: Memory;
  after: Memory;
  helpersBefore: number;
  helpersAfter: number;
  /** (after - before) / containers, kB */
  perContainer: Memory;
  /** The daemon's own share of that, kB per container. */
  daemonPerContainer: Memory;
}

export const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function idleMemory(peer: Peer, settleMs = 2000): Promise<Memory> {
  await settle(settleMs);
  return memoryOf(peer.daemonPid);
}

const minus = (a: Memory, b: Memory, n = 1): Memory => ({ rss: (a.rss - b.rss) / n, pss: (a.pss - b.pss) / n, priv: (a.priv - b.priv) / n });

/** N pods with one running container each (the common Kubernetes shape), measured against none. */
export async function perContainerMemory(peer: Peer, image: string, n: number, logDir: string, rpcTimeoutMs: number): Promise<PerContainer> {
  await removeAllPods(peer.runtime);
  await settle(2000);
  const helpersBefore = peer.helperPids();
  const daemonBefore = memoryOf(peer.daemonPid);
  const before = sumMemory([peer.daemonPid, ...helpersBefore]);
  const signal = () => ({ signal: AbortSignal.timeout(rpcTimeoutMs) });
  try {
    for (let i = 0; i < n; i++) {
      const sandboxConfig = podConfig(`mem-${i}`, logDir);
      const { podSandboxId } = await peer.runtime.runPodSandbox({ config: sandboxConfig }, signal());
      const { containerId } = await peer.runtime.createContainer({ podSandboxId, config: containerConfig('work', image), sandboxConfig }, signal());
      await peer.runtime.startContainer({ containerId }, signal());
    }
    await settle(3000);
    const helpersAfter = peer.helperPids();
    const daemonAfter = memoryOf(peer.daemonPid);
    const after = sumMemory([peer.daemonPid, ...helpersAfter]);
    return {
      containers: n,
      before,
      after,
      helpersBefore: helpersBefore.length,
      helpersAfter: helpersAfter.length,
      perContainer: minus(after, before, n),
      daemonPerContainer: minus(daemonAfter, daemonBefore, n),
    };
  } finally {
    await removeAllPods(peer.runtime);
  }
}
