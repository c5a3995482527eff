// The shape of a bench:cri run's results (and of --json), shared by the run, its report and its parts.
import type { CritestOp, CritestSummary } from './critest-bench.ts';
import type { Memory } from './host.ts';
import type { PerContainer } from './memory.ts';
import type { PeerName } from './peer.ts';
import type { Summary } from './stats.ts';
import type { Op } from './workload.ts';

export interface PeerResult {
  description: string;
  ops: Partial<Record<Op, Summary>>;
  /** Every measured sample in ms, in the order taken (for --json consumers). */
  raw: Partial<Record<Op, number[]>>;
  errors: string[];
  memory?: { idle: Memory; afterRun?: Memory; perContainer?: PerContainer };
  /** skiffd's time in its handlers per call (--handler-times), from its debug log. */
  handlerMs?: Partial<Record<Op, Summary>>;
}

export interface BenchResult {
  date: string;
  command: string;
  machine: { cpus: number; model: string; kernel: string; node: string; note: string };
  samples: number;
  warmup: number;
  pullImageBytes?: number;
  peers: Partial<Record<PeerName, PeerResult>>;
  /** The containerd the ratios are to: 2.1 when the run had it, else 1.6. */
  reference?: PeerName;
  /** skiffd/that containerd per call, from this run. */
  ratios: Partial<Record<Op, { p50: number; p90: number; target?: number; met?: boolean }>>;
  /** skiffd's systemd driver over its cgroupfs driver per call (--drivers). */
  driverRatios?: Partial<Record<Op, { p50: number; p90: number; target: number; met: boolean }>>;
  containerdNote?: string;
  /** critest -benchmark per runtime, all rounds pooled. */
  critest?: { rounds: number; peers: Partial<Record<PeerName, Partial<Record<CritestOp, CritestSummary>>>>; note?: string };
}
