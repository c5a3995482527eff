// bench:cri --drivers: skiffd's systemd driver set against its cgroupfs driver, call by call, and the
// pod slices a kubelet would give pods under the systemd driver.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseArgs } from '../../bench/cri/args.ts';
import { computeRatios, formatText } from '../../bench/cri/report.ts';
import type { BenchResult } from '../../bench/cri/result.ts';
import { summarize } from '../../bench/cri/stats.ts';
import { handlerTimes, summarizeHandlerTimes } from '../../bench/cri/handler-times.ts';
import { formatLine } from '../../node/skiffd/logger.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { until } from '../support/wait.ts';
import { benchPodSlice, cgroupParentFor, podConfig } from '../../bench/cri/workload.ts';

const peer = (description: string, p50: number) => ({
  description,
  ops: { RunPodSandbox: summarize([p50, p50, p50]), CreateContainer: summarize([p50 / 2, p50 / 2, p50 / 2]) },
  raw: {},
  errors: [],
});

/** A run's result with these peers and nothing measured beyond them. */
function benchResult(command: string, peers: BenchResult['peers']): BenchResult {
  return { date: 'now', command, machine: { cpus: 2, model: 'test', kernel: '6.1', node: 'v24', note: '' }, samples: 3, warmup: 0, peers, ratios: {} };
}

test('--drivers: the systemd/cgroupfs ratio per call against its 1.2x bound, in the table', () => {
  assert.equal(parseArgs(['--drivers']).drivers, true);
  assert.equal(parseArgs([]).drivers, false);
  const result = benchResult('npm run bench:cri -- --drivers', {
    skiffd: peer('skiffd, systemd', 30),
    'skiffd-cgroupfs': peer('skiffd, cgroupfs', 20),
    containerd: peer('containerd', 40),
  });
  computeRatios(result);
  assert.deepEqual(result.driverRatios?.RunPodSandbox, { p50: 1.5, p90: 1.5, target: 1.2, met: false });
  assert.equal(result.ratios.RunPodSandbox?.p50, 0.75);
  // A call with no usable figure (no samples, or a zero to divide by) gets no ratio, never Infinity or NaN.
  const zero = { ...result, ratios: {}, driverRatios: undefined, peers: { ...result.peers, 'skiffd-cgroupfs': peer('skiffd, cgroupfs', 0) } };
  computeRatios(zero);
  assert.deepEqual(zero.driverRatios, {});
  const missing = { ...result, ratios: {}, peers: { skiffd: { ...peer('skiffd', 30), ops: {} }, containerd: peer('containerd', 40) } };
  computeRatios(missing);
  assert.deepEqual(missing.ratios, {});
  const text = formatText(result);
  assert.match(text, /skiffd \(systemd\) p50.*skiffd \(cgroupfs\) p50.*systemd\/cgroupfs p50/);
  assert.match(text, /RunPodSandbox .*1\.50x \(over 1\.2x\)/);
});

test('pods under the systemd driver name a slice of their own, as a kubelet does; under cgroupfs none', () => {
  const slice = cgroupParentFor('systemd');
  assert.ok(slice);
  const config = podConfig('p', '/tmp/logs', slice);
  const uid = config.metadata!.uid!;
  assert.equal(config.linux?.cgroupParent, benchPodSlice(uid));
  assert.match(config.linux!.cgroupParent!, /^skiffbench-pod[a-z0-9_]+\.slice$/);
  assert.equal(cgroupParentFor('cgroupfs'), undefined);
  assert.equal(podConfig('p', '/tmp/logs').linux?.cgroupParent, undefined);
});

