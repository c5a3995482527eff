// Results: the per-call table with ratios and targets, and memory (the JSON shape of --json is result.ts).
import { mb } from './host.ts';
import { formatCritestTable } from './critest-bench.ts';
import { formatHandlerTimes } from './handler-times.ts';
import { referencePeer, type PeerName } from './peer.ts';
import type { BenchResult } from './result.ts';
import { ms, ratio, table, type Summary } from './stats.ts';
import { IMAGE_OPS, LIFECYCLE_OPS, type Op } from './workload.ts';

/** containerd 1.6.20 on this machine kind (critest benchmark, 50 samples), from the design note. */
export const CONTAINERD_ANCHOR: Partial<Record<Op, { p50: number; p90: number }>> = {
  CreateContainer: { p50: 11.4, p90: 30.4 },
  StartContainer: { p50: 72.1, p90: 108.9 },
  StopContainer: { p50: 60.0, p90: 90.5 },
  RemoveContainer: { p50: 3.4, p90: 11.8 },
  RunPodSandbox: { p50: 169, p90: 222 },
  StopPodSandbox: { p50: 168, p90: 224 },
  RemovePodSandbox: { p50: 27, p90: 38 },
  PullImage: { p50: 108, p90: 164 },
  ListImages: { p50: 0.24, p90: 0.36 },
};

/** skiffd/containerd ratio each call must stay at or below (RemoveImage is measured, not targeted). */
export const TARGET_RATIO: Partial<Record<Op, number>> = {
  RunPodSandbox: 0.5,
  CreateContainer: 1,
  StartContainer: 1,
  StopContainer: 1,
  RemoveContainer: 1,
  StopPodSandbox: 1,
  RemovePodSandbox: 1,
  PullImage: 1,
  ListImages: 1,
};

export const ALL_OPS: Op[] = [...LIFECYCLE_OPS, ...IMAGE_OPS];

/** A figure a ratio can rest on: samples taken, and nothing zero to divide by. */
const measured = (s: Summary | undefined): s is Summary => !!s && s.n > 0 && s.p50 > 0 && s.p90 > 0;

/** The systemd driver's cost over the cgroupfs driver's that each call must stay within. */
export const DRIVER_TARGET_RATIO = 1.2;

export function computeRatios(result: BenchResult): void {
  const s = result.peers.skiffd?.ops;
  const fs = result.peers['skiffd-cgroupfs']?.ops;
  if (s && fs) {
    result.driverRatios = {};
    for (const op of LIFECYCLE_OPS) {
      const a = s[op];
      const b = fs[op];
      if (!measured(a) || !measured(b)) continue;
      const r = { p50: a.p50 / b.p50, p90: a.p90 / b.p90 };
      result.driverRatios[op] = { ...r, target: DRIVER_TARGET_RATIO, met: r.p50 <= DRIVER_TARGET_RATIO };
    }
  }
  const reference = referencePeer(result.peers);
  const c = reference ? result.peers[reference]?.ops : undefined;
  if (!s || !c) return;
  result.reference = reference;
  for (const op of ALL_OPS) {
    const a = s[op];
    const b = c[op];
    if (!measured(a) || !measured(b)) continue;
    const target = TARGET_RATIO[op];
    const r = { p50: a.p50 / b.p50, p90: a.p90 / b.p90 };
    result.ratios[op] = { ...r, target, met: target === undefined ? undefined : r.p50 <= target && r.p90 <= target };
  }
}

/** How a peer is named in a table's header. */
export const peerLabel = (name: PeerName) => (name === 'containerd2' ? 'containerd 2.1' : name === 'containerd' ? 'containerd 1.6' : name);

