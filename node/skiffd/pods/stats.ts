// Pod-level usage: CPU and memory of the pod's cgroup parent (v1, v2 or hybrid), their pressure and
// I/O pressure (v2), process count, and the interface counters of the pod's network namespace.
import { readFile, stat } from 'node:fs/promises';
import type { DeepPartial, NetworkInterfaceUsage, PodSandboxStats } from '../../../proto/gen/runtime/v1/api.ts';
import { CpuRate } from '../cgroups/cpu-rate.ts';
import { criIo, criPsi } from '../cgroups/cri-usage.ts';
import { readPressure } from '../cgroups/pressure.ts';
import { anyMemberPid, readCpu, readMemory, readProcessCount } from '../cgroups/stats.ts';
import { execCommand } from '../util/command.ts';
import type { PodEntry } from './record-file.ts';

export interface InterfaceCounters {
  name: string;
  rxBytes: bigint;
  rxPackets: bigint;
  rxErrors: bigint;
  rxDropped: bigint;
  txBytes: bigint;
  txPackets: bigint;
  txErrors: bigint;
  txDropped: bigint;
}

export function parseNetDev(text: string): InterfaceCounters[] {
  const out: InterfaceCounters[] = [];
  for (const line of text.split('\n').slice(2)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim();
    const f = line
      .slice(colon + 1)
      .trim()
      .split(/\s+/)
      .map((n) => BigInt(n));
    if (f.length < 16) continue;
    out.push({ name, rxBytes: f[0], rxPackets: f[1], rxErrors: f[2], rxDropped: f[3], txBytes: f[8], txPackets: f[9], txErrors: f[10], txDropped: f[11] });
  }
  return out;
}

/**
 * /proc/net/dev as seen from the pod's network namespace. Any process in that namespace shows its
 * view under /proc/PID/net, so a pod's own init or one of its containers' processes is read directly;
 * only a pod with no process running left falls back to entering the namespace, one spawn per pod.
 * A pod on the node's network has none of its own: undefined, never the host's counters.
 */
export async function podNetDev(pod: PodEntry): Promise<string | undefined> {
  if (!pod.namespaces.net) return undefined;
  const init = pod.internals.pidInit;
  if (init && pod.namespaces.pid) {
    const text = await readFile(`/proc/${init.pid}/net/dev`, 'utf8').catch(() => undefined);
    if (text) return text;
  }
  const member = await anyMemberPid(pod.cgroupParent).catch(() => undefined);
  if (member !== undefined) {
    const text = await readNetDevIfIn(member, pod.namespaces.net);
    if (text) return text;
  }
  const out = await execCommand('nsenter', [`--net=${pod.namespaces.net}`, '--', 'cat', '/proc/net/dev'], { timeoutMs: 5_000 }).catch(() => undefined);
  return out?.code === 0 ? out.stdout : undefined;
}

/** PID's /proc/net/dev, if PID is (still) in the network namespace pinned at `netns`. */
async function readNetDevIfIn(pid: number, netns: string): Promise<string | undefined> {
  try {
    const [want, have] = await Promise.all([stat(netns), stat(`/proc/${pid}/ns/net`)]);
    if (want.ino !== have.ino || want.dev !== have.dev) return undefined;
    const text = await readFile(`/proc/${pid}/net/dev`, 'utf8');
    // The process may have exited and its pid been reused between the check and the read.
    const again = await stat(`/proc/${pid}/ns/net`);
    return again.ino === want.ino && again.dev === want.dev ? text : undefined;
  } catch {
    return undefined;
  }
}

const usage = (c: InterfaceCounters): DeepPartial<NetworkInterfaceUsage> => ({
  name: c.name,
  rxBytes: { value: c.rxBytes },
  rxErrors: { value: c.rxErrors },
  txBytes: { value: c.txBytes },
  txErrors: { value: c.txErrors },
});

export class PodStatsCollector {
  readonly cpuRate = new CpuRate();

  forget(podId: string): void {
    this.cpuRate.forget(podId);
  }

  async collect(pod: PodEntry, now: () => bigint, ifname = 'eth0'): Promise<DeepPartial<PodSandboxStats>> {
    // The CPU reading is stamped as it arrives: a rate from stamps taken after the slowest read (the
    // network counters go through a helper) would count a late first stamp as a short interval.
    const [[cpu, at], memory, pressure, processes, netDev] = await Promise.all([
      readCpu(pod.cgroupParent).then((c) => [c, now()] as const),
      readMemory(pod.cgroupParent),
      readPressure(pod.cgroupParent),
      readProcessCount(pod.cgroupParent),
      podNetDev(pod),
    ]);
    const stats: DeepPartial<PodSandboxStats> = {
      attributes: { id: pod.id, metadata: { ...pod.metadata }, labels: pod.labels, annotations: pod.annotations },
      linux: { containers: [] },
    };
    const linux = stats.linux!;
    if (cpu) {
      const nanoCores = this.cpuRate.sample(pod.id, at, cpu.usageNs);
      linux.cpu = {
        timestamp: at,
        usageCoreNanoSeconds: { value: cpu.usageNs },
        ...(nanoCores !== undefined ? { usageNanoCores: { value: nanoCores } } : {}),
        psi: criPsi(pressure?.cpu),
      };
    }
    if (memory) {
      linux.memory = {
        timestamp: at,
        workingSetBytes: { value: memory.workingSetBytes },
        usageBytes: { value: memory.usageBytes },
        rssBytes: { value: memory.rssBytes },
        pageFaults: { value: memory.pageFaults },
        majorPageFaults: { value: memory.majorPageFaults },
        ...(memory.limitBytes !== undefined
          ? { availableBytes: { value: memory.limitBytes > memory.workingSetBytes ? memory.limitBytes - memory.workingSetBytes : 0n } }
          : {}),
        psi: criPsi(pressure?.memory),
      };
    }
    const io = criIo(pressure?.io, at);
    if (io) linux.io = io;
    if (processes !== undefined) linux.process = { timestamp: at, processCount: { value: processes } };
    if (netDev) {
      const counters = parseNetDev(netDev).filter((c) => c.name !== 'lo');
      const primary = counters.find((c) => c.name === ifname);
      linux.network = {
        timestamp: at,
        ...(primary ? { defaultInterface: usage(primary) } : {}),
        // Every interface, the default one included: the kubelet copies this list into the summary as it is,
        // where cAdvisor (its source for containerd's pods) lists them all.
        interfaces: counters.map(usage),
      };
    }
    return stats;
  }
}
