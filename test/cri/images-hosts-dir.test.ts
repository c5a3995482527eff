// Registry hosts from a containerd 2 style certs.d directory (`[registry] config_path`): hosts.toml
// parsing, the directory lookup (host_port_, host:port, _default), reload on change, a broken file,
// capabilities and headers on real pulls, and containerd 2.1 and skiffd pulling through one directory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostDirCandidates, lookupHostsDir, parseHostsToml, registryEndpoints } from '../../node/skiffd/images/hosts-dir.ts';
import { isImageError } from '../../node/skiffd/images/errors.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd, type SkiffdHandle, removeDaemonDir } from '../support/skiffd.ts';
import { startImageFixtures } from '../support/image-fixtures.ts';
import { crictlPath, kitDir, kitMissing, startKitRegistry } from '../support/cri-conformance.ts';
import { freePort } from '../support/registry.ts';
import { runCommand } from '../support/commands.ts';

const where = (registry: string, dir = '/etc/skiffd/certs.d/x') => ({ registry, dir, file: join(dir, 'hosts.toml') });
const write = (root: string, host: string, text: string) => {
  mkdirSync(join(root, host), { recursive: true });
  writeFileSync(join(root, host, 'hosts.toml'), text);
};

test('hosts.toml: mirrors in file order, then server; schemes, /v2, override_path, capabilities, headers', () => {
  const eps = parseHostsToml(
    `server = "https://registry.example:5000"
[host."http://10.0.0.1:5000"]
  capabilities = ["pull", "resolve"]
  header = { "X-Mirror" = "one", "X-Multi" = ["a", "b"] }
[host."https://mirror.example/base"]
  capabilities = ["pull"]
[host."https://raw.example/api/v2/prefix"]
  override_path = true
[host."https://mirror.example/v2"]
`,
    where('registry.example:5000'),
  );
  assert.deepEqual(
    eps.map((e) => [e.scheme, e.base, e.isMirror, e.capabilities, e.overridePath]),
    [
      ['http', '//10.0.0.1:5000/v2', true, ['pull', 'resolve'], undefined],
      ['https', '//mirror.example/base/v2', true, ['pull'], undefined],
      ['https', '//raw.example/api/v2/prefix', true, undefined, true],
      ['https', '//mirror.example/v2', true, undefined, undefined],
      ['https', '//registry.example:5000/v2', false, undefined, undefined],
    ],
  );
  assert.deepEqual(eps[0].headers, { 'X-Mirror': ['one'], 'X-Multi': ['a', 'b'] });
  assert.equal(eps[0].host, '10.0.0.1:5000');
});

test('hosts.toml without server: https://<host>, docker.io is registry-1.docker.io, loopback falls back to HTTP', () => {
  const mirrorOnly = '[host."http://127.0.0.1:5000"]\n  capabilities = ["pull", "resolve"]\n';
  const k8s = parseHostsToml(mirrorOnly, where('registry.k8s.io'));
  assert.deepEqual(k8s.at(-1), { base: '//registry.k8s.io/v2', host: 'registry.k8s.io', scheme: 'https', insecure: false, isMirror: false });
  const hub = parseHostsToml(mirrorOnly, where('docker.io'));
  assert.equal(hub.at(-1)?.base, '//registry-1.docker.io/v2');
  assert.equal(hub.at(-1)?.capabilities, undefined, 'the implicit server can do everything');
  const local = parseHostsToml('', where('localhost:5000')).at(-1)!;
  assert.equal(local.scheme, undefined, 'https first, then http');
  assert.equal(local.insecure, true);
  // A server without a scheme is https; a path gets /v2 unless it has it.
  assert.equal(parseHostsToml('server = "r.example/sub"', where('r.example'))[0].base, '//r.example/sub/v2');
  assert.equal(parseHostsToml('server = "r.example/sub"', where('r.example'))[0].scheme, 'https');
});

test('hosts.toml TLS fields: ca and client in every form, relative to the file, skip_verify', () => {
  const dir = '/etc/skiffd/certs.d/r.example';
  const [a, b, c, server] = parseHostsToml(
    `server = "https://r.example"
ca = "/etc/ssl/root.pem"
[host."https://a.example"]
  ca = ["ca1.pem", "/abs/ca2.pem"]
  client = "client.pem"
  skip_verify = false
[host."https://b.example"]
  client = ["c1.pem", "/abs/c2.pem"]
  skip_verify = true
[host."https://c.example"]
  client = [["c.cert", "c.key"], ["/abs/d.cert", "/abs/d.key"]]
`,
    where('r.example', dir),
  );
  assert.deepEqual(a.tls, { caFiles: [`${dir}/ca1.pem`, '/abs/ca2.pem'], clientCerts: [{ certFile: `${dir}/client.pem` }], skipVerify: false });
  assert.deepEqual(b.tls, { clientCerts: [{ certFile: `${dir}/c1.pem` }, { certFile: '/abs/c2.pem' }], skipVerify: true });
  assert.equal(b.insecure, true);
  assert.deepEqual(c.tls, {
    clientCerts: [
      { certFile: `${dir}/c.cert`, keyFile: `${dir}/c.key` },
      { certFile: '/abs/d.cert', keyFile: '/abs/d.key' },
    ],
  });
  assert.deepEqual(server.tls, { caFiles: ['/etc/ssl/root.pem'] });
});

