// Private registries as companies run them, through the daemon's gRPC PullImage: a CA of their own
// (from the node's store or named per host), client certificates, skipped verification, and TLS
// failures that say what failed and what to configure; then an HTTP proxy (tinyproxy) from the
// daemon's environment, with NO_PROXY exceptions. Certificates are made here with openssl. Test
// traffic stays on loopback or goes into a network namespace the test makes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Status } from 'nice-grpc';
import { grpcError } from '../support/grpc.ts';
import { needs } from '../support/prereq.ts';
import { createVethNamespace } from '../support/netns.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { startRegistry, type RegistryTls, type RunningRegistry } from '../support/registry.ts';
import { issue, makeCa } from '../support/pki.ts';
import { startTinyproxy } from '../support/tinyproxy.ts';
import { buildImage, buildTar, busyboxBaseEntries, Pusher } from '../support/image-builder.ts';
import { proxyFor } from '../../node/skiffd/images/transport/proxy.ts';
import { discard, request } from '../../node/skiffd/images/http.ts';

/** The daemon must not inherit a proxy from whoever runs the tests. */
const NO_PROXY_ENV = { HTTPS_PROXY: '', https_proxy: '', HTTP_PROXY: '', http_proxy: '', NO_PROXY: '', no_proxy: '' };

const tlsTable = (host: string, lines: string[]) => [`[registry.configs."${host}".tls]`, ...lines].join('\n');

