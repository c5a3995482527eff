// Runs inside the systemd node that critest-systemd.test.ts boots (systemd as PID 1, cgroup v2): skiffd
// with cgroup_driver = "systemd", critest 1.36 against it, then a pod and a container followed through
// systemd itself (the scope unit, its cgroup, the pod's slice, a daemon killed and restarted, removal).
// Writes what it found as JSON to the file named by argv[2]; the outer test judges it.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContainerState } from '../../../proto/gen/runtime/v1/api.ts';
import { runCritest, startKitRegistry, type SpecResult } from '../../support/cri-conformance.ts';
import { createTestNetwork, freePort, skiffdNetworkConfig } from '../../support/netns.ts';
import { podConfig } from '../../support/pods.ts';
import { startSkiffd } from '../../support/skiffd.ts';
import { until } from '../../support/wait.ts';

export interface SystemdNodeReport {
  controllers: string[];
  specs: SpecResult[];
  critestOutputTail: string;
  lifecycle: {
    scopeActiveWhileRunning: string;
    scopeCgroupHasTheContainer: boolean;
    podSliceLoadedWhileRunning: string;
    runningAfterDaemonKill: boolean;
    scopeAfterRemoval: string;
    podSliceAfterRemoval: string;
    podCgroupAfterRemoval: boolean;
    statsCpuNs: string;
  };
  error?: string;
  daemonLogTail: string;
}

const out = process.argv[2];
if (!out) throw new Error('usage: inside.ts REPORT.json');

const unitState = (unit: string) => {
  try {
    return execFileSync('systemctl', ['show', '-p', 'LoadState,ActiveState', '--value', unit], { encoding: 'utf8' }).trim().split('\n').join('/');
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
};

/** The unit's line in `systemctl list-units --all`, or '' when systemd holds no such unit. */
const listed = (unit: string) => execFileSync('systemctl', ['list-units', '--all', '--plain', '--no-legend', unit], { encoding: 'utf8' }).trim();

const report: SystemdNodeReport = {
  controllers: readFileSync('/sys/fs/cgroup/cgroup.controllers', 'utf8').trim().split(/\s+/).filter(Boolean),
  specs: [],
  critestOutputTail: '',
  lifecycle: {
    scopeActiveWhileRunning: '',
    scopeCgroupHasTheContainer: false,
    podSliceLoadedWhileRunning: '',
    runningAfterDaemonKill: false,
    scopeAfterRemoval: '',
    podSliceAfterRemoval: '',
    podCgroupAfterRemoval: true,
    statsCpuNs: '',
  },
  daemonLogTail: '',
};

const registry = await startKitRegistry(await freePort());
const net = createTestNetwork(mkdtempSync(join(tmpdir(), 'net-')));
// Short (attach sockets live below it) and passable by others, as startSkiffd makes its own.
const dir = mkdtempSync(join(tmpdir(), 'sd-'));
chmodSync(dir, 0o711);
const config = `[runtime]\ncgroup_driver = "systemd"\n${skiffdNetworkConfig(net)}\n${registry.mirrorsToml}\n`;
let d = await startSkiffd({ dir, config });
try {
  const run = await runCritest(d.socket, { version: '1.36', timeoutMs: 20 * 60_000 });
  report.specs = run.specs;
  report.critestOutputTail = run.output.slice(-3000);

  // A pod without a cgroup parent gets skiffd's own slice; its container is skiffd-<id>.scope in it.
  const image = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';
  await d.images.pullImage({ image: { image } });
  const config = podConfig('systemd-lifecycle');
  const { podSandboxId } = await d.runtime.runPodSandbox({ config });
  const { containerId } = await d.runtime.createContainer({
    podSandboxId,
    sandboxConfig: config,
    config: { metadata: { name: 'sleeper' }, image: { image }, command: ['sleep', '3600'] },
  });
  await d.runtime.startContainer({ containerId });
  const scope = `skiffd-${containerId}.scope`;
  const slice = `skiffd-pod${podSandboxId.slice(0, 12)}.slice`;
  const podCgroup = `/sys/fs/cgroup/skiffd.slice/${slice}`;
  report.lifecycle.scopeActiveWhileRunning = unitState(scope);
  report.lifecycle.podSliceLoadedWhileRunning = unitState(slice);
  const { info } = await d.runtime.containerStatus({ containerId, verbose: true });
  const pid = String(JSON.parse(info.info ?? '{}').pid ?? '');
  const procs = join(podCgroup, scope, 'cgroup.procs');
  report.lifecycle.scopeCgroupHasTheContainer = existsSync(procs) && readFileSync(procs, 'utf8').split('\n').includes(pid);
  const stats = await d.runtime.containerStats({ containerId });
  report.lifecycle.statsCpuNs = String(stats.stats?.cpu?.usageCoreNanoSeconds?.value ?? '');

  // kill -9 of the daemon: the container keeps running, and the new daemon knows it.
  d.channel.close();
  d.child.kill('SIGKILL');
  await until('the killed daemon to exit', () => d.child.exitCode !== null || d.child.signalCode !== null);
  d = await startSkiffd({ dir, config: `[runtime]\ncgroup_driver = "systemd"\n${skiffdNetworkConfig(net)}\n${registry.mirrorsToml}\n` });
  const after = await d.runtime.containerStatus({ containerId });
  report.lifecycle.runningAfterDaemonKill = after.status?.state === ContainerState.CONTAINER_RUNNING && unitState(scope).endsWith('/active');

  await d.runtime.stopPodSandbox({ podSandboxId });
  await d.runtime.removePodSandbox({ podSandboxId });
  // Asked by listing what systemd holds: `systemctl show` would load a slice of any name on demand.
  // A stopped unit may stay listed for a moment, until systemd collects it.
  const gone = (unit: string) => until(`${unit} to be collected`, () => listed(unit) === '', 20_000).catch(() => {});
  await Promise.all([gone(scope), gone(slice)]);
  report.lifecycle.scopeAfterRemoval = listed(scope) || 'gone';
  report.lifecycle.podSliceAfterRemoval = listed(slice) || 'gone';
  report.lifecycle.podCgroupAfterRemoval = existsSync(podCgroup);
} catch (err) {
  report.error = (err as Error).stack ?? String(err);
} finally {
  report.daemonLogTail = d.logs().slice(-4000);
  await d.cleanup().catch(() => {});
  await net.cleanup().catch(() => {});
  await registry.stop().catch(() => {});
  writeFileSync(out, JSON.stringify(report));
}
