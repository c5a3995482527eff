// skiffd's systemd cgroup driver on a node booted with systemd: systemd-nspawn boots this host's
// systemd 252 as PID 1 in a container whose root is a tmpfs (the host's /usr read-only, nothing of the
// host written), with a cgroup v2 tree of its own. There `systemd-node/inside.ts` runs skiffd with
// cgroup_driver = "systemd" and critest 1.36 against it, then follows a pod and a container through
// systemd itself. This host's v2 tree has no controllers (they are all bound to v1 hierarchies), so
// limits cannot be enforced there: the OOM spec is let off for that reason alone, and only then.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describeFailures, hostAppArmorEnabled, judgeCritest, kitDir, kitMissing, OFFLINE_IMPOSSIBLE } from '../support/cri-conformance.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { repoRoot } from '../support/skiffd.ts';
import { runCommand } from '../support/commands.ts';
import type { SystemdNodeReport } from './systemd-node/inside.ts';

/** The host's cgroup v2 tree: beside the v1 hierarchies on a hybrid host, or the only one. */
const UNIFIED = ['/sys/fs/cgroup/unified', '/sys/fs/cgroup'].find((dir) => existsSync(join(dir, 'cgroup.procs')));
const OOM_SPEC = 'should terminate with exitCode 137 and reason OOMKilled';

/** Removes a cgroup tree bottom-up (each directory is empty of processes once its node is gone). */
function removeCgroupTree(dir: string): void {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) removeCgroupTree(join(dir, e.name));
  rmdirSync(dir);
}

