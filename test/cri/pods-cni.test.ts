// skiffd's side of the CNI protocol, with small shell-script plugins that record what they were given:
// which config file wins, the CNI_* environment, prevResult chaining, capabilities-gated runtimeConfig,
// DEL order and cached result, plugin errors, missing plugins, and reading IPs from any result version.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cni, CniNotReadyError, CniPluginError, resultIps } from '../../node/skiffd/network/cni.ts';
import { loadNetwork } from '../../node/skiffd/network/cni-config.ts';

function fixture(t: { after(fn: () => void): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-cni-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const bin = join(dir, 'bin');
  const conf = join(dir, 'net.d');
  const log = join(dir, 'log');
  mkdirSync(bin);
  mkdirSync(conf);
  mkdirSync(log);
  // A plugin that records its stdin and CNI_* environment, then prints `reply` (exit `code`).
  const plugin = (name: string, reply: string, code = 0) => {
    const file = join(bin, name);
    writeFileSync(
      file,
      `#!/bin/sh\nn=$(ls ${log} | wc -l)\ncat > ${log}/$n-${name}-$CNI_COMMAND.json\nenv | grep ^CNI_ | sort > ${log}/$n-${name}-$CNI_COMMAND.env\nprintf '%s' '${reply}'\nexit ${code}\n`,
    );
    chmodSync(file, 0o755);
  };
  const calls = () =>
    readdirSync(log)
      .filter((f) => f.endsWith('.json'))
      .sort((a, b) => Number(a.split('-')[0]) - Number(b.split('-')[0]))
      .map((f) => ({
        name: f.replace(/^\d+-/, '').replace(/\.json$/, ''),
        stdin: JSON.parse(readFileSync(join(log, f), 'utf8')),
        env: readFileSync(join(log, f.replace(/json$/, 'env')), 'utf8'),
      }));
  return { dir, bin, conf, plugin, calls };
}

test('the lexically first parseable config file wins; a single .conf becomes a one-plugin list', async (t) => {
  const f = fixture(t);
  writeFileSync(join(f.conf, '05-broken.conflist'), '{ nope');
  writeFileSync(join(f.conf, '10-one.conf'), JSON.stringify({ cniVersion: '0.4.0', name: 'one', type: 'bridge', bridge: 'x0' }));
  writeFileSync(join(f.conf, '20-list.conflist'), JSON.stringify({ cniVersion: '1.0.0', name: 'list', plugins: [{ type: 'a' }] }));
  writeFileSync(join(f.conf, '00-ignored.txt'), 'not a config');
  const loaded = await loadNetwork(f.conf);
  assert.equal(loaded.network!.name, 'one');
  assert.equal(loaded.network!.cniVersion, '0.4.0');
  assert.deepEqual(loaded.network!.plugins, [{ type: 'bridge', bridge: 'x0' }]);
  assert.equal(loaded.problems.length, 1);
  assert.match(loaded.problems[0], /05-broken\.conflist: not JSON/);
  assert.deepEqual((await loadNetwork(join(f.dir, 'missing'))).network, undefined);
});

test('ADD chains prevResult, passes runtimeConfig only to capable plugins; DEL runs in reverse with the cached result', async (t) => {
  const f = fixture(t);
  const result = { cniVersion: '1.0.0', interfaces: [{ name: 'br' }, { name: 'eth0', sandbox: '/x' }], ips: [{ address: '10.1.2.3/24', interface: 1 }] };
  f.plugin('first', JSON.stringify(result));
  f.plugin('second', JSON.stringify({ ...result, extra: 'second' }));
  writeFileSync(
    join(f.conf, '10.conflist'),
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'net1',
      plugins: [
        { type: 'first', k: 1 },
        { type: 'second', capabilities: { portMappings: true } },
      ],
    }),
  );
  const cni = new Cni({ confDir: f.conf, binDirs: [join(f.dir, 'nowhere'), f.bin] });
  const portMappings = [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' as const }];
  const attachment = await cni.prepare('pod1', '/run/netns/pod1', { K8S_POD_NAME: 'web' }, { portMappings });
  attachment.result = await cni.add(attachment);
  assert.equal(attachment.result.extra, 'second', 'the last plugin result is the result');

  const [a, b] = f.calls();
  assert.equal(a.name, 'first-ADD');
  assert.deepEqual(a.stdin, { type: 'first', k: 1, name: 'net1', cniVersion: '1.0.0' });
  assert.match(a.env, /^CNI_COMMAND=ADD$/m);
  assert.match(a.env, /^CNI_CONTAINERID=pod1$/m);
  assert.match(a.env, /^CNI_NETNS=\/run\/netns\/pod1$/m);
  assert.match(a.env, /^CNI_IFNAME=eth0$/m);
  assert.match(a.env, new RegExp(`^CNI_PATH=${join(f.dir, 'nowhere')}:${f.bin}$`, 'm'));
  assert.match(a.env, /^CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAME=web$/m);
  assert.equal(b.name, 'second-ADD');
  assert.deepEqual(b.stdin.prevResult, result);
  assert.deepEqual(b.stdin.runtimeConfig, { portMappings });

  await cni.del(attachment, false);
  const [, , c, d] = f.calls();
  assert.deepEqual([c.name, d.name], ['second-DEL', 'first-DEL']);
  assert.equal(c.stdin.prevResult.extra, 'second', 'DEL gets the cached ADD result');
  assert.match(c.env, /^CNI_NETNS=$/m, 'a namespace that is gone is passed as empty');
});