test('--handler-times: skiffd at log level debug logs each call, and the table sets its handler time beside the client latency', async (t) => {
  assert.equal(parseArgs(['--handler-times']).handlerTimes, true);
  assert.equal(parseArgs([]).handlerTimes, false);
  // The daemon's own lines, as it writes them: a real skiffd at debug level, two kinds of calls.
  const d = await startSkiffd({ config: 'log_level = "debug"' });
  t.after(() => d.cleanup());
  for (let i = 0; i < 3; i++) await d.runtime.version({ version: 'v1' }, { signal: AbortSignal.timeout(10_000) });
  await d.images.listImages({}, { signal: AbortSignal.timeout(10_000) });
  // A call's line reaches us through the daemon's stderr pipe, after its answer: wait for it, bounded.
  const times = await until('the four calls in the log', () => {
    const found = handlerTimes(d.logs());
    return (found.get('Version')?.length ?? 0) >= 3 && (found.get('ListImages')?.length ?? 0) >= 1 && found;
  }).catch((error: Error) => assert.fail(`${error.message}:\n${d.logs().slice(-2000)}`));
  assert.equal(times.get('Version')?.length, 3, 'three Version calls in the log');
  assert.equal(times.get('ListImages')?.length, 1);
  for (const ms of [...times.get('Version')!, ...times.get('ListImages')!]) assert.ok(Number.isFinite(ms) && ms >= 0, `a time in ms: ${ms}`);

  const log = [8, 10, 12].map((ms) => formatLine('debug', 'rpc', { method: '/runtime.v1.RuntimeService/CreateContainer', ms: ms.toFixed(2) })).join('');
  const handlerMs = summarizeHandlerTimes(log, ['CreateContainer', 'StartContainer']);
  assert.deepEqual(Object.keys(handlerMs), ['CreateContainer']);
  assert.equal(handlerMs.CreateContainer?.p50, 10);
  const result = benchResult('npm run bench:cri -- --handler-times', { skiffd: { ...peer('skiffd', 30), handlerMs }, containerd: peer('containerd', 40) });
  computeRatios(result);
  const lines = formatText(result).split('\n');
  const header = lines.findIndex((line) => line.includes('in handler p50'));
  assert.ok(header > 0, 'the handler table is printed');
  const row = lines.slice(header).find((line) => line.startsWith('CreateContainer'));
  // client p50 15 (half of 30), in the handler 10, outside 5.0, containerd 20.
  assert.deepEqual(row?.split(/\s+/), ['CreateContainer', '15', '10', '5.0', '20']);
  assert.doesNotMatch(formatText({ ...result, peers: { skiffd: peer('skiffd', 30) } }), /in handler/);

  // Edge figures: a handler time of zero or a tiny one, none at all, a call the client has no figure
  // for, and a handler p50 above the client's (warm-up calls count in the log): never NaN or Infinity.
  const edge = benchResult('edge', {
    skiffd: {
      ...peer('skiffd', 30),
      handlerMs: {
        RunPodSandbox: summarize([0, 0, 0]),
        CreateContainer: summarize([0.004, 0.004, 0.004]),
        StopContainer: summarize([7, 7, 7]),
      },
    },
  });
  const edgeLines = formatText(edge).split('\n');
  const edgeRows = edgeLines.slice(edgeLines.findIndex((line) => line.includes('in handler p50')));
  const cells = (op: string) => edgeRows.find((line) => line.startsWith(op))?.split(/\s+/);
  assert.deepEqual(cells('RunPodSandbox'), ['RunPodSandbox', '30', '0.00', '30']);
  assert.deepEqual(cells('CreateContainer'), ['CreateContainer', '15', '0.00', '15']);
  assert.deepEqual(cells('StopContainer'), ['StopContainer', '-', '7.0', '-'], 'no client figure: nothing to subtract from');
  assert.deepEqual(cells('StartContainer'), ['StartContainer', '-', '-', '-']);
  const crossed = benchResult('crossed', { skiffd: { ...peer('skiffd', 30), handlerMs: { RunPodSandbox: summarize([31, 31, 31]) } } });
  const crossedLines = formatText(crossed).split('\n');
  assert.ok(
    crossedLines.slice(crossedLines.findIndex((line) => line.includes('in handler p50'))).some((line) => /^RunPodSandbox\s+30\s+31\s+-1\.0$/.test(line)),
  );
  assert.doesNotMatch(formatText(edge) + formatText(crossed), /NaN|Infinity/);
  assert.deepEqual(summarizeHandlerTimes('', ['CreateContainer']), {}, 'a log without rpc lines gives no figures');
});
