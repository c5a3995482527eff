// skiffd's own time per call, read from its debug log: each "rpc" line gives the time from the call
// reaching the daemon's middleware to its answer, so gRPC's decoding and encoding, HTTP/2 and the
// socket are outside it. Set beside the client's latency, it says how much of a call is the daemon's
// work and how much the way to it (on an emulated node, most of a cheap call).
import { referencePeer, type PeerName } from './peer.ts';
import type { BenchResult } from './result.ts';
import { ms, summarize, table, type Summary } from './stats.ts';
import type { Op } from './workload.ts';

const RPC_LINE = /\bmsg=rpc method=\S*\/(\w+) ms=([\d.]+)/g;

/** Every call's handler time in ms from a skiffd log (logfmt, level debug), by method name. */
export function handlerTimes(log: string): Map<string, number[]> {
  const byMethod = new Map<string, number[]>();
  for (const [, method, value] of log.matchAll(RPC_LINE)) {
    const times = byMethod.get(method) ?? [];
    times.push(Number(value));
    byMethod.set(method, times);
  }
  return byMethod;
}

/** p50 and p90 of the handler times of each measured call. */
export function summarizeHandlerTimes(log: string, ops: readonly Op[]): Partial<Record<Op, Summary>> {
  const times = handlerTimes(log);
  const out: Partial<Record<Op, Summary>> = {};
  for (const op of ops) {
    const samples = times.get(op);
    if (samples && samples.length > 0) out[op] = summarize(samples);
  }
  return out;
}

/** The table of client latency against handler time per skiffd peer; empty when no peer has handler times. */
export function formatHandlerTimes(result: BenchResult, ops: readonly Op[]): string[] {
  const names = (['skiffd', 'skiffd-cgroupfs'] as PeerName[]).filter((name) => result.peers[name]?.handlerMs);
  if (names.length === 0) return [];
  const reference = referencePeer(result.peers);
  const containerd = reference ? result.peers[reference] : undefined;
  const header = ['call'];
  for (const name of names) header.push(`${name} p50`, 'in handler p50', 'outside');
  if (containerd) header.push(`${reference === 'containerd2' ? 'containerd 2.1' : 'containerd 1.6'} p50`);
  const rows = ops.map((op) => {
    const row: string[] = [op];
    for (const name of names) {
      const client = result.peers[name]!.ops[op]?.p50;
      const handler = result.peers[name]!.handlerMs![op]?.p50;
      row.push(client === undefined ? '-' : ms(client), handler === undefined ? '-' : ms(handler));
      row.push(client === undefined || handler === undefined ? '-' : ms(client - handler));
    }
    if (containerd) {
      const p50 = containerd.ops[op]?.p50;
      row.push(p50 === undefined ? '-' : ms(p50));
    }
    return row;
  });
  return [
    '',
    "skiffd's handlers (--handler-times): p50 of every call of the method in skiffd's debug log, from the call",
    "reaching the daemon's middleware to its answer; outside = the client's p50 minus it (gRPC, HTTP/2, the socket;",
    'below zero where the two p50s cross, on calls whose time is almost all in the handler):',
    table(header, rows),
  ];
}
