// Memory a runtime costs: the daemon alone when idle, and what each running container adds to the
// daemon plus its helper processes (skiffd: conmon; containerd: shim and pause). Workload processes
// are not counted. PSS splits shared pages between the processes mapping them, so it is the fairest
// sum over many monitors; private is what would be freed if a process went away.
import { memoryOf, sumMemory, type Memory } from './host.ts';
import type { Peer } from './peer.ts';
import { cgroupParentFor, containerConfig, podConfig, removeAllPods } from './workload.ts';

export interface PerContainer {
  containers: number;
  helpersBefore: number;
  helpersAfter: number;
  daemonBefore: Memory;
  daemonAfter: Memory;
  /** Per container, kB: the helper processes' added memory. */
  helpers: Memory;
  /** Per container, kB: the daemon's growth (noisy for a garbage-collected daemon; may be negative). */
  daemon: Memory;
  /** helpers + daemon */
  total: Memory;
}

export const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** The median of a few readings, so one garbage-collection moment does not decide the figure. */
async function steady(pid: number, readings = 5, gapMs = 300): Promise<Memory> {
  const seen: Memory[] = [];
  for (let i = 0; i < readings; i++) {
    if (i > 0) await settle(gapMs);
    seen.push(memoryOf(pid));
  }
  return { rss: median(seen.map((m) => m.rss)), pss: median(seen.map((m) => m.pss)), priv: median(seen.map((m) => m.priv)) };
}

export async function idleMemory(peer: Peer, settleMs = 2000): Promise<Memory> {
  await settle(settleMs);
  return steady(peer.daemonPid);
}

const per = (a: Memory, b: Memory, n: number): Memory => ({ rss: (a.rss - b.rss) / n, pss: (a.pss - b.pss) / n, priv: (a.priv - b.priv) / n });
const plus = (a: Memory, b: Memory): Memory => ({ rss: a.rss + b.rss, pss: a.pss + b.pss, priv: a.priv + b.priv });

/** N pods with one running container each (the common Kubernetes shape), measured against none. */
export async function perContainerMemory(peer: Peer, image: string, n: number, logDir: string, rpcTimeoutMs: number): Promise<PerContainer> {
  await removeAllPods(peer.runtime);
  await settle(2000);
  const helpersBefore = peer.helperPids();
  const helperMemBefore = sumMemory(helpersBefore);
  const daemonBefore = await steady(peer.daemonPid);
  const signal = () => ({ signal: AbortSignal.timeout(rpcTimeoutMs) });
  try {
    for (let i = 0; i < n; i++) {
      const sandboxConfig = podConfig(`mem-${i}`, logDir, cgroupParentFor(peer.cgroupDriver));
      const { podSandboxId } = await peer.runtime.runPodSandbox({ config: sandboxConfig }, signal());
      const { containerId } = await peer.runtime.createContainer({ podSandboxId, config: containerConfig('work', image), sandboxConfig }, signal());
      await peer.runtime.startContainer({ containerId }, signal());
    }
    await settle(2000);
    const helpersAfter = peer.helperPids();
    const helperMemAfter = sumMemory(helpersAfter);
    const daemonAfter = await steady(peer.daemonPid);
    const helpers = per(helperMemAfter, helperMemBefore, n);
    const daemon = per(daemonAfter, daemonBefore, n);
    return {
      containers: n,
      helpersBefore: helpersBefore.length,
      helpersAfter: helpersAfter.length,
      daemonBefore,
      daemonAfter,
      helpers,
      daemon,
      total: plus(helpers, daemon),
    };
  } finally {
    await removeAllPods(peer.runtime);
  }
}