test('private registries: trust, client certificates, TLS errors in words', async (t) => {
  if (!needs(t, { root: true, commands: ['docker-registry', 'openssl', 'setfattr'] })) return;
  const dir = mkdtempSync(join(tmpdir(), 'skiff-private-registry-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const ca = makeCa(dir);
  const server = issue(ca, dir, 'server', ['127.0.0.1', 'localhost']);
  // Valid for no time at all: expired by the time it is used.
  const expired = issue(ca, dir, 'expired', ['127.0.0.1'], { expired: true });
  const wrongName = issue(ca, dir, 'wrong-name', ['registry.wrong.example']);
  const client = issue(ca, dir, 'client', ['skiffd-node'], { client: true });
  // A second CA, known only through the node's store (what update-ca-certificates writes).
  const storeDir = join(dir, 'store');
  mkdirSync(join(storeDir, 'certs'), { recursive: true });
  const storeCa = makeCa(storeDir, 'skiff store CA');
  const storeServer = issue(storeCa, storeDir, 'server', ['127.0.0.1']);
  writeFileSync(join(storeDir, 'ca-certificates.crt'), readFileSync(storeCa.certPath));

  const storage = join(dir, 'storage');
  const open = await startRegistry({ storageDir: storage });
  t.after(() => open.stop());
  const image = buildImage({ format: 'oci', layers: [await buildTar(busyboxBaseEntries())], label: 'private-registry' });
  await new Pusher(open.url).image('team/app', image, 'v1');

  const registries: RunningRegistry[] = [];
  const serve = async (tls: RegistryTls, address?: string) => {
    const r = await startRegistry({ storageDir: storage, tls, address });
    registries.push(r);
    return r;
  };
  t.after(() => Promise.all(registries.map((r) => r.stop())));
  const withCa = await serve(server);
  const unknownCa = await serve(server);
  const skipVerify = await serve(server);
  const fromStore = await serve(storeServer);
  const mtlsNoCert = await serve({ ...server, clientCas: [ca.certPath] });
  const mtlsCert = await serve({ ...server, clientCas: [ca.certPath] });
  const mtlsKeyInCert = await serve({ ...server, clientCas: [ca.certPath] });
  const expiredReg = await serve(expired);
  const wrongNameReg = await serve(wrongName);
  const missingCa = await serve(server);
  const hostsCa = await serve(server);
  const hostsNoCa = await serve(server);
  // containerd's rule for a client certificate without key_file: its key is in the same PEM file.
  const combined = join(dir, 'client-combined.pem');
  writeFileSync(combined, Buffer.concat([readFileSync(client.certPath), readFileSync(client.keyPath)]));

  // containerd 2's certs.d: the CA named in hosts.toml, relative to the file; the other host's file names none.
  const certs = join(dir, 'certs.d');
  for (const [reg, caLine] of [
    [hostsCa, 'ca = "ca.pem"'],
    [hostsNoCa, ''],
  ] as const) {
    mkdirSync(join(certs, reg.host), { recursive: true });
    writeFileSync(join(certs, reg.host, 'hosts.toml'), `server = "https://${reg.host}"\n${caLine}\n`);
  }
  copyFileSync(ca.certPath, join(certs, hostsCa.host, 'ca.pem'));

  const config = [
    '[registry]',
    `config_path = ${JSON.stringify(certs)}`,
    tlsTable(withCa.host, [`ca_file = "${ca.certPath}"`]),
    tlsTable(skipVerify.host, ['insecure_skip_verify = true']),
    tlsTable(mtlsNoCert.host, [`ca_file = "${ca.certPath}"`]),
    tlsTable(mtlsCert.host, [`ca_file = "${ca.certPath}"`, `cert_file = "${client.certPath}"`, `key_file = "${client.keyPath}"`]),
    tlsTable(expiredReg.host, [`ca_file = "${ca.certPath}"`]),
    tlsTable(wrongNameReg.host, [`ca_file = "${ca.certPath}"`]),
    tlsTable(missingCa.host, [`ca_file = "${join(dir, 'no-such-ca.pem')}"`]),
  ].join('\n');
  const d = await startSkiffd({
    config,
    // The node's store as OpenSSL finds it: this bundle and an empty directory.
    env: { ...NO_PROXY_ENV, SSL_CERT_FILE: join(storeDir, 'ca-certificates.crt'), SSL_CERT_DIR: join(storeDir, 'certs'), NODE_EXTRA_CA_CERTS: '' },
  });
  t.after(() => d.cleanup());
  const pull = (host: string) => d.images.pullImage({ image: { image: `${host}/team/app:v1` } });
  const pullFails = async (host: string) => {
    const err = await grpcError(pull(host));
    assert.ok(err.details.includes(host), `names the registry ${host}: ${err.details}`);
    return err;
  };

  await t.test('a registry whose CA is named for its host (ca_file) is pulled from', async () => {
    assert.equal((await pull(withCa.host)).imageRef, image.config.digest);
  });

  await t.test('a registry whose CA is in the node store is pulled from with no setting', async () => {
    assert.equal((await pull(fromStore.host)).imageRef, image.config.digest);
  });

  await t.test('without its CA: UNAVAILABLE, "unknown authority", naming the host and the ca_file setting', async () => {
    const err = await pullFails(unknownCa.host);
    assert.equal(err.code, Status.UNAVAILABLE, err.details);
    assert.match(err.details, /unknown authority/, err.details);
    assert.ok(err.details.includes(`[registry.configs."${unknownCa.host}".tls]`), err.details);
    assert.match(err.details, /ca_file/, err.details);
  });

  await t.test('a CA named only in the host\'s hosts.toml (ca = "ca.pem", beside the file): pulled', async () => {
    assert.equal((await pull(hostsCa.host)).imageRef, image.config.digest);
  });

  await t.test('a hosts.toml naming no CA: "unknown authority", pointing at ca in hosts.toml', async () => {
    const err = await pullFails(hostsNoCa.host);
    assert.equal(err.code, Status.UNAVAILABLE, err.details);
    assert.match(err.details, /unknown authority/, err.details);
    assert.match(err.details, /ca in its hosts\.toml/, err.details);
  });

  await t.test('insecure_skip_verify = true pulls without verifying', async () => {
    assert.equal((await pull(skipVerify.host)).imageRef, image.config.digest);
  });

  await t.test('a registry requiring a client certificate: refused without one, with words saying so', async () => {
    const err = await pullFails(mtlsNoCert.host);
    assert.equal(err.code, Status.UNAVAILABLE, err.details);
    assert.match(err.details, /requires a client certificate/, err.details);
    assert.match(err.details, /cert_file/, err.details);
  });

  await t.test('the same with cert_file and key_file: pulled', async () => {
    assert.equal((await pull(mtlsCert.host)).imageRef, image.config.digest);
  });

  await t.test('an expired certificate: its own message', async () => {
    const err = await pullFails(expiredReg.host);
    assert.match(err.details, /TLS certificate has expired \(CERT_HAS_EXPIRED\): the registry must renew/, err.details);
  });

  await t.test('a certificate for another name: its own message', async () => {
    const err = await pullFails(wrongNameReg.host);
    assert.match(err.details, /not valid for the name 127\.0\.0\.1/, err.details);
  });

  await t.test('a ca_file that does not exist: FAILED_PRECONDITION naming the file', async () => {
    const err = await pullFails(missingCa.host);
    assert.equal(err.code, Status.FAILED_PRECONDITION, err.details);
    assert.ok(err.details.includes(join(dir, 'no-such-ca.pem')), err.details);
  });

  await t.test('a client certificate without a key file (as hosts.toml allows): the key is read from the same PEM file', async () => {
    // The endpoint settings hosts.toml fills, straight into the transport: the old table requires key_file.
    const res = await request({ url: `https://${mtlsKeyInCert.host}/v2/`, tls: { caFiles: [ca.certPath], clientCerts: [{ certFile: combined }] }, env: {} });
    discard(res);
    assert.equal(res.status, 200);
  });
});

test('private registries: through an HTTP proxy from the environment, NO_PROXY exceptions go direct', async (t) => {
  if (!needs(t, { root: true, commands: ['docker-registry', 'openssl', 'tinyproxy', 'setfattr', 'ip'] })) return;
  // Like Go's net/http, skiffd never proxies loopback: the registries behind the proxy listen in a
  // network namespace of this test's own, reached over a veth pair; skiffd talks to tinyproxy on
  // 127.0.0.1, and only tinyproxy (or skiffd, for a NO_PROXY host) to the namespace's address.
  const ns = await createVethNamespace();
  t.after(() => ns.cleanup());
  const address = ns.address;
  const dir = mkdtempSync(join(tmpdir(), 'skiff-proxy-registry-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const ca = makeCa(dir);
  const server = issue(ca, dir, 'server', [address]);
  const storage = join(dir, 'storage');
  const open = await startRegistry({ storageDir: storage });
  t.after(() => open.stop());
  const image = buildImage({ format: 'oci', layers: [await buildTar(busyboxBaseEntries())], label: 'behind-proxy' });
  await new Pusher(open.url).image('team/app', image, 'v1');
  const proxied = await startRegistry({ storageDir: storage, tls: { ...server }, address, netns: ns.name });
  t.after(() => proxied.stop());
  const direct = await startRegistry({ storageDir: storage, tls: { ...server }, address, netns: ns.name });
  t.after(() => direct.stop());
  const plain = await startRegistry({ storageDir: storage, address, netns: ns.name });
  t.after(() => plain.stop());
  const portOf = (r: RunningRegistry) => Number(r.host.split(':')[1]);
  const proxy = await startTinyproxy({ connectPorts: [portOf(proxied), portOf(direct)] });
  t.after(() => proxy.stop());

  const config = [
    tlsTable(proxied.host, [`ca_file = "${ca.certPath}"`]),
    tlsTable(direct.host, [`ca_file = "${ca.certPath}"`]),
    `[registry.mirrors."${plain.host}"]`,
    `endpoints = ["http://${plain.host}"]`,
  ].join('\n');
  const d = await startSkiffd({
    config,
    env: { ...NO_PROXY_ENV, HTTPS_PROXY: proxy.url, HTTP_PROXY: proxy.url, NO_PROXY: `example.invalid, ${direct.host}` },
  });
  t.after(() => d.cleanup());
  const pull = (host: string) => d.images.pullImage({ image: { image: `${host}/team/app:v1` } });

  await t.test('HTTPS: pulled through a CONNECT tunnel, the registry verified against its CA', async () => {
    assert.equal((await pull(proxied.host)).imageRef, image.config.digest);
    assert.ok(
      proxy.requests().some((r) => r.startsWith(`CONNECT ${proxied.host} `)),
      `tinyproxy logged the CONNECT: ${JSON.stringify(proxy.requests())}`,
    );
  });

  await t.test('plain HTTP: pulled by absolute URI through the proxy', async () => {
    assert.equal((await pull(plain.host)).imageRef, image.config.digest);
    assert.ok(
      proxy.requests().some((r) => r.startsWith(`GET http://${plain.host}/v2/team/app/manifests/v1 `)),
      JSON.stringify(proxy.requests()),
    );
  });

  await t.test('a host in NO_PROXY is reached directly: the proxy sees nothing of it', async () => {
    assert.equal((await pull(direct.host)).imageRef, image.config.digest);
    const seen = proxy.requests().filter((r) => r.includes(direct.host));
    assert.deepEqual(seen, []);
  });
});

test('proxy choice per URL follows Go net/http', () => {
  const env = (e: Record<string, string>) => e as NodeJS.ProcessEnv;
  const via = (url: string, e: Record<string, string>) => proxyFor(new URL(url), env(e))?.host;
  const P = { HTTPS_PROXY: 'proxy.corp:3128' };
  assert.equal(via('https://registry.corp/v2/', P), 'proxy.corp:3128', 'no scheme: an http proxy at host:port');
  assert.equal(via('https://registry.corp/v2/', { HTTPS_PROXY: 'http://upper:1', https_proxy: 'http://lower:1' }), 'upper:1', 'upper case first');
  assert.equal(via('https://registry.corp/v2/', { HTTPS_PROXY: '', https_proxy: 'http://lower:1' }), 'lower:1', 'empty is unset');
  assert.equal(via('https://registry.corp/v2/', { HTTP_PROXY: 'http://p:1' }), undefined, 'https never falls back to HTTP_PROXY');
  assert.equal(via('http://registry.corp/v2/', { HTTP_PROXY: 'http://p:1' }), 'p:1');
  for (const host of ['localhost:5000', '127.0.0.1:5000', '127.3.2.1', '[::1]:5000'])
    assert.equal(via(`https://${host}/`, P), undefined, `${host}: loopback is direct`);
  const no = (NO_PROXY: string, url: string) => via(url, { ...P, NO_PROXY }) === undefined;
  assert.ok(no('*', 'https://anything.example/'));
  assert.ok(no('corp', 'https://registry.corp/') && no('corp', 'https://corp/'), 'a domain matches itself and its subdomains');
  assert.ok(no('.corp', 'https://registry.corp/') && !no('.corp', 'https://corp/'), 'a leading dot matches subdomains only');
  assert.ok(no('*.corp', 'https://a.b.corp/'));
  assert.ok(!no('registry.corp', 'https://myregistry.corp/'), 'a suffix must end at a dot');
  assert.ok(no('registry.corp:5000', 'https://registry.corp:5000/') && !no('registry.corp:5000', 'https://registry.corp/'), 'host:port');
  assert.ok(no('10.0.0.0/8', 'https://10.1.2.3:5000/') && !no('10.0.0.0/8', 'https://11.1.2.3/'), 'CIDR');
  assert.ok(no('192.0.2.7', 'https://192.0.2.7:5000/') && no('fd00::/8', 'https://[fd00::1]/'), 'IP and IPv6 CIDR');
  assert.ok(no(' other.example , Registry.Corp ', 'https://registry.corp/'), 'trimmed, case-insensitive');
  const auth = proxyFor(new URL('https://r.corp/'), env({ HTTPS_PROXY: 'http://us%40er:p%3Ass@proxy:1' }));
  assert.equal(auth?.username, 'us%40er');
});
