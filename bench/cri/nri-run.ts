// `npm run bench:cri -- --nri`: what NRI costs on the CRI path. skiffd and containerd 2.1 each run
// three ways at once: NRI off, NRI on with no plugin, and NRI on with containerd/nri's sample logger
// attached (the conformance kit's, the same binary and flags for both, connected as a user connects
// it). The six are driven through the same lifecycle workload, interleaved sample by sample with the
// order rotated, so they share the machine's background load.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { nriSamplePath, nriSamplesMissing, pluginSynchronized, runExternalPlugin, type RunningPlugin } from '../../test/support/nri.ts';
import type { BenchArgs } from './args.ts';
import { CONTAINERD2_HINT, containerdBinary, startContainerdPeer } from './containerd-peer.ts';
import { startImageRegistry } from './images.ts';
import type { Peer } from './peer.ts';
import { startSkiffdPeer } from './skiffd-peer.ts';
import { ms, ratio, summarize, table, type Summary } from './stats.ts';
import { LIFECYCLE_OPS, lifecycleSample, recorder, removeAllPods, type LifecycleState, type Op, type RunOptions, type Samples } from './workload.ts';

type Undo = { what: string; fn: () => Promise<void> };

export const NRI_VARIANTS = ['skiffd-nri-off', 'skiffd-nri-on', 'skiffd-logger', 'containerd2-nri-off', 'containerd2-nri-on', 'containerd2-logger'] as const;
export type NriVariant = (typeof NRI_VARIANTS)[number];

export interface NriVariantResult {
  description: string;
  ops: Partial<Record<Op, Summary>>;
  raw: Partial<Record<Op, number[]>>;
  errors: string[];
}

export interface NriResult {
  samples: number;
  warmup: number;
  /** The logger's command line (the same for both runtimes). */
  plugin: string;
  variants: Partial<Record<NriVariant, NriVariantResult>>;
}

/** The comparisons the part is for: [numerator, denominator, what it says]. */
export const NRI_RATIOS: [NriVariant, NriVariant, string][] = [
  ['skiffd-nri-on', 'skiffd-nri-off', 'skiffd: NRI on, no plugin / NRI off'],
  ['containerd2-nri-on', 'containerd2-nri-off', 'containerd 2.1: NRI on, no plugin / NRI off'],
  ['skiffd-logger', 'skiffd-nri-off', 'skiffd: logger attached / NRI off'],
  ['containerd2-logger', 'containerd2-nri-off', 'containerd 2.1: logger attached / NRI off'],
  ['skiffd-logger', 'containerd2-logger', 'logger attached: skiffd / containerd 2.1'],
];

interface Running {
  variant: NriVariant;
  peer: Peer;
  plugin?: RunningPlugin;
  samples: Samples;
  state: LifecycleState;
  options: RunOptions;
}

