// `npm run bench:cri`: CRI latency of skiffd against containerd, plus skiffd's memory. See --help.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { HELP, parseArgs, type BenchArgs } from './args.ts';
import { CONTAINERD_INSTALL_HINT, CONTAINERD2_HINT, containerdBinary, startContainerdPeer } from './containerd-peer.ts';
import { memoryOf, mountsUnder } from './host.ts';
import { startImageRegistry, type BenchImages } from './images.ts';
import { idleMemory, perContainerMemory } from './memory.ts';
import { CONTAINERD_RELEASE, type Peer, type PeerName } from './peer.ts';
import { ALL_OPS, computeRatios, formatText } from './report.ts';
import type { BenchResult, PeerResult } from './result.ts';
import { startSkiffdPeer } from './skiffd-peer.ts';
import { summarizeHandlerTimes } from './handler-times.ts';
import { runKubeletPart } from './kubelet-run.ts';
import { runClusterPart } from './cluster-run.ts';
import { runNriPart } from './nri-run.ts';
import { critestBenchmark, summarizeCritest, type CritestSamples } from './critest-bench.ts';
import { kitMissing, startKitRegistry, type KitRegistry } from '../../test/support/cri-conformance.ts';
import { freePort } from '../../test/support/netns.ts';
import { summarize } from './stats.ts';
import {
  BENCH_SLICE,
  cgroupParentFor,
  imageSample,
  lifecycleSample,
  recorder,
  removeAllPods,
  type LifecycleState,
  type Op,
  type RunOptions,
  type Samples,
} from './workload.ts';
import { systemdBooted } from '../../node/skiffd/cgroups/driver.ts';
import { run } from './host.ts';

/** Stops a unit (the benchmark's pod slices), bounded; one that is not loaded is fine. */
const stopUnit = (unit: string) => run('systemctl', ['stop', unit], 30_000).then(() => {});

const say = (line: string) => process.stderr.write(`${line}\n`);

/** Set on Ctrl-C, SIGTERM or --timeout: the run stops at the next sample and prints nothing more. */
let stopping = false;

/** Everything that must be undone, newest first; run once, on success, error, signal or timeout. */
const undo: { what: string; fn: () => Promise<void> }[] = [];
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    while (undo.length > 0) {
      const step = undo.pop()!;
      await Promise.race([
        step.fn().catch((err) => say(`cleanup: ${step.what}: ${(err as Error).message}`)),
        new Promise<void>((r) =>
          setTimeout(() => {
            say(`cleanup: ${step.what} took over 60 s; moving on`);
            r();
          }, 60_000).unref(),
        ),
      ]);
    }
  })();
  return cleaning;
}

interface Active {
  peer: Peer;
  result: PeerResult;
  samples: Samples;
  state: LifecycleState;
  options: RunOptions;
}

function fail(peer: Peer, result: PeerResult, phase: string, err: unknown): void {
  const message = err instanceof Error ? err.message : String(err);
  result.errors.push(`${phase}: ${message}`);
  say(`  ${peer.name} ${phase} failed: ${message}`);
}

/**
 * Runs one phase with the runtimes interleaved sample by sample (and the order flipped every
 * sample), so on a shared, noisy machine both see the same background load.
 */
