// The pure parts of the image library: reference normalisation, WWW-Authenticate parsing, platform
// choice in an index, the image user, mirror endpoint order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatReference, parseReference } from '../../node/skiffd/images/reference.ts';
import { parseChallenges } from '../../node/skiffd/images/auth.ts';
import { pickPlatform, type HostPlatform } from '../../node/skiffd/images/platform.ts';
import { imageUser } from '../../node/skiffd/images/user.ts';
import { credentialsFrom, endpointsFor } from '../../node/skiffd/images/registry-config.ts';
import type { Descriptor } from '../../node/skiffd/images/manifest.ts';

const D = 'sha256:' + 'a'.repeat(64);

test('references normalise like Docker: docker.io/library, :latest, hosts with ports, digests', () => {
  const cases: [string, string][] = [
    ['busybox', 'docker.io/library/busybox:latest'],
    ['busybox:1.36', 'docker.io/library/busybox:1.36'],
    ['library/busybox', 'docker.io/library/busybox:latest'],
    ['docker.io/busybox', 'docker.io/library/busybox:latest'],
    ['index.docker.io/library/busybox:1', 'docker.io/library/busybox:1'],
    ['user/app', 'docker.io/user/app:latest'],
    ['registry.k8s.io/pause:3.9', 'registry.k8s.io/pause:3.9'],
    ['127.0.0.1:5000/a/b/c', '127.0.0.1:5000/a/b/c:latest'],
    ['localhost/app:v1', 'localhost/app:v1'],
    [`busybox@${D}`, `docker.io/library/busybox@${D}`],
    [`quay.io/x/y:tag@${D}`, `quay.io/x/y:tag@${D}`],
  ];
  for (const [input, want] of cases) assert.equal(formatReference(parseReference(input)), want, input);
  for (const bad of ['', 'UPPER/case', 'a//b', 'busybox:', 'busybox@sha256:short', `busybox@sha512:${'a'.repeat(128)}`, 'a/-b', 'host:99999999999/x:y:z']) {
    assert.throws(
      () => parseReference(bad),
      (e: Error & { kind?: string }) => e.kind === 'invalid-argument',
      bad,
    );
  }
});

test('WWW-Authenticate challenges: Bearer realm/service/scope with quoted commas, Basic', () => {
  const [bearer] = parseChallenges('Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push"');
  assert.deepEqual(bearer, {
    scheme: 'bearer',
    params: { realm: 'https://auth.example/token', service: 'registry.example', scope: 'repository:a/b:pull,push' },
  });
  assert.deepEqual(parseChallenges('Basic realm="Registry Realm"'), [{ scheme: 'basic', params: { realm: 'Registry Realm' } }]);
  assert.deepEqual(parseChallenges(undefined), []);
});

test('platform choice: exact OS/arch, best acceptable variant, nothing for a foreign-only index', () => {
  const d = (architecture: string, variant?: string): Descriptor => ({ mediaType: '', digest: D, size: 1, platform: { os: 'linux', architecture, variant } });
  const arm64: HostPlatform = { os: 'linux', architecture: 'arm64', variant: 'v8', acceptedVariants: ['v8', ''] };
  const armv7: HostPlatform = { os: 'linux', architecture: 'arm', variant: 'v7', acceptedVariants: ['v7', 'v6', 'v5', ''] };
  const amd64: HostPlatform = { os: 'linux', architecture: 'amd64', acceptedVariants: ['v3', 'v2', '', 'v1'] };
  const list = [d('amd64'), d('arm', 'v6'), d('arm', 'v7'), d('arm64', 'v8'), d('s390x')];
  assert.equal(pickPlatform(list, arm64), list[3]);
  assert.equal(pickPlatform(list, armv7), list[2]);
  assert.equal(pickPlatform([d('arm', 'v6'), d('arm', 'v8')], armv7)?.platform?.variant, 'v6');
  assert.equal(pickPlatform(list, amd64), list[0]);
  assert.equal(pickPlatform([d('amd64', 'v4'), d('amd64', 'v2'), d('amd64')], amd64)?.platform?.variant, 'v2');
  assert.equal(pickPlatform([d('arm64'), { ...d('amd64'), platform: { os: 'windows', architecture: 'amd64' } }], amd64), undefined);
  const bare: Descriptor = { mediaType: '', digest: D, size: 1 };
  assert.equal(pickPlatform([bare], amd64), bare, 'a single unlabelled entry is taken');
  assert.equal(pickPlatform([bare, d('arm64')], amd64), undefined);
});

test('image user: numeric is a uid, a name is a username, the group part is ignored', () => {
  assert.deepEqual(imageUser(''), {});
  assert.deepEqual(imageUser(undefined), {});
  assert.deepEqual(imageUser('0'), { uid: 0 });
  assert.deepEqual(imageUser('1000:1000'), { uid: 1000 });
  assert.deepEqual(imageUser('app'), { username: 'app' });
  assert.deepEqual(imageUser('app:staff'), { username: 'app' });
});

test('mirrors are tried in order before the registry; docker.io is served by registry-1.docker.io', () => {
  const settings = {
    configPath: '',
    mirrors: { 'docker.io': { endpoints: ['http://127.0.0.1:5000', 'https://mirror.example/v2', 'mirror2.example:8443'] } },
    configs: { 'mirror2.example:8443': { insecure: true } },
  };
  const eps = endpointsFor('docker.io', settings);
  assert.deepEqual(
    eps.map((e) => [e.scheme, e.base, e.insecure, e.isMirror]),
    [
      ['http', '//127.0.0.1:5000/v2', false, true],
      ['https', '//mirror.example/v2', false, true],
      [undefined, '//mirror2.example:8443/v2', true, true],
      [undefined, '//registry-1.docker.io/v2', false, false],
    ],
  );
  assert.deepEqual(credentialsFrom({ auth: Buffer.from('u:p:q').toString('base64') }), { username: 'u', password: 'p:q' });
  assert.equal(credentialsFrom({}), undefined);
});