test('hosts.toml mistakes name the file and what is wrong', () => {
  const cases: [string, RegExp][] = [
    ['server = "https://x\n', /registry hosts file \/etc\/skiffd\/certs.d\/x\/hosts.toml: invalid TOML at line 1/],
    ['[host."https://m"]\ncapabilities = ["pull", "fetch"]', /host\."https:\/\/m"\.capabilities: unknown capability "fetch"/],
    ['[host."https://m"]\nclient = [["a"]]', /client: each entry must be a path or a \[cert, key\] pair/],
    ['[host."https://m"]\nca = 3', /ca: expected a string or a list of strings/],
    ['[host."ftp://m"]\n', /must use http:\/\/ or https:\/\//],
    ['server = "https://r"\nskip_verify = "yes"', /server\.skip_verify: expected true or false/],
  ];
  for (const [text, expected] of cases) {
    assert.throws(
      () => parseHostsToml(text, where('x')),
      (err: unknown) => isImageError(err) && err.kind === 'failed-precondition' && expected.test(err.message),
      text,
    );
  }
});

test('certs.d lookup: host_port_, then host:port, then _default; reloaded when a file changes; a broken file stays local', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'skiffd-certsd-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  assert.deepEqual(hostDirCandidates(root, 'r.example:5000'), [join(root, 'r.example_5000_'), join(root, 'r.example:5000'), join(root, '_default')]);
  assert.deepEqual(hostDirCandidates(root, 'r.example'), [join(root, 'r.example'), join(root, '_default')]);

  const settings = { configPath: root, mirrors: { 'r.example:5000': { endpoints: ['http://old-mirror:5000'] } }, configs: {} };
  // No directory: the config file's mirrors.
  assert.deepEqual(
    registryEndpoints('r.example:5000', settings).endpoints.map((e) => e.host),
    ['old-mirror:5000', 'r.example:5000'],
  );
  // _default serves every host without its own directory.
  write(root, '_default', '[host."http://default-mirror:1"]\n');
  assert.deepEqual(
    lookupHostsDir(root, 'other.example')?.endpoints.map((e) => e.base),
    ['//default-mirror:1/v2', '//other.example/v2'],
  );
  write(root, 'r.example:5000', 'server = "http://r.example:5000"\n[host."http://colon-mirror:1"]\n');
  const viaColon = registryEndpoints('r.example:5000', settings);
  assert.deepEqual(
    viaColon.endpoints.map((e) => e.host),
    ['colon-mirror:1', 'r.example:5000'],
  );
  assert.equal(viaColon.shadowedMirrors, true, 'the hosts.toml wins over registry.mirrors');
  write(root, 'r.example_5000_', '[host."http://underscore-mirror:1"]\n');
  assert.equal(lookupHostsDir(root, 'r.example:5000')?.endpoints[0].host, 'underscore-mirror:1');

  // Changed in place (same size and all): the next lookup sees it.
  write(root, 'r.example_5000_', '[host."http://underscore-mirror:2"]\n');
  assert.equal(lookupHostsDir(root, 'r.example:5000')?.endpoints[0].host, 'underscore-mirror:2');

  // Broken: this host fails with the file and line; others are not affected; fixed: fine again.
  write(root, 'r.example_5000_', '[host."http://underscore-mirror:2"\n');
  assert.throws(
    () => lookupHostsDir(root, 'r.example:5000'),
    (err: unknown) => isImageError(err) && err.message.includes(join(root, 'r.example_5000_', 'hosts.toml')) && /invalid TOML at line 1/.test(err.message),
  );
  assert.equal(lookupHostsDir(root, 'other.example')?.endpoints[0].host, 'default-mirror:1');
  write(root, 'r.example_5000_', '[host."http://underscore-mirror:3"]\n');
  assert.equal(lookupHostsDir(root, 'r.example:5000')?.endpoints[0].host, 'underscore-mirror:3');

  // A directory with no hosts.toml: Docker's certificate files for the default server.
  mkdirSync(join(root, 'certs.example'));
  writeFileSync(join(root, 'certs.example', 'ca.crt'), '');
  writeFileSync(join(root, 'certs.example', 'client.cert'), '');
  writeFileSync(join(root, 'certs.example', 'client.key'), '');
  assert.deepEqual(lookupHostsDir(root, 'certs.example')?.endpoints, [
    {
      base: '//certs.example/v2',
      host: 'certs.example',
      scheme: 'https',
      insecure: false,
      isMirror: false,
      tls: {
        caFiles: [join(root, 'certs.example', 'ca.crt')],
        clientCerts: [{ certFile: join(root, 'certs.example', 'client.cert'), keyFile: join(root, 'certs.example', 'client.key') }],
      },
    },
  ]);
});