async function interleaved(
  phase: 'images' | 'lifecycle',
  peers: Peer[],
  results: BenchResult['peers'],
  images: BenchImages,
  args: BenchArgs,
  dir: string,
): Promise<void> {
  const started: Active[] = [];
  for (const peer of peers) {
    const a: Active = {
      peer,
      result: results[peer.name]!,
      samples: {},
      state: {},
      options: { rpcTimeoutMs: args.rpcTimeoutMs, logDir: join(dir, peer.name, 'logs'), cgroupParent: cgroupParentFor(peer.cgroupDriver) },
    };
    const signal = () => ({ signal: AbortSignal.timeout(args.rpcTimeoutMs) });
    try {
      if (phase === 'images') {
        await peer.images.removeImage({ image: { image: images.pull } }, signal()).catch(() => {});
      } else {
        // Pulled once, untimed: the workload image, and containerd's sandbox image.
        await peer.images.pullImage({ image: { image: images.workload } }, signal());
        if (CONTAINERD_RELEASE[peer.name]) await peer.images.pullImage({ image: { image: images.pause } }, signal());
      }
      started.push(a);
    } catch (err) {
      fail(a.peer, a.result, phase, err);
    }
  }
  let active = started;
  const total = args.warmup + args.samples;
  for (let i = 0; i < total && !stopping; i++) {
    const order = i % 2 === 0 ? active : [...active].reverse();
    for (const a of order) {
      const into = recorder(a.samples, i >= args.warmup);
      try {
        if (phase === 'images') await imageSample(a.peer.images, images.pull, i, into, a.options);
        else await lifecycleSample(a.peer.runtime, images.workload, i, into, a.state, a.options);
      } catch (err) {
        if (stopping) return;
        fail(a.peer, a.result, phase, err);
        await removeAllPods(a.peer.runtime).catch(() => {});
        active = active.filter((x) => x !== a);
      }
    }
    if ((i + 1) % 10 === 0 || i + 1 === total) say(`  ${phase}: ${i + 1}/${total}`);
  }
  for (const a of started) {
    if (a.state.containerError) a.result.errors.push(`container calls stopped at: ${a.state.containerError}`);
    // A runtime that failed midway keeps the samples it completed (visible as a smaller n in --json).
    for (const [op, values] of Object.entries(a.samples)) {
      if (!values || values.length === 0) continue;
      a.result.ops[op as Op] = summarize(values);
      a.result.raw[op as Op] = values.map((v) => Math.round(v * 1000) / 1000);
    }
  }
}