test('a plugin error becomes a CniPluginError with its code and message; missing plugins fail before any runs', async (t) => {
  const f = fixture(t);
  f.plugin('ok', '{"cniVersion":"0.3.1","ips":[]}');
  f.plugin('bad', '{"cniVersion":"0.3.1","code":11,"msg":"no addresses left","details":"range 10.0.0.0/30 is full"}', 1);
  writeFileSync(join(f.conf, '10.conflist'), JSON.stringify({ cniVersion: '0.3.1', name: 'n', plugins: [{ type: 'ok' }, { type: 'bad' }] }));
  const cni = new Cni({ confDir: f.conf, binDirs: [f.bin] });
  const attachment = await cni.prepare('p', '/x', {}, {});
  await assert.rejects(cni.add(attachment), (err: Error) => {
    assert.ok(err instanceof CniPluginError);
    assert.equal(err.cniCode, 11);
    assert.equal(err.message, 'CNI plugin "bad" ADD failed for network "n" (CNI error 11): no addresses left: range 10.0.0.0/30 is full');
    return true;
  });

  writeFileSync(join(f.conf, '10.conflist'), JSON.stringify({ cniVersion: '0.3.1', name: 'n', plugins: [{ type: 'ok', ipam: { type: 'gone-ipam' } }] }));
  const before = f.calls().length;
  await assert.rejects(
    cni.prepare('p', '/x', {}, {}),
    (err: Error) => err instanceof CniNotReadyError && /"gone-ipam" \(network "n"\) not found/.test(err.message),
  );
  assert.equal(f.calls().length, before, 'no plugin ran');
});

test('resultIps reads every result version and prefers IPv4', () => {
  assert.deepEqual(resultIps({ cniVersion: '0.2.0', ip4: { ip: '10.0.0.5/24' }, ip6: { ip: 'fd00::5/64' } }), { ip: '10.0.0.5', additionalIps: ['fd00::5'] });
  assert.deepEqual(
    resultIps({
      cniVersion: '1.0.0',
      interfaces: [{ name: 'cni0' }, { name: 'eth0', sandbox: '/n' }, { name: 'net1', sandbox: '/n' }],
      ips: [
        { address: 'fd00::7/64', interface: 1 },
        { address: '10.0.0.7/24', interface: 1 },
        { address: '192.168.9.9/24', interface: 2 },
      ],
    }),
    { ip: '10.0.0.7', additionalIps: ['fd00::7'] },
  );
  assert.deepEqual(resultIps(undefined), { ip: '', additionalIps: [] });
});