interface Recorder {
  host: string;
  requests: { method: string; path: string; headers: http.IncomingHttpHeaders }[];
  stop(): Promise<void>;
}

/** A pass-through HTTP mirror in front of a registry that records what it was asked. */
async function recordingMirror(target: string): Promise<Recorder> {
  const requests: Recorder['requests'] = [];
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers });
    const up = http.request(new URL(req.url ?? '/', target), { method: req.method, headers: { ...req.headers, host: new URL(target).host } }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const host = `127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    host,
    requests,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

test('pulls follow the certs.d directory: down mirror, answering mirror, upstream; capabilities, headers, reload, broken file', async (t) => {
  if (!needs(t, { root: true, commands: ['docker-registry'] })) return;
  const fx = await startImageFixtures();
  t.after(() => fx.registry.stop());
  const R = fx.registry.host;
  const mirrorA = await recordingMirror(fx.registry.url);
  const mirrorB = await recordingMirror(fx.registry.url);
  t.after(() => Promise.all([mirrorA.stop(), mirrorB.stop()]));
  const dir = mkdtempSync(join(tmpdir(), 'skiffd-hosts-'));
  t.after(() => removeDaemonDir(dir));
  const certs = join(dir, 'certs.d');
  // registry.k8s.io itself is out of reach here: every pull below is served by a mirror or a server on loopback.
  write(
    certs,
    'registry.k8s.io',
    `server = "https://registry.k8s.io"
[host."http://127.0.0.1:1"]
  capabilities = ["pull", "resolve"]
[host."http://${mirrorA.host}"]
  capabilities = ["pull", "resolve"]
  header = { "X-Skiff-Mirror" = ["a", "b"] }
`,
  );
  const config = ['[registry.mirrors."registry.k8s.io"]', 'endpoints = ["http://127.0.0.1:2"]', '[registry]', `config_path = ${JSON.stringify(certs)}`].join(
    '\n',
  );
  mkdirSync(join(dir, 'd'));
  const d: SkiffdHandle = await startSkiffd({ dir: join(dir, 'd'), config });
  t.after(() => d.cleanup());

  await t.test('the down mirror is skipped, the next one serves, with its headers; registry.mirrors is ignored with a warning', async () => {
    const res = await d.images.pullImage({ image: { image: 'registry.k8s.io/pause:3.9' } });
    assert.equal(res.imageRef, fx.busybox.config.digest);
    const manifest = mirrorA.requests.find((r) => r.path === '/v2/pause/manifests/3.9?ns=registry.k8s.io');
    assert.ok(manifest, `mirror A was asked for the manifest: ${JSON.stringify(mirrorA.requests.map((r) => r.path))}`);
    assert.equal(manifest.headers['x-skiff-mirror'], 'a, b');
    assert.match(d.logs(), /registry\.mirrors\.\\?"registry\.k8s\.io\\?" is ignored: .*registry\.k8s\.io\/hosts\.toml decides/);
    assert.match(d.logs(), /registry\.mirrors and the TLS settings of registry\.configs are deprecated: write .*\/HOST\/hosts\.toml/);
  });

  await t.test('changed at run time: the next pull uses the new file (both mirrors down: the server answers)', async () => {
    write(certs, 'registry.k8s.io', `server = "http://${R}"\n[host."http://127.0.0.1:1"]\n[host."http://127.0.0.1:3"]\n`);
    await d.images.removeImage({ image: { image: 'registry.k8s.io/pause:3.9' } });
    const before = mirrorA.requests.length;
    const res = await d.images.pullImage({ image: { image: 'registry.k8s.io/pause:3.9' } });
    assert.equal(res.imageRef, fx.busybox.config.digest);
    assert.equal(mirrorA.requests.length, before, 'mirror A is no longer named');
  });

  await t.test('a pull-only mirror serves content but is not asked to resolve the tag', async () => {
    write(certs, R, `server = "http://${R}"\n[host."http://${mirrorB.host}"]\n  capabilities = ["pull"]\n`);
    const res = await d.images.pullImage({ image: { image: `${R}/test/app:oci` } });
    assert.equal(res.imageRef, fx.oci.config.digest);
    const paths = mirrorB.requests.map((r) => r.path);
    assert.ok(!paths.some((p) => p.startsWith('/v2/test/app/manifests/oci')), `the tag went to the server, not the mirror: ${JSON.stringify(paths)}`);
    assert.ok(
      paths.some((p) => p.startsWith('/v2/test/app/blobs/')),
      `blobs came from the mirror: ${JSON.stringify(paths)}`,
    );
  });

  await t.test('a broken hosts.toml fails that registry with the file and the TOML error; other registries pull; the daemon lives', async () => {
    write(certs, 'registry.k8s.io', 'server = "http://broken\n');
    await d.images.removeImage({ image: { image: 'registry.k8s.io/pause:3.9' } });
    await assert.rejects(d.images.pullImage({ image: { image: 'registry.k8s.io/pause:3.9' } }), (err: Error) => {
      assert.match(err.message, new RegExp(`registry hosts file ${join(certs, 'registry.k8s.io', 'hosts.toml')}: invalid TOML at line 1`));
      return true;
    });
    const res = await d.images.pullImage({ image: { image: `${R}/test/app:docker` } });
    assert.equal(res.imageRef, fx.docker.config.digest);
    write(certs, 'registry.k8s.io', `server = "http://${R}"\n`);
    assert.equal((await d.images.pullImage({ image: { image: 'registry.k8s.io/pause:3.9' } })).imageRef, fx.busybox.config.digest);
  });
});

test('containerd 2.1 and skiffd pull through the same certs.d directory', async (t) => {
  if (!needs(t, { root: true, commands: ['docker-registry', 'runc'] })) return;
  const missing = kitMissing();
  if (missing) return unavailable(t, missing);
  const { containerdBinary, startContainerdPeer } = await import('../../bench/cri/containerd-peer.ts');
  if (!containerdBinary('2.1')) return unavailable(t, `containerd 2.1 is not available: ${join(kitDir, 'containerd2.sh')} brings it`);
  const registry = await startKitRegistry(await freePort());
  t.after(() => registry.stop());
  const dir = mkdtempSync(join(tmpdir(), 'skiffd-ctd2-hosts-'));
  t.after(() => removeDaemonDir(dir));
  const certs = join(dir, 'certs.d');
  write(
    certs,
    'registry.k8s.io',
    `server = "https://registry.k8s.io"

[host."http://127.0.0.1:1"]
  capabilities = ["pull", "resolve"]

[host."${registry.url}"]
  capabilities = ["pull", "resolve"]
`,
  );
  const image = 'registry.k8s.io/pause:3.9';
  const crictl = (socket: string) =>
    runCommand(crictlPath('1.36'), [`--runtime-endpoint=unix://${socket}`, `--image-endpoint=unix://${socket}`, '--timeout=60s', 'pull', image], {
      timeoutMs: 120_000,
    });

  const peer = await startContainerdPeer(join(dir, 'containerd'), `127.0.0.1:${registry.port}`, image, {}, '2.1', { certsDir: certs });
  t.after(() => peer.teardown());
  const byContainerd = await crictl(peer.socket);
  assert.equal(byContainerd.code, 0, `containerd 2.1 pulled ${image}: ${byContainerd.stderr}${byContainerd.stdout}\n${peer.logs().slice(-2000)}`);

  mkdirSync(join(dir, 'skiffd'));
  const d = await startSkiffd({ dir: join(dir, 'skiffd'), config: `[registry]\nconfig_path = ${JSON.stringify(certs)}\n` });
  t.after(() => d.cleanup());
  const bySkiffd = await crictl(d.socket);
  assert.equal(bySkiffd.code, 0, `skiffd pulled ${image}: ${bySkiffd.stderr}${bySkiffd.stdout}\n${d.logs().slice(-2000)}`);

  // docker-registry's access log: one line per request, ending with the client's User-Agent.
  const manifestGets = registry
    .log()
    .split('\n')
    .filter((l) => /"(GET|HEAD) \/v2\/pause\/manifests\/3\.9\?ns=registry\.k8s\.io /.test(l));
  assert.ok(
    manifestGets.some((l) => /containerd\/(v)?2\.1/.test(l)),
    `containerd resolved the tag at the mirror:\n${manifestGets.join('\n')}`,
  );
  assert.ok(
    manifestGets.some((l) => /"skiffd"/.test(l)),
    `skiffd resolved the tag at the mirror:\n${manifestGets.join('\n')}`,
  );
});
