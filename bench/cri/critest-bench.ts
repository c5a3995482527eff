// critest's own benchmark (`critest -benchmark`, cri-tools 1.36) with the conformance kit's parameters,
// run against each peer in turn: the numbers a CRI runtime is compared by in the field. critest writes
// one JSON file per benchmark, each a list of samples with one duration per operation.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { critestPath, kitDir } from '../../test/support/cri-conformance.ts';
import { run } from './host.ts';
import { referencePeer, type PeerName } from './peer.ts';
import { ms, percentile, ratio, table } from './stats.ts';

/** critest's operation names, in the order the table shows them. */
export const CRITEST_OPS = [
  'CreatePod',
  'StatusPod',
  'StopPod',
  'RemovePod',
  'CreateContainer',
  'StartContainer',
  'StatusContainer',
  'StopContainer',
  'RemoveContainer',
  'PullImage',
  'StatusImage',
  'RemoveImage',
  'ListImages',
] as const;
export type CritestOp = (typeof CRITEST_OPS)[number];

/** skiffd's p50 over containerd's that each op must stay at or below: every call, status and list calls included. */
export const CRITEST_TARGETS: Partial<Record<CritestOp, number>> = Object.fromEntries(CRITEST_OPS.map((op) => [op, 1]));

export interface CritestSummary {
  n: number;
  p50: number;
  p99: number;
}

export type CritestSamples = Partial<Record<CritestOp, number[]>>;

export const paramsFile = join(kitDir, 'benchmark-params.yaml');

/** Runs `critest -benchmark` against the socket; every duration in ms, per operation. */
export async function critestBenchmark(socket: string, outDir: string, timeoutMs: number): Promise<CritestSamples> {
  mkdirSync(outDir, { recursive: true });
  await run(
    critestPath(),
    [
      `--runtime-endpoint=unix://${socket}`,
      `--image-endpoint=unix://${socket}`,
      '-benchmark',
      `--benchmarking-params-file=${paramsFile}`,
      `--benchmarking-output-dir=${outDir}`,
      '--ginkgo.no-color',
    ],
    timeoutMs,
  );
  const samples: CritestSamples = {};
  for (const file of readdirSync(outDir).filter((f) => f.endsWith('.json'))) {
    const data = JSON.parse(readFileSync(join(outDir, file), 'utf8')) as { operationsNames?: string[]; datapoints?: { operationsDurationsNs?: number[] }[] };
    const names = data.operationsNames ?? [];
    for (const point of data.datapoints ?? []) {
      names.forEach((name, i) => {
        const ns = point.operationsDurationsNs?.[i];
        // critest records 0 for an operation a sample did not reach.
        if (!ns || !(CRITEST_OPS as readonly string[]).includes(name)) return;
        (samples[name as CritestOp] ??= []).push(ns / 1e6);
      });
    }
  }
  if (Object.keys(samples).length === 0) throw new Error(`critest -benchmark wrote no samples to ${outDir}`);
  return samples;
}

export function summarizeCritest(samples: CritestSamples): Partial<Record<CritestOp, CritestSummary>> {
  const out: Partial<Record<CritestOp, CritestSummary>> = {};
  for (const op of CRITEST_OPS) {
    const values = samples[op];
    if (!values || values.length === 0) continue;
    const sorted = [...values].sort((a, b) => a - b);
    out[op] = { n: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
  }
  return out;
}

export function formatCritestTable(results: Partial<Record<PeerName, Partial<Record<CritestOp, CritestSummary>>>>): string {
  const s = results.skiffd;
  const reference = referencePeer(results);
  const c = reference ? results[reference] : undefined;
  const containerds = (['containerd2', 'containerd'] as const).filter((n) => results[n]);
  const header = ['operation'];
  if (s) header.push('skiffd p50', 'p99');
  for (const n of containerds) header.push(`${n === 'containerd2' ? 'containerd 2.1' : 'containerd 1.6'} p50`, 'p99');
  if (s && c) header.push('ratio p50', 'p99', 'target p50', 'met');
  const rows = CRITEST_OPS.filter((op) => s?.[op] || containerds.some((n) => results[n]?.[op])).map((op) => {
    const row: string[] = [op];
    if (s) row.push(s[op] ? ms(s[op]!.p50) : '-', s[op] ? ms(s[op]!.p99) : '-');
    for (const n of containerds) {
      const v = results[n]![op];
      row.push(v ? ms(v.p50) : '-', v ? ms(v.p99) : '-');
    }
    if (s && c) {
      const a = s[op];
      const b = c[op];
      const target = CRITEST_TARGETS[op];
      row.push(a && b ? ratio(a.p50, b.p50) : '-', a && b ? ratio(a.p99, b.p99) : '-', target === undefined ? '-' : `<= ${target}x`);
      row.push(target === undefined || !a || !b ? '-' : a.p50 <= target * b.p50 ? 'yes' : 'no');
    }
    return row;
  });
  return table(header, rows);
}