/** Boots the node, runs `command` in it as a service, and returns its exit status (bounded). */
async function bootNode(unified: string, work: string, command: string, timeoutMs: number): Promise<{ status: number | undefined; console: string }> {
  writeFileSync(
    join(work, 'skiff-run.service'),
    [
      '[Unit]',
      'Wants=dbus.socket',
      'After=basic.target dbus.socket',
      '[Service]',
      'Type=oneshot',
      `StandardOutput=file:${work}/out.log`,
      `StandardError=file:${work}/out.log`,
      `ExecStart=/bin/bash -c '${command}; echo $? > ${work}/status; systemctl poweroff -f'`,
      '',
    ].join('\n'),
  );
  writeFileSync(join(work, 'skiff-run.target'), '[Unit]\nRequires=basic.target skiff-run.service\nAfter=basic.target\n');
  // nspawn's container gets a cgroup of its own (its cgroup namespace's root), removed afterwards.
  const cgroup = join(unified, `skiff-node-${process.pid}`);
  mkdirSync(cgroup, { recursive: true });
  const nodeRoot = dirname(dirname(process.execPath));
  const args = [
    '--quiet',
    '--register=no',
    '--keep-unit',
    '--volatile=yes',
    '--private-network',
    '--capability=all',
    '-D',
    '/',
    `--bind=${work}`,
    '--bind-ro=/etc/alternatives',
    `--bind-ro=${repoRoot.replace(/\/$/, '')}`,
    `--bind-ro=${kitDir}`,
    ...(nodeRoot.startsWith('/usr') ? [] : [`--bind-ro=${nodeRoot}`]),
    `--bind-ro=${work}/skiff-run.service:/etc/systemd/system/skiff-run.service`,
    `--bind-ro=${work}/skiff-run.target:/etc/systemd/system/skiff-run.target`,
    '--boot',
    '--',
    'systemd.unit=skiff-run.target',
    'systemd.firstboot=off',
  ];
  const env = {
    ...process.env,
    // A cgroup v2 tree for the node, writable /proc/sys and /sys as on a node, and no nspawn seccomp filter.
    SYSTEMD_NSPAWN_UNIFIED_HIERARCHY: '1',
    SYSTEMD_NSPAWN_API_VFS_WRITABLE: '1',
    SYSTEMD_SECCOMP: '0',
  };
  try {
    const console = await new Promise<string>((resolve) => {
      const child = spawn('sh', ['-c', `echo $$ > ${cgroup}/cgroup.procs && exec systemd-nspawn "$@"`, 'sh', ...args], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let text = '';
      const take = (b: Buffer) => {
        text = (text + b.toString()).slice(-20_000);
      };
      child.stdout.on('data', take);
      child.stderr.on('data', take);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('close', () => {
        clearTimeout(timer);
        resolve(text);
      });
    });
    const statusFile = join(work, 'status');
    return { status: existsSync(statusFile) ? Number(readFileSync(statusFile, 'utf8').trim()) : undefined, console };
  } finally {
    removeCgroupTree(cgroup);
  }
}

test("systemd cgroup driver: critest 1.36 and a pod's units on a node booted with systemd (cgroup v2)", { timeout: 30 * 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['systemd-nspawn', 'runc', 'conmon', 'docker-registry', '/usr/lib/cni/bridge', '/lib/systemd/systemd'] })) return;
  const missing = kitMissing('1.36');
  if (missing) return unavailable(t, missing);
  if (!UNIFIED) return unavailable(t, 'no cgroup v2 hierarchy on this host for the systemd node (mount cgroup2)');

  // nspawn keeps its state in /run/systemd/nspawn, which must be a tmpfs; a host without systemd has none.
  const nspawnRun = '/run/systemd/nspawn';
  mkdirSync(nspawnRun, { recursive: true });
  const mounted = (await runCommand('mountpoint', ['-q', nspawnRun], { timeoutMs: 10_000 })).code === 0;
  if (!mounted) await runCommand('mount', ['-t', 'tmpfs', 'tmpfs', nspawnRun], { timeoutMs: 10_000 });
  t.after(async () => {
    if (!mounted) await runCommand('umount', [nspawnRun], { timeoutMs: 10_000 });
  });

  const work = mkdtempSync(join(tmpdir(), 'skiff-systemd-node-'));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const report = join(work, 'report.json');
  const command = `export PATH=${dirname(process.execPath)}:$PATH CI=${process.env.CI ?? ''}; cd ${repoRoot} && node --import tsx test/cri/systemd-node/inside.ts ${report}`;
  const booted = await bootNode(UNIFIED, work, command, 25 * 60_000);
  const log = existsSync(join(work, 'out.log')) ? readFileSync(join(work, 'out.log'), 'utf8').slice(-4000) : '';
  assert.ok(existsSync(report), `the node produced no report (status ${booted.status}):\n${log}\n${booted.console.slice(-3000)}`);
  const r = JSON.parse(readFileSync(report, 'utf8')) as SystemdNodeReport;
  assert.equal(r.error, undefined, `${r.error}\n\nskiffd log tail:\n${r.daemonLogTail}`);

  // critest: the host's verdict, with OOM let off only where the node's tree has no memory controller.
  const v = judgeCritest(r.specs, { appArmorEnabled: hostAppArmorEnabled() });
  const letOff = (s: { leaf: string; name: string }) => s.name.includes(OFFLINE_IMPOSSIBLE) || (!r.controllers.includes('memory') && s.leaf.includes(OOM_SPEC));
  const failed = v.failed.filter((s) => !letOff(s));
  console.log(
    `systemd node (controllers: ${r.controllers.join(' ') || 'none'}): critest ${v.passed.length} passed, ${v.failed.length} failed, ${r.specs.length - v.passed.length - v.failed.length} not run`,
  );
  assert.ok(r.specs.length > 100, `critest reported ${r.specs.length} specs:\n${r.critestOutputTail}`);
  assert.deepEqual(
    failed.map((s) => s.name),
    [],
    `specs failed under the systemd driver:\n${describeFailures(failed)}\n\nskiffd log tail:\n${r.daemonLogTail}`,
  );
  assert.deepEqual(
    v.skipped.map((s) => s.name),
    [],
    'no spec skips for a feature skiffd does not advertise',
  );

  // The pod and its container, as systemd sees them.
  const l = r.lifecycle;
  assert.equal(l.scopeActiveWhileRunning, 'loaded/active', 'the container is the transient unit skiffd-<id>.scope, active');
  assert.ok(l.scopeCgroupHasTheContainer, "the container's process is in the scope's cgroup, in the pod's slice");
  assert.equal(l.podSliceLoadedWhileRunning, 'loaded/active', "the pod's slice skiffd-pod<id>.slice");
  assert.match(l.statsCpuNs, /^\d+$/, 'ContainerStats reads the scope cgroup');
  assert.ok(l.runningAfterDaemonKill, 'kill -9 of skiffd: the container keeps running, and the restarted daemon knows it');
  assert.equal(l.scopeAfterRemoval, 'gone', 'no scope left after RemovePodSandbox');
  assert.equal(l.podSliceAfterRemoval, 'gone', 'no slice of ours left after RemovePodSandbox');
  assert.equal(l.podCgroupAfterRemoval, false, 'no pod cgroup left after RemovePodSandbox');
});
