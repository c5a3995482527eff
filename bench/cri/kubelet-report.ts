// The node-cost table: per pod count, skiffd against containerd, with the ratios and the targets.
import type { NodeCostResult } from './kubelet-node.ts';
import { table } from './stats.ts';

/** skiffd / containerd must stay at or below these. */
export const NODE_TARGETS = {
  readyS: 0.7,
  cpuTotal: 0.5,
  cpuDaemon: 1.0,
  pssTotal: 0.4,
  pssDaemon: 1.0,
} as const;

const pct = (v: number | undefined) => (v === undefined ? '-' : `${v.toFixed(1)} %`);
const mbs = (kb: number | undefined) => (kb === undefined ? '-' : `${(kb / 1024).toFixed(0)} MB`);
const sec = (s: number | undefined) => (s === undefined ? '-' : `${s.toFixed(1)} s`);

export function formatNodeCost(results: NodeCostResult[]): string {
  const out: string[] = [];
  for (const pods of [...new Set(results.map((r) => r.pods))]) {
    const s = results.find((r) => r.pods === pods && r.runtime === 'skiffd');
    const c = results.find((r) => r.pods === pods && r.runtime === 'containerd2') ?? results.find((r) => r.pods === pods && r.runtime === 'containerd');
    const rows: string[][] = [];
    const row = (what: string, get: (r: NodeCostResult) => number | undefined, fmt: (v: number | undefined) => string, target?: number) => {
      const a = s && get(s);
      const b = c && get(c);
      const r = a !== undefined && b !== undefined && b > 0 ? a / b : undefined;
      rows.push([
        what,
        fmt(a),
        fmt(b),
        r === undefined ? '-' : r.toFixed(2),
        target === undefined ? '-' : `<= ${target}`,
        target === undefined || r === undefined ? '-' : r <= target ? 'yes' : 'no',
      ]);
    };
    row('all pods Ready after the manifests appear', (r) => r.readyS, sec, NODE_TARGETS.readyS);
    row('  of which: all containers running', (r) => r.runningS, sec);
    row('runtime CPU, daemon', (r) => r.cpu?.daemon, pct, NODE_TARGETS.cpuDaemon);
    row('runtime CPU, helpers', (r) => r.cpu?.helpers, pct);
    row('runtime CPU, total', (r) => r.cpu?.total, pct, NODE_TARGETS.cpuTotal);
    row('PSS, daemon', (r) => r.pss?.daemon, mbs, NODE_TARGETS.pssDaemon);
    row('PSS, helpers', (r) => r.pss?.helpers, mbs);
    row('PSS, total', (r) => r.pss?.total, mbs, NODE_TARGETS.pssTotal);
    row('kubelet CPU (reference)', (r) => r.cpu?.kubelet, pct);
    out.push(`${pods} pods (CPU in % of one core over the steady window; PSS from smaps_rollup)`);
    out.push(table(['', 'skiffd', c?.runtime === 'containerd' ? 'containerd 1.6' : 'containerd 2.1', 'ratio', 'target', 'met'], rows));
    for (const r of [s, c]) {
      if (!r) continue;
      out.push(
        `  ${r.runtime}: ${r.description}; ${r.helperProcesses ?? '?'} helper processes; window ${r.windowS.toFixed(0)} s; ` +
          `restarts ${r.restarts ?? '?'}; load average ${r.loadAverage || '?'}`,
      );
      for (const e of r.errors) out.push(`  ${r.runtime} error: ${e}`);
    }
    out.push('');
  }
  out.push(
    'CPU is /proc ticks (user+system) of the daemon process; helpers are the per-container processes (conmon and catatonit;',
    "shim and pause), the daemon's long-lived children, and every command they or the daemon ran and reaped (runc exec).",
    'Ready time is wall clock on a shared machine and moves with its load; CPU time moves much less. A pod turns Ready',
    'at its readiness probe\'s first success after its container runs (every 2 s here): "containers running" is the',
    "runtime's own part, read from its ListContainers.",
  );
  return out.join('\n');
}