export function formatText(result: BenchResult): string {
  // A runtime that failed midway shows how many samples its numbers rest on.
  const cell = (v: Summary | undefined, k: 'p50' | 'p90') => (v && v.n > 0 ? ms(v[k]) + (k === 'p50' && v.n < result.samples ? ` (n=${v.n})` : '') : '-');
  const s = result.peers.skiffd;
  const reference = referencePeer(result.peers);
  const c = reference ? result.peers[reference] : undefined;
  // Every containerd of the run, the reference first.
  const containerds = (['containerd2', 'containerd'] as const).filter((n) => result.peers[n]);
  const fs = result.peers['skiffd-cgroupfs'];
  const out: string[] = [];
  out.push(`CRI benchmark ${result.date}, ${result.samples} samples per call (+${result.warmup} warm-up), latency in ms`);
  out.push(
    `machine: ${result.machine.cpus} cpus (${result.machine.model}), kernel ${result.machine.kernel}, node ${result.machine.node}; ${result.machine.note}`,
  );
  for (const [name, p] of Object.entries(result.peers)) out.push(`${name}: ${p!.description}`);
  if (result.containerdNote) out.push(result.containerdNote);
  out.push('');
  const header = ['call'];
  if (s) header.push(fs ? 'skiffd (systemd) p50' : 'skiffd p50', 'p90');
  if (fs) header.push('skiffd (cgroupfs) p50', 'p90', 'systemd/cgroupfs p50');
  for (const n of containerds) header.push(`${peerLabel(n)} p50`, 'p90');
  if (s && c) header.push('ratio p50', 'p90');
  header.push('target', 'met', 'anchor p50', 'p90');
  const rows = ALL_OPS.map((op) => {
    const row: string[] = [op];
    if (s) row.push(cell(s.ops[op], 'p50'), cell(s.ops[op], 'p90'));
    if (fs) {
      const d = result.driverRatios?.[op];
      row.push(cell(fs.ops[op], 'p50'), cell(fs.ops[op], 'p90'), d ? `${ratio(d.p50, 1)}${d.met ? '' : ' (over 1.2x)'}` : '-');
    }
    for (const n of containerds) row.push(cell(result.peers[n]!.ops[op], 'p50'), cell(result.peers[n]!.ops[op], 'p90'));
    if (s && c) {
      const r = result.ratios[op];
      row.push(r ? ratio(r.p50, 1) : '-', r ? ratio(r.p90, 1) : '-');
    }
    const target = TARGET_RATIO[op];
    const anchor = CONTAINERD_ANCHOR[op];
    row.push(target === undefined ? '-' : `<= ${target}x`, s ? metCell(result, op) : '-', anchor ? ms(anchor.p50) : '-', anchor ? ms(anchor.p90) : '-');
    return row;
  });
  out.push(table(header, rows));
  out.push('');
  out.push(
    `target: skiffd/${reference ? peerLabel(reference) : 'containerd'} ratio (the ratio columns). met: skiffd p50 and p90 both at or below target x that containerd in this run;`,
  );
  out.push('  "*" where no containerd has a number in this run, so the containerd anchor (1.6.20, critest, design note) stands in.');
  if (fs) out.push(`systemd/cgroupfs: skiffd's p50 under the systemd driver over its p50 under cgroupfs, in this run (target <= ${DRIVER_TARGET_RATIO}x).`);
  out.push(...formatHandlerTimes(result, ALL_OPS));

  for (const [name, p] of Object.entries(result.peers)) {
    const m = p!.memory;
    if (!m) continue;
    out.push('');
    out.push(
      `${name} memory: idle daemon RSS ${mb(m.idle.rss)} (PSS ${mb(m.idle.pss)}, private ${mb(m.idle.priv)})` +
        (m.afterRun ? `; after the run ${mb(m.afterRun.rss)} RSS` : ''),
    );
    const pc = m.perContainer;
    if (pc) {
      const helper = name.startsWith('skiffd') ? 'conmon' : 'shim + pause';
      out.push(`  per running container (${pc.containers} pods x 1 container; ${pc.helpersBefore} -> ${pc.helpersAfter} ${helper} processes):`);
      out.push(`    ${helper}: RSS ${mb(pc.helpers.rss)}, PSS ${mb(pc.helpers.pss)}, private ${mb(pc.helpers.priv)}`);
      out.push(
        `    daemon growth: RSS ${mb(pc.daemon.rss)}, PSS ${mb(pc.daemon.pss)}, private ${mb(pc.daemon.priv)} (daemon ${mb(pc.daemonBefore.rss)} -> ${mb(pc.daemonAfter.rss)} RSS)`,
      );
      out.push(`    total: RSS ${mb(pc.total.rss)}, PSS ${mb(pc.total.pss)}, private ${mb(pc.total.priv)}`);
    }
  }
  if (result.critest) {
    out.push('');
    out.push(`critest -benchmark (cri-tools 1.36, the conformance kit's benchmark-params.yaml), ${result.critest.rounds} round(s) per runtime, latency in ms:`);
    if (Object.keys(result.critest.peers).length > 0) out.push(formatCritestTable(result.critest.peers));
    if (result.critest.note) out.push(result.critest.note);
  }
  for (const [name, p] of Object.entries(result.peers)) for (const e of p!.errors) out.push(`${name} error: ${e}`);
  return out.join('\n');
}

function metCell(result: BenchResult, op: Op): string {
  const target = TARGET_RATIO[op];
  if (target === undefined) return '-';
  const r = result.ratios[op];
  if (r) return r.met ? 'yes' : r.p50 <= target ? 'p50 only' : 'no';
  const s = result.peers.skiffd?.ops[op];
  const anchor = CONTAINERD_ANCHOR[op];
  if (!s || s.n === 0 || !anchor) return '-';
  const p50 = s.p50 <= target * anchor.p50;
  const p90 = s.p90 <= target * anchor.p90;
  return p50 && p90 ? 'yes*' : p50 ? 'p50 only*' : 'no*';
}
