// What packaging/ ships for a node: the systemd unit passes systemd's own checker against the built
// single executable, and the default config, crictl.yaml and the kubelet snippet agree on the socket
// and the cgroup driver.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig, socketPathOf } from '../../node/skiffd/config.ts';
import { build } from '../../scripts/build-skiffd.mjs';
import { runCommand } from '../support/commands.ts';
import { needs } from '../support/prereq.ts';
import { repoRoot } from '../support/skiffd.ts';
import { cgroupDriver } from '../../node/skiffd/cgroups/driver.ts';

const packaging = join(repoRoot, 'packaging');
const read = (path: string) => readFileSync(join(packaging, path), 'utf8');

/** `key: value` lines of a flat YAML file (all these files use). */
function yamlValues(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z-]+):\s*(\S.*)$/.exec(line);
    if (m) out[m[1]] = m[2].trim();
  }
  return out;
}

test('packaging: the systemd unit passes systemd-analyze verify with the built skiffd', { timeout: 120_000 }, async (t) => {
  if (!needs(t, { commands: ['systemd-analyze'] })) return;
  const dir = mkdtempSync(join(tmpdir(), 'skiffd-unit-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const built = await build({ outdir: join(dir, 'dist'), quiet: true });
  const unit = read('systemd/skiffd.service');
  // The unit names the installed path; verify checks that the command exists and is executable.
  const bin = join(dir, 'usr', 'local', 'bin', 'skiffd');
  mkdirSync(join(dir, 'usr', 'local', 'bin'), { recursive: true });
  copyFileSync(built.sea!, bin);
  chmodSync(bin, 0o755);
  const file = join(dir, 'skiffd.service');
  writeFileSync(file, unit.replaceAll('/usr/local/bin/skiffd', bin));
  const verify = await runCommand('systemd-analyze', ['verify', file], { timeoutMs: 60_000 });
  assert.equal(verify.code, 0, verify.stderr);
  assert.equal(verify.stderr.trim(), '', `systemd-analyze warned:\n${verify.stderr}`);

  // A missing binary is what verify must catch, or the check above proves nothing.
  writeFileSync(file, unit.replaceAll('/usr/local/bin/skiffd', join(dir, 'missing')));
  const broken = await runCommand('systemd-analyze', ['verify', file], { timeoutMs: 60_000 });
  assert.notEqual(broken.code, 0);

  // Containers run under conmon in the unit's cgroup: stopping the unit must end only the daemon.
  assert.match(unit, /^KillMode=process$/m);
  assert.match(unit, /^Delegate=yes$/m);
  assert.match(unit, /^ExecStart=\/usr\/local\/bin\/skiffd --config \/etc\/skiffd\/config\.toml$/m);
});

test('packaging: config.toml, crictl.yaml and the kubelet snippet agree', () => {
  const config = parseConfig(read('config.toml'), { configFile: '/etc/skiffd/config.toml' });
  const socket = socketPathOf(config.listen);
  assert.equal(socket, '/run/skiffd/skiffd.sock');
  assert.equal(config.root, '/var/lib/skiffd');
  const crictl = yamlValues(read('crictl.yaml'));
  assert.equal(crictl['runtime-endpoint'], `unix://${socket}`);
  assert.equal(crictl['image-endpoint'], `unix://${socket}`);
  const kubelet = yamlValues(read('kubelet/kubelet-config.yaml'));
  assert.equal(kubelet.containerRuntimeEndpoint, `unix://${socket}`);
  // The packaged node is a systemd host: the kubelet's driver is the one skiffd's setting resolves to there.
  assert.equal(config.runtime.cgroupDriver, 'auto');
  assert.equal(kubelet.cgroupDriver, cgroupDriver(config.runtime.cgroupDriver, () => true).name);
});