async function main(args: BenchArgs): Promise<number> {
  if (args.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (process.getuid?.() !== 0) {
    say('bench:cri: needs root (it runs runc, mounts overlays and creates network namespaces)');
    return 2;
  }

  const loadStart = loadAverage();
  if (args.drivers && !systemdBooted()) {
    say('bench:cri: --drivers compares the systemd and cgroupfs drivers and needs systemd as PID 1 (a node booted with systemd)');
    return 2;
  }
  const wanted: PeerName[] = args.only
    ? [args.only]
    : args.drivers
      ? ['skiffd', 'skiffd-cgroupfs', 'containerd2', 'containerd']
      : ['skiffd', 'containerd2', 'containerd'];
  const result: BenchResult = {
    date: new Date().toISOString(),
    command: `npm run bench:cri -- ${process.argv.slice(2).join(' ')}`.trim(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? '?', kernel: release(), node: process.version, note: '' },
    samples: args.samples,
    warmup: args.warmup,
    peers: {},
    ratios: {},
  };
  const notes: string[] = [];
  if (wanted.includes('containerd2') && !containerdBinary('2.1')) {
    wanted.splice(wanted.indexOf('containerd2'), 1);
    notes.push(`containerd 2.1 is not available, so this run has no comparison with it; ${CONTAINERD2_HINT}`);
  }
  if (wanted.includes('containerd') && !containerdBinary('1.6')) {
    wanted.splice(wanted.indexOf('containerd'), 1);
    notes.push(`containerd 1.6 is not installed, so it is not in this run (${CONTAINERD_INSTALL_HINT})`);
  }
  if (notes.length > 0) {
    result.containerdNote = notes.join('; ');
    for (const n of notes) say(n);
  }
  if (wanted.length === 0) {
    say(`bench:cri: nothing to measure (--only ${args.only}, which is not available here)`);
    return 2;
  }

  const dir = mkdtempSync(join(tmpdir(), 'skiff-cribench-'));
  undo.push({
    what: `removing ${dir}`,
    fn: async () => {
      const left = mountsUnder(dir);
      if (left.length > 0) say(`cleanup: still mounted, leaving ${dir} in place: ${left.join(', ')}`);
      else if (args.keep) say(`kept ${dir}`);
      else rmSync(dir, { recursive: true, force: true });
    },
  });

  if (args.kubelet || args.cluster) {
    // stdout carries the results only (--json): the kubelet lock's waiting notices go to stderr.
    console.log = (...parts: unknown[]) => say(parts.map(String).join(' '));
    const { results, text } = args.cluster
      ? await runClusterPart(args, dir, undo, say, () => stopping)
      : await runKubeletPart(args, dir, undo, say, () => stopping);
    if (stopping) return 1;
    const header = `command: ${result.command}\nmachine: ${result.machine.cpus} cpus, ${result.machine.model}, kernel ${result.machine.kernel}, node ${result.machine.node}\n`;
    const out = args.json
      ? JSON.stringify({ date: result.date, command: result.command, machine: result.machine, [args.cluster ? 'cluster' : 'kubelet']: results }, null, 2) + '\n'
      : `${header}\n${text}\n`;
    await new Promise<void>((resolve) => process.stdout.write(out, () => resolve()));
    return results.some((r) => r.errors.length > 0) ? 1 : 0;
  }

  if (args.nri) {
    const { results, text } = await runNriPart(args, dir, undo, say, () => stopping);
    if (stopping) return 1;
    const machine = { ...result.machine, note: `load average ${loadStart} at the start, ${loadAverage()} at the end` };
    const header = `command: ${result.command}\nmachine: ${machine.cpus} cpus, ${machine.model}, kernel ${machine.kernel}, node ${machine.node}; ${machine.note}\n`;
    const out = args.json ? JSON.stringify({ date: result.date, command: result.command, machine, nri: results }, null, 2) + '\n' : `${header}\n${text}\n`;
    await new Promise<void>((resolve) => process.stdout.write(out, () => resolve()));
    return Object.values(results.variants).some((v) => v!.errors.length > 0) ? 1 : 0;
  }

  if (systemdBooted()) undo.push({ what: `stopping ${BENCH_SLICE}`, fn: () => stopUnit(BENCH_SLICE) });
  say(`starting a registry with the benchmark images`);
  const images = await startImageRegistry();
  undo.push({ what: 'stopping the registry', fn: () => images.registry.stop() });
  result.pullImageBytes = images.pullBytes;

  // critest pulls its own images, by their upstream names: both runtimes mirror those hosts to the kit's registry.
  let kit: KitRegistry | undefined;
  const kitProblem = args.critestRounds > 0 ? kitMissing() : undefined;
  if (args.critestRounds > 0 && !kitProblem) {
    say("starting the conformance kit's registry (critest's images)");
    kit = await startKitRegistry(await freePort());
    undo.push({ what: 'stopping the kit registry', fn: () => kit!.stop() });
  }
  const mirrors: Record<string, string> = kit
    ? Object.fromEntries(['registry.k8s.io', 'k8s.gcr.io', 'gcr.io', 'public.ecr.aws', 'docker.io'].map((h) => [h, kit!.url]))
    : {};

  const peers: Peer[] = [];
  for (const name of wanted) {
    const peerDir = join(dir, name);
    mkdirSync(join(peerDir, 'logs'), { recursive: true });
    say(`starting ${name}`);
    try {
      // With --drivers, skiffd runs once per driver; otherwise with its default (auto), like containerd matched to the host.
      const release = CONTAINERD_RELEASE[name];
      const peer = release
        ? await startContainerdPeer(peerDir, images.registry.host, images.pause, mirrors, release)
        : await startSkiffdPeer(peerDir, images.registry.host, args.skiffd, {
            mirrors,
            name: name === 'skiffd-cgroupfs' ? 'skiffd-cgroupfs' : 'skiffd',
            cgroupDriver: name === 'skiffd-cgroupfs' ? 'cgroupfs' : args.drivers ? 'systemd' : undefined,
            logLevel: args.handlerTimes ? 'debug' : undefined,
            nodeFlags: [...(args.skiffdCpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(args.skiffdCpuProf, name)}`] : []), ...args.skiffdNodeFlags],
          });
      undo.push({ what: `tearing down ${name}`, fn: () => peer.teardown() });
      peers.push(peer);
      result.peers[name] = { description: peer.description, ops: {}, raw: {}, errors: [], memory: { idle: await idleMemory(peer) } };
      say(`  ${peer.description}, pid ${peer.daemonPid}`);
    } catch (err) {
      say(`  ${name} did not start: ${(err as Error).message}`);
      result.peers[name] = { description: 'did not start', ops: {}, raw: {}, errors: [`start: ${(err as Error).message}`] };
    }
  }

  if (peers.length === 0) {
    say('bench:cri: no runtime started; nothing to measure (their errors are above)');
    return 1;
  }
  for (const phase of ['images', 'lifecycle'] as const) {
    if (stopping) break;
    say(`${phase}: ${peers.map((p) => p.name).join(' and ')}, ${args.warmup} + ${args.samples} samples`);
    await interleaved(phase, peers, result.peers, images, args, dir);
  }
  if (args.handlerTimes) {
    for (const peer of peers) if (!CONTAINERD_RELEASE[peer.name]) result.peers[peer.name]!.handlerMs = summarizeHandlerTimes(peer.logs(), ALL_OPS);
  }
  if (args.memoryContainers > 0 && !stopping) {
    for (const peer of peers) {
      if (stopping) break;
      say(`memory: ${peer.name}, ${args.memoryContainers} running containers`);
      const r = result.peers[peer.name]!;
      try {
        r.memory!.afterRun = memoryOf(peer.daemonPid);
        r.memory!.perContainer = await perContainerMemory(peer, images.workload, args.memoryContainers, join(dir, peer.name, 'logs'), args.rpcTimeoutMs);
      } catch (err) {
        fail(peer, r, 'memory', err);
      }
    }
  }

  if (args.critestRounds > 0 && !stopping) {
    result.critest = { rounds: args.critestRounds, peers: {}, note: kitProblem ? `critest -benchmark skipped: ${kitProblem}` : undefined };
    if (kit) {
      const pooled: Partial<Record<PeerName, CritestSamples>> = {};
      for (let round = 0; round < args.critestRounds && !stopping; round++) {
        const order = round % 2 === 0 ? peers : [...peers].reverse();
        for (const peer of order) {
          if (stopping) break;
          say(`critest -benchmark: ${peer.name}, round ${round + 1}/${args.critestRounds}`);
          try {
            const samples = await critestBenchmark(peer.socket, join(dir, peer.name, `critest-${round}`), 15 * 60_000);
            const into = (pooled[peer.name] ??= {});
            for (const [op, values] of Object.entries(samples)) (into[op as keyof CritestSamples] ??= []).push(...values!);
          } catch (err) {
            fail(peer, result.peers[peer.name]!, 'critest -benchmark', err);
          }
          await removeAllPods(peer.runtime).catch(() => {});
        }
      }
      for (const [name, samples] of Object.entries(pooled)) result.critest.peers[name as PeerName] = summarizeCritest(samples!);
    }
  }

  if (stopping) return 1;
  computeRatios(result);
  // Other work on the machine skews latency; the load average tells a reader how much there was.
  result.machine.note = `load average ${loadStart} at the start, ${loadAverage()} at the end`;
  const text = args.json ? JSON.stringify(result, null, 2) + '\n' : formatText(result) + '\n';
  // Wait for the write: stdout may be a pipe, and process.exit would cut it short.
  await new Promise<void>((resolve) => process.stdout.write(text, () => resolve()));
  const failed = Object.values(result.peers).some((p) => p!.errors.length > 0);
  if (failed) {
    for (const peer of peers) {
      if ((result.peers[peer.name]?.errors.length ?? 0) > 0) say(`--- last lines of ${peer.name}'s log ---\n${peer.logs().split('\n').slice(-25).join('\n')}`);
    }
  }
  return failed ? 1 : 0;
}

function loadAverage(): string {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return '?';
  }
}

let args: BenchArgs;
try {
  args = parseArgs(process.argv.slice(2));
} catch (err) {
  say(`bench:cri: ${(err as Error).message}`);
  process.exit(2);
}

const stopOn = (why: string, code: number) => {
  stopping = true;
  say(`bench:cri: ${why}; cleaning up`);
  cleanup().finally(() => process.exit(code));
};
process.once('SIGINT', () => stopOn('interrupted', 130));
process.once('SIGTERM', () => stopOn('terminated', 143));
const watchdog = setTimeout(() => stopOn(`still running after --timeout ${args.timeoutS} s`, 124), args.timeoutS * 1000);
watchdog.unref();

let exitCode = 1;
main(args)
  .then((code) => (exitCode = code))
  .catch((err) => {
    say(`bench:cri failed: ${(err as Error).stack ?? err}`);
    exitCode = 1;
  })
  .finally(async () => {
    await cleanup();
    clearTimeout(watchdog);
    process.exit(exitCode);
  });