export async function runNriPart(
  args: BenchArgs,
  dir: string,
  undo: Undo[],
  say: (line: string) => void,
  stopping: () => boolean,
): Promise<{ results: NriResult; text: string }> {
  const missing = nriSamplesMissing() ?? (containerdBinary('2.1') ? undefined : `containerd 2.1 is not available: ${CONTAINERD2_HINT}`);
  if (missing) throw new Error(missing);
  say('starting a registry with the benchmark images');
  const images = await startImageRegistry();
  undo.push({ what: 'stopping the registry', fn: () => images.registry.stop() });

  const loggerArgs = (logFile: string) => [nriSamplePath('logger'), '-idx', '10', '-name', 'logger', '-log-file', logFile, '-add-env', 'NRI_BENCH'];
  const results: NriResult = { samples: args.samples, warmup: args.warmup, plugin: loggerArgs('FILE').join(' '), variants: {} };
  const running: Running[] = [];
  for (const variant of NRI_VARIANTS) {
    if (stopping()) break;
    const peerDir = join(dir, variant);
    const nriDir = join(peerDir, 'nri');
    mkdirSync(join(peerDir, 'logs'), { recursive: true });
    mkdirSync(nriDir, { recursive: true });
    const on = !variant.endsWith('-nri-off');
    say(`starting ${variant}`);
    const r: NriVariantResult = { description: '', ops: {}, raw: {}, errors: [] };
    results.variants[variant] = r;
    try {
      // Each NRI socket in the peer's own directory: never the node's /var/run/nri.
      const peer = variant.startsWith('skiffd')
        ? await startSkiffdPeer(peerDir, images.registry.host, args.skiffd, {
            extraConfig: on
              ? `[nri]\nsocket_path = ${JSON.stringify(join(nriDir, 'nri.sock'))}\nplugin_path = ${JSON.stringify(join(nriDir, 'plugins'))}\nplugin_config_path = ${JSON.stringify(join(nriDir, 'conf.d'))}\n`
              : '[nri]\ndisable = true\n',
          })
        : await startContainerdPeer(peerDir, images.registry.host, images.pause, {}, '2.1', {
            ...(on ? { nri: { socketPath: join(nriDir, 'nri.sock'), pluginPath: join(nriDir, 'plugins'), pluginConfigPath: join(nriDir, 'conf.d') } } : {}),
          });
      undo.push({ what: `tearing down ${variant}`, fn: () => peer.teardown() });
      const a: Running = {
        variant,
        peer,
        samples: {},
        state: {},
        options: { rpcTimeoutMs: args.rpcTimeoutMs, logDir: join(peerDir, 'logs') },
      };
      if (variant.endsWith('-logger')) {
        const logFile = join(peerDir, 'logger.log');
        const plugin = runExternalPlugin(nriDir, loggerArgs(logFile));
        // Before the daemon's teardown (pushed earlier, so undone later).
        undo.push({ what: `stopping ${variant}'s plugin`, fn: () => plugin.stop() });
        await pluginSynchronized(plugin, '10-logger', peer.logs, logFile);
        a.plugin = plugin;
      }
      r.description = `${peer.description}; NRI ${on ? 'on' : 'off'}${a.plugin ? ', logger attached' : on ? ', no plugin' : ''}`;
      say(`  ${r.description}, pid ${peer.daemonPid}`);
      // Pulled once, untimed: the workload image, and containerd's sandbox image.
      await peer.images.pullImage({ image: { image: images.workload } }, { signal: AbortSignal.timeout(args.rpcTimeoutMs) });
      if (variant.startsWith('containerd')) await peer.images.pullImage({ image: { image: images.pause } }, { signal: AbortSignal.timeout(args.rpcTimeoutMs) });
      running.push(a);
    } catch (err) {
      r.errors.push(`start: ${(err as Error).message}`);
      say(`  ${variant} did not start: ${(err as Error).message}`);
    }
  }

  let active = running;
  const total = args.warmup + args.samples;
  say(`lifecycle: ${active.map((a) => a.variant).join(', ')}; ${args.warmup} + ${args.samples} samples`);
  for (let i = 0; i < total && !stopping(); i++) {
    // Rotated by one each sample, so every variant takes every place in the order.
    const order = active.map((_, k) => active[(k + i) % active.length]!);
    for (const a of order) {
      try {
        await lifecycleSample(a.peer.runtime, images.workload, i, recorder(a.samples, i >= args.warmup), a.state, a.options);
      } catch (err) {
        if (stopping()) break;
        results.variants[a.variant]!.errors.push((err as Error).message);
        await removeAllPods(a.peer.runtime).catch(() => {});
        active = active.filter((x) => x !== a);
      }
    }
    if ((i + 1) % 10 === 0 || i + 1 === total) say(`  lifecycle: ${i + 1}/${total}`);
  }
  for (const a of running) {
    const r = results.variants[a.variant]!;
    if (a.state.containerError) r.errors.push(`container calls stopped at: ${a.state.containerError}`);
    // A plugin gone midway would leave the numbers of a runtime without it.
    if (a.plugin && a.plugin.child.exitCode !== null) r.errors.push(`the logger exited during the run: ${a.plugin.output().slice(-500)}`);
    for (const [op, values] of Object.entries(a.samples)) {
      if (!values || values.length === 0) continue;
      r.ops[op as Op] = summarize(values);
      r.raw[op as Op] = values.map((v) => Math.round(v * 1000) / 1000);
    }
  }
  return { results, text: formatNri(results) };
}

export function formatNri(results: NriResult): string {
  const v = results.variants;
  const out: string[] = [];
  out.push(`NRI on the CRI path: ${results.samples} lifecycle samples per variant (+${results.warmup} warm-up), latency p50 / p90 in ms`);
  out.push(`plugin: ${results.plugin}`);
  for (const name of NRI_VARIANTS) if (v[name]) out.push(`${name}: ${v[name]!.description || 'did not start'}`);
  out.push('');
  const present = NRI_VARIANTS.filter((n) => v[n] && Object.keys(v[n]!.ops).length > 0);
  const cell = (s: Summary | undefined) => (s ? `${ms(s.p50)} / ${ms(s.p90)}` : '-');
  out.push(
    table(
      ['call', ...present],
      LIFECYCLE_OPS.map((op) => [op, ...present.map((n) => cell(v[n]!.ops[op]))]),
    ),
  );
  out.push('');
  out.push('ratios of p50 (p90):');
  const rows = LIFECYCLE_OPS.map((op) => [
    op,
    ...NRI_RATIOS.map(([a, b]) => {
      const x = v[a]?.ops[op];
      const y = v[b]?.ops[op];
      return x && y ? `${ratio(x.p50, y.p50)} (${ratio(x.p90, y.p90)})` : '-';
    }),
  ]);
  out.push(table(['call', ...NRI_RATIOS.map((_, i) => `r${i + 1}`)], rows));
  for (const [i, [, , what]] of NRI_RATIOS.entries()) out.push(`  r${i + 1}: ${what}`);
  for (const name of NRI_VARIANTS) for (const e of v[name]?.errors ?? []) out.push(`${name} error: ${e}`);
  return out.join('\n');
}
